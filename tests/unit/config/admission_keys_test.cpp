// Admission control keys: gateway limits, tenants, and a server's concurrency_limit, adaptive
// and tool_limits, with their errors.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigAdmission, DefaultsMeanNoLimit) {
  const Config c = load_text("servers:\n  s:\n    command: x\n", "cfg.yaml", false);
  EXPECT_EQ(c.gateway.max_calls_in_flight, 0u);
  EXPECT_EQ(c.gateway.tenant_limit, 0u);
  EXPECT_EQ(c.gateway.trajectory_limit, 0u);
  EXPECT_EQ(c.gateway.admission_queue_size, 16384u);
  EXPECT_TRUE(c.gateway.tenants.empty());
  EXPECT_EQ(c.servers[0].concurrency_limit, 0u);
  EXPECT_FALSE(c.servers[0].adaptive_limit);
  EXPECT_TRUE(c.servers[0].tool_limits.empty());
}

TEST(ConfigAdmission, EveryKeyIsRead) {
  const Config c = load_text(
      "gateway:\n  max_calls_in_flight: 100\n  tenant_limit: 20\n  trajectory_limit: 2\n"
      "  admission_queue_size: 50\n  tenants:\n    run-a: {limit: 30, weight: 2.5}\n"
      "    run-b: {weight: 0.5}\n"
      "servers:\n  s:\n    command: x\n    concurrency_limit: 8\n    tool_limits: {slow: 2}\n"
      "  t:\n    command: x\n    concurrency_limit: adaptive\n"
      "    adaptive: {min_limit: 2, max_limit: 40, window: 500ms, probe_interval: 30s}\n",
      "cfg.yaml", false);
  EXPECT_EQ(c.gateway.max_calls_in_flight, 100u);
  EXPECT_EQ(c.gateway.tenant_limit, 20u);
  EXPECT_EQ(c.gateway.trajectory_limit, 2u);
  EXPECT_EQ(c.gateway.admission_queue_size, 50u);
  EXPECT_EQ(c.gateway.tenants.at("run-a").limit, 30u);
  EXPECT_DOUBLE_EQ(c.gateway.tenants.at("run-a").weight, 2.5);
  EXPECT_DOUBLE_EQ(c.gateway.tenants.at("run-b").weight, 0.5);
  EXPECT_EQ(c.servers[0].concurrency_limit, 8u);
  EXPECT_EQ(c.servers[0].tool_limits.at("slow"), 2u);
  EXPECT_TRUE(c.servers[1].adaptive_limit);
  EXPECT_EQ(c.servers[1].adaptive.min_limit, 2u);
  EXPECT_EQ(c.servers[1].adaptive.max_limit, 40u);
  EXPECT_EQ(c.servers[1].adaptive.window, std::chrono::milliseconds(500));
  EXPECT_EQ(c.servers[1].adaptive.probe_interval, std::chrono::seconds(30));
}

TEST(ConfigAdmission, BadValuesAreErrorsAtTheirPlace) {
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    concurrency_limit: lots\n"),
            "cfg.yaml:4:24: servers.s.concurrency_limit: expected a number of calls (0: no "
            "limit) or 'adaptive', got 'lots'");
  EXPECT_EQ(
      yaml_error("servers:\n  s:\n    command: x\n    adaptive: {min_limit: 9, max_limit: 3}\n"),
      "cfg.yaml:4:41: servers.s.adaptive.max_limit: 3 must be from min_limit (9) to 1000000");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    concurrency_limit: 4\n"
                       "    adaptive: {max_limit: 9}\n"),
            "cfg.yaml:5:5: servers.s.adaptive: applies only with concurrency_limit: adaptive");
  EXPECT_EQ(yaml_error("gateway:\n  tenants:\n    a: {weight: 0}\n"),
            "cfg.yaml:3:17: gateway.tenants.a.weight: expected a weight from 0.01 to 1000, got "
            "'0'");
  EXPECT_EQ(yaml_error("gateway:\n  tenants:\n    \"a b\": {limit: 1}\n"),
            "cfg.yaml:3:5: gateway.tenants.a b: a tenant name is 1-128 characters of "
            "[A-Za-z0-9._:-] (as in X-Toolbridge-Tenant)");
  EXPECT_EQ(yaml_error("gateway:\n  tenants:\n    a: {limits: 1}\n"),
            "cfg.yaml:3:9: gateway.tenants.a: unknown key 'limits' (did you mean 'limit'?)");
  EXPECT_EQ(yaml_error("gateway:\n  max_calls_in_flight: -1\n"),
            "cfg.yaml:2:24: gateway.max_calls_in_flight: expected a whole number from 0 to "
            "1000000, got '-1'");
}

}  // namespace
}  // namespace toolbridge::config
