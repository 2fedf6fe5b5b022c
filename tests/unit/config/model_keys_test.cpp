#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigModelKeys, DefaultsAndWorkers) {
  const Config c = load_text(
      "models:\n"
      "  Qwen/Qwen3-8B:\n"
      "    workers: [http://127.0.0.1:30000/, {url: 'http://10.0.0.2:30000', name: gpu2}]\n",
      "cfg.yaml", false);
  ASSERT_EQ(c.models.size(), 1u);
  const Model& m = c.models[0];
  EXPECT_EQ(m.name, "Qwen/Qwen3-8B");
  EXPECT_EQ(m.routing, Routing::kPrefixAware);
  ASSERT_EQ(m.workers.size(), 2u);
  EXPECT_EQ(m.workers[0].url, "http://127.0.0.1:30000");
  EXPECT_EQ(m.workers[0].name, "127.0.0.1:30000");
  EXPECT_EQ(m.workers[1].name, "gpu2");
  EXPECT_EQ(m.max_retries, 2u);
  EXPECT_DOUBLE_EQ(m.load_factor, 3.0);
  EXPECT_EQ(m.prefix_balance_slack, 4u);
}

TEST(ConfigModelKeys, EveryKey) {
  const Config c = load_text(
      "models:\n"
      "  m:\n"
      "    workers: [http://a:1]\n"
      "    routing: affinity\n"
      "    headers: {Authorization: Bearer x}\n"
      "    request_timeout: 30s\n"
      "    connect_timeout: 1s\n"
      "    stream_idle_timeout: 5s\n"
      "    max_connections: 8\n"
      "    max_response_bytes: 1MiB\n"
      "    concurrency_limit: 4\n"
      "    max_retries: 0\n"
      "    retry_backoff: 10ms\n"
      "    max_retry_after: 2s\n"
      "    breaker_threshold: 0\n"
      "    breaker_cooldown: 1s\n"
      "    health_interval: 500ms\n"
      "    load_factor: 1.5\n"
      "    prefix_min_match: 0.25\n"
      "    prefix_balance: 2\n"
      "    prefix_balance_slack: 0\n"
      "    prefix_tree_max_bytes: 1MiB\n",
      "cfg.yaml", false);
  const Model& m = c.models[0];
  EXPECT_EQ(m.routing, Routing::kAffinity);
  EXPECT_EQ(m.headers.at("Authorization"), "Bearer x");
  EXPECT_EQ(m.request_timeout, std::chrono::seconds(30));
  EXPECT_EQ(m.max_connections, 8u);
  EXPECT_EQ(m.max_response_bytes, 1u << 20);
  EXPECT_EQ(m.concurrency_limit, 4u);
  EXPECT_EQ(m.max_retries, 0u);
  EXPECT_EQ(m.breaker_threshold, 0u);
  EXPECT_DOUBLE_EQ(m.load_factor, 1.5);
  EXPECT_DOUBLE_EQ(m.prefix_min_match, 0.25);
  EXPECT_EQ(m.prefix_balance_slack, 0u);
}

TEST(ConfigModelKeys, Errors) {
  EXPECT_NE(yaml_error("models:\n  m: {}\n").find("needs `workers`"), std::string::npos);
  EXPECT_NE(yaml_error("models:\n  m: {workers: []}\n").find("at least one worker"),
            std::string::npos);
  EXPECT_NE(yaml_error("models:\n  m: {workers: [ftp://x]}\n").find("only http"), std::string::npos);
  EXPECT_NE(yaml_error("models:\n  m: {workers: [http://a:1], routing: random}\n").find("routing"),
            std::string::npos);
  EXPECT_NE(
      yaml_error("models:\n  m: {workers: [http://a:1], load_factor: 0.5}\n").find("from 1 to 100"),
      std::string::npos);
  EXPECT_NE(yaml_error("models:\n  m: {workers: [http://a:1], routng: affinity}\n").find("routing"),
            std::string::npos);
  EXPECT_NE(yaml_error("models:\n  m: {workers: [http://a:1, http://a:1]}\n").find("second worker"),
            std::string::npos);
  EXPECT_NE(yaml_error("servers:\n  s: {command: x}\nmodels:\n  s: {workers: [http://a:1]}\n")
                .find("also a server"),
            std::string::npos);
  EXPECT_NE(yaml_error("models:\n  'a b': {workers: [http://a:1]}\n").find("model name"),
            std::string::npos);
  EXPECT_NE(
      yaml_error("models:\n  m: {workers: [http://a:1], headers: {'X': \"a\\nb\"}}\n").find("header"),
      std::string::npos);
}

TEST(ConfigModelKeys, DisabledModelIsLeftOut) {
  const Config c =
      load_text("models:\n  m: {workers: [http://a:1], enabled: false}\n", "cfg.yaml", false);
  EXPECT_TRUE(c.models.empty());
}

}  // namespace
}  // namespace toolbridge::config
