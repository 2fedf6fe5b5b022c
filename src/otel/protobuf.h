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

// A nested message written in place: open_nested() writes the tag and one byte for the length
// and returns where the body starts; the caller appends the body; close_nested() puts its length
// in front of it (the body moves by the length's bytes past the first).
std::size_t open_nested(std::string& out, std::uint32_t field);
void close_nested(std::string& out, std::size_t body_at);

// The same for a scope.
class Nested {
 public:
  Nested(std::string& out, std::uint32_t field) : out_(out), body_at_(open_nested(out, field)) {}
  ~Nested() { close_nested(out_, body_at_); }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;

 private:
  std::string& out_;
  std::size_t body_at_;
};

}  // namespace toolbridge::otel::protobuf
