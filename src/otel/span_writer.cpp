#include "otel/span_writer.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "json/envelope.h"
#include "json/utf8.h"
#include "otel/protobuf.h"

namespace toolbridge::otel {

namespace {

namespace pb = protobuf;

// Field numbers of opentelemetry/proto/trace/v1 Span and common/v1 KeyValue and AnyValue.
enum : std::uint32_t {
  kScopeSpansSpans = 2,
  kSpanTraceId = 1,
  kSpanSpanId = 2,
  kSpanParentSpanId = 4,
  kSpanName = 5,
  kSpanKind = 6,
  kSpanStart = 7,
  kSpanEnd = 8,
  kSpanAttributes = 9,
  kSpanStatus = 15,
  kStatusMessage = 2,
  kStatusCode = 3,
  kKeyValueKey = 1,
  kKeyValueValue = 2,
  kAnyString = 1,
  kAnyBool = 2,
  kAnyInt = 3,
  kAnyDouble = 4,
};

// The bytes of a varint, without writing it.
std::size_t varint_size(std::uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

std::string_view bytes_of(const auto& id) {
  return {reinterpret_cast<const char*>(id.data()), id.size()};
}

// Fields written through a pointer into room made beforehand: the sizes are known before the
// first byte, and one resize of the output per attribute costs less than an append per varint
// (which cost more than the encoding itself).
class Cursor {
 public:
  explicit Cursor(char* p) : p_(p) {}
  char* end() const { return p_; }
  void varint(std::uint64_t v) {
    while (v >= 0x80) {
      *p_++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p_++ = static_cast<char>(v);
  }
  void tag(std::uint32_t field, pb::Wire wire) {
    varint((std::uint64_t{field} << 3) | static_cast<std::uint8_t>(wire));
  }
  void raw(std::string_view b) {
    if (b.empty()) return;  // an empty view's data may be null, which memcpy must not get
    std::memcpy(p_, b.data(), b.size());
    p_ += b.size();
  }
  void bytes(std::uint32_t field, std::string_view b) {
    tag(field, pb::Wire::kLength);
    varint(b.size());
    raw(b);
  }
  void little_endian64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) *p_++ = static_cast<char>((v >> (8 * i)) & 0xff);
  }
  void fixed64(std::uint32_t field, std::uint64_t v) {
    tag(field, pb::Wire::kFixed64);
    little_endian64(v);
  }

 private:
  char* p_;
};

// The bytes of a length-delimited field of `size` bytes, tag (of a field under 16) included.
std::size_t length_field_size(std::size_t size) {
  return 1 + varint_size(size) + size;
}

// Makes room for `size` bytes at the end of `out`, writes them with `write(Cursor&)`.
template <typename Write>
void write_into(std::string& out, std::size_t size, Write write) {
  const std::size_t at = out.size();
  out.resize(at + size);
  Cursor c(out.data() + at);
  write(c);
  out.resize(static_cast<std::size_t>(c.end() - out.data()));
}

// A span attribute, KeyValue {key, value: AnyValue {one field}}: `any_body` bytes after the
// AnyValue field's tag, written by `value(Cursor&)`.
template <typename Value>
void put_attribute(std::string& out, std::string_view key, std::uint32_t any_field, pb::Wire wire,
                   std::size_t any_body, Value value) {
  const std::size_t any = 1 + any_body;
  const std::size_t kv = length_field_size(key.size()) + length_field_size(any);
  write_into(out, length_field_size(kv), [&](Cursor& c) {
    c.tag(kSpanAttributes, pb::Wire::kLength);
    c.varint(kv);
    c.bytes(kKeyValueKey, key);
    c.tag(kKeyValueValue, pb::Wire::kLength);
    c.varint(any);
    c.tag(any_field, wire);
    value(c);
  });
}

// OTLP text is UTF-8 (a collector may refuse a whole batch otherwise).
template <typename Write>
void as_utf8(std::string_view text, Write write) {
  if (json::is_valid_utf8(text)) return write(text);
  write(std::string_view(json::replace_invalid_utf8(text)));
}

void hex_into(std::string& out, std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
}

void json_text(std::string& out, std::string_view text) {
  as_utf8(text, [&](std::string_view t) { out += json::quote(t); });
}

}  // namespace

void SpanWriter::begin(const SpanHead& h) {
  first_attribute_ = true;
  if (encoding_ == Encoding::kJson) {
    out_ += R"({"traceId":")";
    hex_into(out_, bytes_of(h.trace_id));
    out_ += R"(","spanId":")";
    hex_into(out_, bytes_of(h.span_id));
    if (!is_zero(h.parent_id)) {
      out_ += R"(","parentSpanId":")";
      hex_into(out_, bytes_of(h.parent_id));
    }
    out_ += R"(","name":)";
    json_text(out_, h.name);
    fmt::format_to(std::back_inserter(out_),
                   R"(,"kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}","attributes":[)",
                   static_cast<int>(h.kind), h.start_ns, h.end_ns);
    return;
  }
  body_at_ = pb::open_nested(out_, kScopeSpansSpans);
  const bool root = is_zero(h.parent_id);
  as_utf8(h.name, [&](std::string_view name) {
    const std::size_t size = length_field_size(h.trace_id.size()) +
                             length_field_size(h.span_id.size()) +
                             (root ? 0 : length_field_size(h.parent_id.size())) +
                             length_field_size(name.size()) + 2 + 2 * 9;
    write_into(out_, size, [&](Cursor& c) {
      c.bytes(kSpanTraceId, bytes_of(h.trace_id));
      c.bytes(kSpanSpanId, bytes_of(h.span_id));
      if (!root) c.bytes(kSpanParentSpanId, bytes_of(h.parent_id));
      c.bytes(kSpanName, name);
      c.tag(kSpanKind, pb::Wire::kVarint);
      c.varint(static_cast<std::uint8_t>(h.kind));
      c.fixed64(kSpanStart, h.start_ns);
      c.fixed64(kSpanEnd, h.end_ns);
    });
  });
}

