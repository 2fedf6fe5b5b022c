#include "transport/url.h"

#include <gtest/gtest.h>

namespace toolbridge::transport {
namespace {

Url parsed(const std::string& text) {
  auto u = parse_url(text);
  EXPECT_TRUE(u) << text << ": " << u.error();
  return u ? *u : Url{};
}

TEST(Url, HttpWithPortAndQuery) {
  const Url u = parsed("http://127.0.0.1:8080/mcp?x=1");
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, "8080");
  EXPECT_EQ(u.target, "/mcp?x=1");
  EXPECT_EQ(u.origin(), "http://127.0.0.1:8080");
  EXPECT_EQ(host_header(u), "127.0.0.1:8080");
}

TEST(Url, DefaultPortsAndTarget) {
  const Url a = parsed("https://example.org");
  EXPECT_TRUE(a.tls);
  EXPECT_EQ(a.port, "443");
  EXPECT_EQ(a.target, "/");
  EXPECT_EQ(host_header(a), "example.org");
  EXPECT_EQ(a.text(), "https://example.org:443/");
  const Url b = parsed("http://example.org/sse#fragment");
  EXPECT_EQ(b.port, "80");
  EXPECT_EQ(b.target, "/sse");
  EXPECT_EQ(host_header(b), "example.org");
}

TEST(Url, Ipv6HostsAreBracketedInHeaders) {
  const Url u = parsed("http://[::1]:9/mcp");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(host_header(u), "[::1]:9");
  EXPECT_EQ(u.origin(), "http://[::1]:9");
}

TEST(Url, RejectsOtherSchemesAndGarbage) {
  EXPECT_EQ(parse_url("ftp://h/x").error(), "'ftp://h/x' is not http:// or https://");
  const auto garbage = parse_url("not a url");
  EXPECT_FALSE(garbage);
  EXPECT_NE(garbage.error().find("invalid URL 'not a url'"), std::string::npos) << garbage.error();
  EXPECT_EQ(parse_url("http:///path").error(), "invalid URL 'http:///path': no host");
}

}  // namespace
}  // namespace toolbridge::transport
