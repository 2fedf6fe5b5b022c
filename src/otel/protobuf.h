#pragma once
// The few pieces of the protobuf wire format OTLP needs (varints, fixed64, doubles and
// length-delimited fields), appended to a string: no schema compiler and no library, because
// the OTLP trace messages are small, stable and written by hand once (otlp.cpp).
#include <cstdint>
#include <string>
#include <string_view>

namespace toolbridge::otel::protobuf {

enum class Wire : std::uint8_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v);
void put_tag(std::string& out, std::uint32_t field, Wire wire);
// Fields; the proto3 default value (0, "", false) is still written: callers skip it if they wish.
void put_varint_field(std::string& out, std::uint32_t field, std::uint64_t v);
void put_fixed64_field(std::string& out, std::uint32_t field, std::uint64_t v);
void put_fixed32_field(std::string& out, std::uint32_t field, std::uint32_t v);
void put_double_field(std::string& out, std::uint32_t field, double v);
void put_bytes_field(std::string& out, std::uint32_t field, std::string_view bytes);

// A nested message written in place: the tag, then the body the caller appends, then its length
// put in front of the body when the scope ends (the body moves by the length's few bytes).
class Nested {
 public:
  Nested(std::string& out, std::uint32_t field);
  ~Nested();
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;

 private:
  std::string& out_;
  std::size_t body_at_;
};

}  // namespace toolbridge::otel::protobuf
