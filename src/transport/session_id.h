#pragma once
// Session ids for Mcp-Session-Id: 128 bits from the kernel's CSPRNG, as 32 hex digits, so one
// agent cannot guess another's session.
#include <sys/random.h>

#include <cstddef>
#include <string>

namespace toolbridge::transport {

inline std::string random_session_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id += kHex[b >> 4];
    id += kHex[b & 15];
  }
  return id;
}

}  // namespace toolbridge::transport
