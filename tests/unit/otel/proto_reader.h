#pragma once
// A protobuf wire-format reader for the tests: the fields of one message, in order, so a test
// can walk an encoded OTLP request as a collector would and check every field it relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "otel/span.h"

namespace toolbridge::otel::testing {

struct Field {
  std::uint32_t number = 0;
  int wire = 0;
  std::uint64_t value = 0;  // varint, fixed64, fixed32
  std::string bytes;        // length-delimited
};

// Empty (and a test failure) if the bytes are not a well-formed message.
inline std::vector<Field> fields(std::string_view in) {
  std::vector<Field> out;
  std::size_t i = 0;
  auto varint = [&](std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && i < in.size(); shift += 7) {
      const auto b = static_cast<std::uint8_t>(in[i++]);
      v |= std::uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (i < in.size()) {
    Field f;
    std::uint64_t tag = 0;
    if (!varint(tag)) break;
    f.number = static_cast<std::uint32_t>(tag >> 3);
    f.wire = static_cast<int>(tag & 7);
    if (f.wire == 0) {
      if (!varint(f.value)) break;
    } else if (f.wire == 1 || f.wire == 5) {
      const std::size_t n = f.wire == 1 ? 8 : 4;
      if (i + n > in.size()) break;
      for (std::size_t k = 0; k < n; ++k)
        f.value |= std::uint64_t{static_cast<std::uint8_t>(in[i + k])} << (8 * k);
      i += n;
    } else if (f.wire == 2) {
      std::uint64_t n = 0;
      if (!varint(n) || n > in.size() - i) break;
      f.bytes = std::string(in.substr(i, n));
      i += n;
    } else {
      break;
    }
    out.push_back(std::move(f));
  }
  if (i != in.size()) {
    ADD_FAILURE() << "malformed protobuf at byte " << i << " of " << in.size();
    return {};
  }
  return out;
}

inline std::vector<Field> all(const std::vector<Field>& fs, std::uint32_t number) {
  std::vector<Field> out;
  for (const Field& f : fs)
    if (f.number == number) out.push_back(f);
  return out;
}

inline Field one(const std::vector<Field>& fs, std::uint32_t number) {
  auto found = all(fs, number);
  if (found.size() != 1) {
    ADD_FAILURE() << "field " << number << " appears " << found.size() << " times";
    return {};
  }
  return found.front();
}

// Attribute keys are literals in span objects: read ones live as long as the test program.
inline std::string_view intern(const std::string& key) {
  static std::set<std::string> keys;
  return *keys.insert(key).first;
}

// The spans of concatenated ScopeSpans `spans` fields (what a SpanWriter writes in protobuf),
// read back into span objects: ids, name, kind, times, attributes and status.
inline std::vector<Span> read_spans(std::string_view encoded) {
  std::vector<Span> out;
  for (const Field& field : fields(encoded)) {
    EXPECT_EQ(field.number, 2u);  // ScopeSpans.spans
    Span& s = out.emplace_back();
    for (const Field& f : fields(field.bytes)) {
      switch (f.number) {
        case 1:
          std::memcpy(s.trace_id.data(), f.bytes.data(),
                      std::min(f.bytes.size(), s.trace_id.size()));
          break;
        case 2:
          std::memcpy(s.span_id.data(), f.bytes.data(), std::min(f.bytes.size(), s.span_id.size()));
          break;
        case 4:
          std::memcpy(s.parent_id.data(), f.bytes.data(),
                      std::min(f.bytes.size(), s.parent_id.size()));
          break;
        case 5:
          s.name = f.bytes;
          break;
        case 6:
          s.kind = static_cast<SpanKind>(f.value);
          break;
        case 7:
          s.start_ns = f.value;
          break;
        case 8:
          s.end_ns = f.value;
          break;
        case 9: {  // KeyValue {key = 1, value = 2: AnyValue {string 1, bool 2, int 3, double 4}}
          const auto kv = fields(f.bytes);
          const std::string key = one(kv, 1).bytes;
          const auto value = fields(one(kv, 2).bytes);
          EXPECT_EQ(value.size(), 1u) << key;
          const Field any = value.empty() ? Field{} : value.front();
          const std::string_view k = intern(key);
          if (any.number == 1) s.add(k, any.bytes);
          if (any.number == 2) s.add(k, any.value != 0);
          if (any.number == 3) s.add(k, static_cast<std::int64_t>(any.value));
          if (any.number == 4) {
            double d;
            std::memcpy(&d, &any.value, sizeof d);
            s.add(k, d);
          }
          break;
        }
        case 15: {  // Status {message = 2, code = 3}
          const auto st = fields(f.bytes);
          for (const Field& x : st) {
            if (x.number == 2) s.status_message = x.bytes;
            if (x.number == 3) s.status = static_cast<StatusCode>(x.value);
          }
          break;
        }
        default:
          ADD_FAILURE() << "unexpected span field " << f.number;
      }
    }
  }
  return out;
}

}  // namespace toolbridge::otel::testing
