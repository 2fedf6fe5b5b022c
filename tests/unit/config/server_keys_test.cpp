#include "config/server_keys.h"

#include <gtest/gtest.h>

#include <string>

namespace toolbridge::config {
namespace {

TEST(ConfigServerKeys, EveryKeyHasAReader) {
  for (std::string_view key : kServerKeys) EXPECT_NE(server_key_reader(key), nullptr) << key;
  for (std::string_view key : kForeignServerKeys) EXPECT_NE(server_key_reader(key), nullptr) << key;
  EXPECT_EQ(server_key_reader("autoApprove"), nullptr);
  EXPECT_EQ(server_key_reader(""), nullptr);
}

ServerDraft read(std::string_view key, std::string value) {
  const NodeReader r("f.json", true);
  Entry e{std::string(key), {1, 1}, {}};
  e.value.kind = Node::Kind::kScalar;
  e.value.scalar = std::move(value);
  ServerDraft d;
  server_key_reader(key)(r, e, "s." + std::string(key), d);
  return d;
}

TEST(ConfigServerKeys, ForeignTimeoutIsSecondsUnlessNoHumanMeansIt) {
  EXPECT_EQ(read("timeout", "60").foreign_timeout, Duration(60'000));
  EXPECT_EQ(read("timeout", "3600").foreign_timeout, Duration(3'600'000));
  EXPECT_EQ(read("timeout", "3601").foreign_timeout, Duration(3'601));
  EXPECT_EQ(read("timeout", "600000").foreign_timeout, Duration(600'000));
  EXPECT_FALSE(read("timeout", "60").call_timeout_set);
  EXPECT_TRUE(read("call_timeout", "60").call_timeout_set);
}

TEST(ConfigServerKeys, UrlKeysRememberWhichWasWritten) {
  const ServerDraft d = read("httpUrl", "http://h/mcp");
  EXPECT_EQ(d.server.url, "http://h/mcp");
  EXPECT_EQ(d.url_key, "httpUrl");
  EXPECT_EQ(d.server.transport, RemoteTransport::kStreamableHttp);
  EXPECT_EQ(read("url", "http://h/mcp").server.transport, RemoteTransport::kAuto);
}

TEST(ConfigServerKeys, TypeChoosesTheTransport) {
  EXPECT_EQ(read("type", "sse").server.transport, RemoteTransport::kSse);
  EXPECT_EQ(read("type", "http").server.transport, RemoteTransport::kStreamableHttp);
  const ServerDraft stdio = read("type", "stdio");
  EXPECT_TRUE(stdio.type_is_stdio);
  EXPECT_FALSE(stdio.type_set);
  EXPECT_TRUE(stdio.type_mark.has_value());
}

}  // namespace
}  // namespace toolbridge::config
