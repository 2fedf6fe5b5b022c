#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigCacheKeys, NothingIsCachedByDefault) {
  const Config c = load_text("servers:\n  s:\n    command: x\n", "cfg.yaml", false);
  EXPECT_FALSE(c.servers[0].cache.configured);
  EXPECT_EQ(c.servers[0].cache.for_tool("search"), nullptr);
  EXPECT_EQ(c.gateway.cache.memory_bytes, 256u << 20);
}

TEST(ConfigCacheKeys, AListOfToolsWithServerDefaults) {
  const Config c = load_text(
      "servers:\n  s:\n    command: x\n    cache:\n      tools: [search, fetch]\n"
      "      ttl: 10m\n      scope: tenant\n",
      "cfg.yaml", false);
  const ServerCache& sc = c.servers[0].cache;
  ASSERT_NE(sc.for_tool("search"), nullptr);
  EXPECT_EQ(sc.for_tool("search")->ttl, Duration(600'000));
  EXPECT_EQ(sc.for_tool("fetch")->scope, CacheScope::kTenant);
  EXPECT_EQ(sc.for_tool("run"), nullptr);
  EXPECT_FALSE(sc.annotations);
}

TEST(ConfigCacheKeys, PerToolSettingsOverrideTheServers) {
  const Config c = load_text(
      "gateway:\n  cache:\n    disk: {path: /tmp/tb-cache}\n"
      "servers:\n  s:\n    command: x\n    cache:\n"
      "      tools:\n        search: {ttl: 1h, tier: disk}\n        fetch:\n"
      "      ttl: 30s\n      scope: trajectory\n",
      "cfg.yaml", false);
  const ServerCache& sc = c.servers[0].cache;
  EXPECT_EQ(sc.for_tool("search")->ttl, Duration(3'600'000));
  EXPECT_EQ(sc.for_tool("search")->tier, CacheTier::kDisk);
  EXPECT_EQ(sc.for_tool("search")->scope, CacheScope::kTrajectory);  // the server's, written after
  EXPECT_EQ(sc.for_tool("fetch")->ttl, Duration(30'000));
  EXPECT_EQ(sc.for_tool("fetch")->tier, CacheTier::kMemory);
}

TEST(ConfigCacheKeys, StarCachesEveryTool) {
  const Config c =
      load_text("servers:\n  s:\n    command: x\n    cache: {tools: \"*\", annotations: true}\n",
                "cfg.yaml", false);
  EXPECT_NE(c.servers[0].cache.for_tool("anything"), nullptr);
  EXPECT_TRUE(c.servers[0].cache.annotations);
}

TEST(ConfigCacheKeys, GatewayStore) {
  const Config c = load_text(
      "gateway:\n  cache:\n    memory_bytes: 64MiB\n    max_entry_bytes: 1MiB\n"
      "    disk: {path: /var/cache/tb, max_bytes: 2GiB}\n"
      "    redis: {address: 'redis://10.0.0.5:6380', timeout: 50ms, key_prefix: 'eval:'}\n",
      "cfg.yaml", false);
  const CacheStore& s = c.gateway.cache;
  EXPECT_EQ(s.memory_bytes, 64u << 20);
  EXPECT_EQ(s.max_entry_bytes, 1u << 20);
  EXPECT_EQ(s.disk_path, "/var/cache/tb");
  EXPECT_EQ(s.disk_bytes, 2ull << 30);
  EXPECT_EQ(s.redis_host, "10.0.0.5");
  EXPECT_EQ(s.redis_port, 6380);
  EXPECT_EQ(s.redis_timeout, Duration(50));
  EXPECT_EQ(s.redis_prefix, "eval:");
}

TEST(ConfigCacheKeys, MistakesAreReportedWhereTheyAre) {
  const std::string head = "servers:\n  s:\n    command: x\n    cache:\n";
  EXPECT_NE(yaml_error(head + "      scope: everyone\n").find("cfg.yaml:5:14: servers.s.cache.scope"),
            std::string::npos)
      << yaml_error(head + "      scope: everyone\n");
  EXPECT_NE(yaml_error(head + "      ttl: 0s\n").find("servers.s.cache.ttl"), std::string::npos);
  EXPECT_NE(yaml_error(head + "      tool: [a]\n").find("did you mean 'tools'"), std::string::npos)
      << yaml_error(head + "      tool: [a]\n");
  EXPECT_NE(yaml_error(head + "      tools: search\n").find("expected \"*\""), std::string::npos);
  EXPECT_NE(yaml_error(head + "      tools: [a, a]\n").find("listed twice"), std::string::npos);
  EXPECT_NE(yaml_error(head + "      tools: {a: {ttl: 1s, scop: tenant}}\n").find("scop"),
            std::string::npos);
  EXPECT_NE(yaml_error(head + "      tier: disk\n").find("needs gateway.cache.disk.path"),
            std::string::npos);
  EXPECT_NE(yaml_error(head + "      tier: redis\n").find("needs gateway.cache.redis.address"),
            std::string::npos);
  EXPECT_NE(yaml_error("gateway:\n  cache:\n    disk: {path: relative}\n").find("absolute path"),
            std::string::npos);
  EXPECT_NE(yaml_error("gateway:\n  cache:\n    redis: {address: 'host:99999'}\n").find("HOST:PORT"),
            std::string::npos);
}

TEST(ConfigCacheKeys, PerSessionServersAreCachedOnlyPerTrajectory) {
  const std::string head =
      "servers:\n  s:\n    command: x\n    policy: per_session\n    cache:\n      tools: [a]\n";
  EXPECT_NE(yaml_error(head).find("scope: trajectory"), std::string::npos) << yaml_error(head);
  EXPECT_EQ(yaml_error(head + "      scope: trajectory\n"), "<no error>");
}

}  // namespace
}  // namespace toolbridge::config
