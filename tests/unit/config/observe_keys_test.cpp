// The observability keys: `trace` (long and short form) and `dashboard`, with their errors.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigObserve, TraceIsOffAndTheDashboardLoopbackByDefault) {
  const Config c = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_TRUE(c.gateway.trace.file.empty());
  EXPECT_EQ(c.gateway.trace.max_bytes, 64u << 20);
  EXPECT_EQ(c.gateway.trace.files, 4u);
  EXPECT_EQ(c.gateway.dashboard, ObserveAccess::kLoopback);
}

TEST(ConfigObserve, OneKeyTurnsTheTraceOn) {
  const Config c = load_text("gateway:\n  trace: /var/log/tb.jsonl\n", "cfg.yaml", false);
  EXPECT_EQ(c.gateway.trace.file, "/var/log/tb.jsonl");
  EXPECT_EQ(c.gateway.trace.buffer, 16'384u);
}

TEST(ConfigObserve, EveryTraceKeyIsRead) {
  const Config c = load_text(
      "gateway:\n  trace: {file: /t/calls.jsonl, max_bytes: 1MiB, files: 2, buffer: 100}\n"
      "  dashboard: anywhere\n",
      "cfg.yaml", false);
  EXPECT_EQ(c.gateway.trace.file, "/t/calls.jsonl");
  EXPECT_EQ(c.gateway.trace.max_bytes, 1u << 20);
  EXPECT_EQ(c.gateway.trace.files, 2u);
  EXPECT_EQ(c.gateway.trace.buffer, 100u);
  EXPECT_EQ(c.gateway.dashboard, ObserveAccess::kAnywhere);
  EXPECT_EQ(load_text("gateway: {dashboard: 'off'}\n", "c.yaml", false).gateway.dashboard,
            ObserveAccess::kOff);
}

TEST(ConfigBatch, LimitsHaveDefaultsAndBounds) {
  const Config d = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_EQ(d.gateway.batch_max_calls, 256u);
  EXPECT_EQ(d.gateway.batch_max_result_bytes, 256u << 20);
  const Config c = load_text("gateway: {batch_max_calls: 16, batch_max_result_bytes: 1MiB}\n",
                             "cfg.yaml", false);
  EXPECT_EQ(c.gateway.batch_max_calls, 16u);
  EXPECT_EQ(c.gateway.batch_max_result_bytes, 1u << 20);
  EXPECT_EQ(yaml_error("gateway: {batch_max_calls: 1000000}\n"),
            "cfg.yaml:1:28: gateway.batch_max_calls: at most 100000 calls");
}

TEST(ConfigObserve, BadValuesAreErrorsAtTheirPlace) {
  EXPECT_EQ(yaml_error("gateway:\n  trace: calls.jsonl\n"),
            "cfg.yaml:2:10: gateway.trace: must be an absolute path, got 'calls.jsonl'");
  EXPECT_EQ(yaml_error("gateway:\n  trace: {max_bytes: 1MiB}\n"),
            "cfg.yaml:2:10: gateway.trace: needs `file`: the path of the trace file");
  EXPECT_EQ(yaml_error("gateway:\n  trace: {file: /x, max_bytes: 100}\n"),
            "cfg.yaml:2:32: gateway.trace.max_bytes: must be at least 4096 bytes");
  EXPECT_EQ(yaml_error("gateway:\n  trace: {file: /x, buffer: 0}\n"),
            "cfg.yaml:2:29: gateway.trace.buffer: must be at least 1 line");
  EXPECT_NE(yaml_error("gateway:\n  trace: {file: /x, rotate: 3}\n").find("gateway.trace"),
            std::string::npos);
  EXPECT_NE(yaml_error("gateway:\n  dashboard: public\n").find("gateway.dashboard"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::config