void SpanWriter::json_key(std::string_view key) {
  out_ += first_attribute_ ? R"({"key":)" : R"(,{"key":)";
  first_attribute_ = false;
  out_ += json::quote(key);
  out_ += R"(,"value":)";
}

void SpanWriter::add(std::string_view key, std::string_view value) {
  if (encoding_ == Encoding::kJson) {
    json_key(key);
    out_ += R"({"stringValue":)";
    json_text(out_, value);
    out_ += "}}";
    return;
  }
  as_utf8(value, [&](std::string_view t) {
    put_attribute(out_, key, kAnyString, pb::Wire::kLength, varint_size(t.size()) + t.size(),
                  [&](Cursor& c) {
                    c.varint(t.size());
                    c.raw(t);
                  });
  });
}

void SpanWriter::add(std::string_view key, std::int64_t value) {
  if (encoding_ == Encoding::kJson) {
    json_key(key);
    fmt::format_to(std::back_inserter(out_), R"({{"intValue":"{}"}}}})", value);
    return;
  }
  const auto v = static_cast<std::uint64_t>(value);
  put_attribute(out_, key, kAnyInt, pb::Wire::kVarint, varint_size(v),
                [&](Cursor& c) { c.varint(v); });
}

void SpanWriter::add(std::string_view key, double value) {
  if (encoding_ == Encoding::kJson) {
    json_key(key);
    // JSON has no NaN or infinity; OTLP/JSON would want them as strings, a span never has them.
    fmt::format_to(std::back_inserter(out_), R"({{"doubleValue":{}}}}})",
                   std::isfinite(value) ? value : 0.0);
    return;
  }
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof value);
  std::memcpy(&bits, &value, sizeof bits);
  put_attribute(out_, key, kAnyDouble, pb::Wire::kFixed64, 8,
                [&](Cursor& c) { c.little_endian64(bits); });
}

void SpanWriter::add(std::string_view key, bool value) {
  if (encoding_ == Encoding::kJson) {
    json_key(key);
    out_ += value ? R"({"boolValue":true}})" : R"({"boolValue":false}})";
    return;
  }
  put_attribute(out_, key, kAnyBool, pb::Wire::kVarint, 1,
                [&](Cursor& c) { c.varint(value ? 1 : 0); });
}

void SpanWriter::end(StatusCode status, std::string_view message) {
  if (status != StatusCode::kError) message = {};
  if (encoding_ == Encoding::kJson) {
    out_ += ']';
    if (status != StatusCode::kUnset) {
      fmt::format_to(std::back_inserter(out_), R"(,"status":{{"code":{})",
                     static_cast<int>(status));
      if (!message.empty()) {
        out_ += R"(,"message":)";
        json_text(out_, message);
      }
      out_ += '}';
    }
    out_ += "},";
    ends_.push_back(out_.size());
    return;
  }
  if (status != StatusCode::kUnset) {
    pb::Nested s(out_, kSpanStatus);
    if (!message.empty()) {
      as_utf8(message, [&](std::string_view t) { pb::put_bytes_field(out_, kStatusMessage, t); });
    }
    pb::put_varint_field(out_, kStatusCode, static_cast<std::uint8_t>(status));
  }
  pb::close_nested(out_, body_at_);
  ends_.push_back(out_.size());
}

void write_span(SpanWriter& w, const Span& s) {
  w.begin({.trace_id = s.trace_id,
           .span_id = s.span_id,
           .parent_id = s.parent_id,
           .name = s.name,
           .kind = s.kind,
           .start_ns = s.start_ns,
           .end_ns = s.end_ns});
  for (const Attribute& a : s.attributes) {
    std::visit(
        [&](const auto& v) {
          if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) {
            w.add(a.key, std::string_view(v));
          } else {
            w.add(a.key, v);
          }
        },
        a.value);
  }
  w.end(s.status, s.status_message);
}

}  // namespace toolbridge::otel
