#include "otel/protobuf.h"

#include <cstring>

namespace toolbridge::otel::protobuf {

namespace {
// The varint of `v` into `buf` (10 bytes at most); returns its length.
std::size_t varint_bytes(char* buf, std::uint64_t v) {
  std::size_t k = 0;
  while (v >= 0x80) {
    buf[k++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[k++] = static_cast<char>(v);
  return k;
}
}  // namespace

// One append per value: appending byte by byte cost a third of the encoding time.
void put_varint(std::string& out, std::uint64_t v) {
  char buf[10];
  out.append(buf, varint_bytes(buf, v));
}

void put_tag(std::string& out, std::uint32_t field, Wire wire) {
  put_varint(out, (std::uint64_t{field} << 3) | static_cast<std::uint8_t>(wire));
}

void put_varint_field(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_tag(out, field, Wire::kVarint);
  put_varint(out, v);
}

void put_fixed64_field(std::string& out, std::uint32_t field, std::uint64_t v) {
  put_tag(out, field, Wire::kFixed64);
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);  // little-endian
  out.append(buf, 8);
}

void put_fixed32_field(std::string& out, std::uint32_t field, std::uint32_t v) {
  put_tag(out, field, Wire::kFixed32);
  char buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(buf, 4);
}

void put_double_field(std::string& out, std::uint32_t field, double v) {
  std::uint64_t bits;
  static_assert(sizeof bits == sizeof v);
  std::memcpy(&bits, &v, sizeof bits);
  put_fixed64_field(out, field, bits);
}

void put_bytes_field(std::string& out, std::uint32_t field, std::string_view bytes) {
  char head[20];
  std::size_t k = varint_bytes(head, (std::uint64_t{field} << 3) | 2);
  k += varint_bytes(head + k, bytes.size());
  out.append(head, k);
  out.append(bytes);
}

std::size_t open_nested(std::string& out, std::uint32_t field) {
  put_tag(out, field, Wire::kLength);
  out += '\0';  // the length's first byte; most bodies are under 128 bytes and need no more
  return out.size();
}

void close_nested(std::string& out, std::size_t body_at) {
  char length[10];
  const std::size_t k = varint_bytes(length, out.size() - body_at);
  if (k > 1) out.insert(body_at, k - 1, '\0');  // room for the bytes past the first
  std::memcpy(out.data() + body_at - 1, length, k);
}

}  // namespace toolbridge::otel::protobuf
