#include "transport/local_origin.h"

#include <gtest/gtest.h>

namespace toolbridge::transport {
namespace {

TEST(LocalOrigin, LoopbackHosts) {
  for (const char* h :
       {"localhost", "LOCALHOST:8848", "127.0.0.1", "127.0.0.1:0", "[::1]", "[::1]:65535"}) {
    EXPECT_TRUE(is_loopback_host(h)) << h;
  }
}

TEST(LocalOrigin, RebindingHostsAreRejected) {
  // A page at evil.example whose name resolves to 127.0.0.1 still sends its own name.
  for (const char* h :
       {"evil.example.com", "evil.example.com:8848", "localhost.evil.com", "127.0.0.1.nip.io",
        "localhost:80x", "localhost:", "[::1]x", "", "127.0.0.2"}) {
    EXPECT_FALSE(is_loopback_host(h)) << h;
  }
}

TEST(LocalOrigin, Origins) {
  EXPECT_TRUE(is_loopback_origin("http://localhost:3000"));
  EXPECT_TRUE(is_loopback_origin("https://127.0.0.1"));
  EXPECT_TRUE(is_loopback_origin("HTTP://[::1]:1"));
  EXPECT_FALSE(is_loopback_origin("http://evil.example.com"));
  EXPECT_FALSE(is_loopback_origin("ftp://localhost"));
  EXPECT_FALSE(is_loopback_origin("null"));
  EXPECT_FALSE(is_loopback_origin("http://localhost.evil.com"));
}

TEST(LocalOrigin, ListenAddresses) {
  for (const char* a : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"})
    EXPECT_TRUE(is_loopback_address(a)) << a;
  for (const char* a : {"0.0.0.0", "::", "10.0.0.1", "192.168.1.1"})
    EXPECT_FALSE(is_loopback_address(a)) << a;
}

}  // namespace
}  // namespace toolbridge::transport
