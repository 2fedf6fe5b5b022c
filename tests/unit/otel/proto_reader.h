#pragma once
// A protobuf wire-format reader for the tests: the fields of one message, in order, so a test
// can walk an encoded OTLP request as a collector would and check every field it relies on.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace toolbridge::otel::testing
