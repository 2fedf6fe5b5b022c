// The parse keys of `gateway`: turns per request and the stream limits, with their errors.
#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

using std::chrono::milliseconds;

TEST(ConfigParse, LimitsHaveDefaults) {
  const Config c = load_text("servers: {}\n", "cfg.yaml", false);
  EXPECT_EQ(c.gateway.parse_max_turns, 1024u);
  EXPECT_EQ(c.gateway.parse_max_streams, 256u);
  EXPECT_EQ(c.gateway.parse_stream_max_bytes, 4u << 20);
  EXPECT_EQ(c.gateway.parse_stream_idle, milliseconds(60'000));
}

TEST(ConfigParse, EveryKeyIsRead) {
  const Config c = load_text(
      "gateway:\n  parse_max_turns: 64\n  parse_max_streams: 8\n"
      "  parse_stream_max_bytes: 64KiB\n  parse_stream_idle: 250ms\n",
      "cfg.yaml", false);
  EXPECT_EQ(c.gateway.parse_max_turns, 64u);
  EXPECT_EQ(c.gateway.parse_max_streams, 8u);
  EXPECT_EQ(c.gateway.parse_stream_max_bytes, 64u << 10);
  EXPECT_EQ(c.gateway.parse_stream_idle, milliseconds(250));
}

TEST(ConfigParse, BadValuesAreErrorsAtTheirPlace) {
  EXPECT_EQ(yaml_error("gateway: {parse_max_streams: 0}\n"),
            "cfg.yaml:1:30: gateway.parse_max_streams: expected a whole number of at least 1, "
            "got '0'");
  EXPECT_EQ(yaml_error("gateway: {parse_max_streams: 100001}\n"),
            "cfg.yaml:1:30: gateway.parse_max_streams: at most 100000 streams");
  EXPECT_EQ(yaml_error("gateway: {parse_max_turns: 200000}\n"),
            "cfg.yaml:1:28: gateway.parse_max_turns: at most 100000 turns");
  EXPECT_EQ(yaml_error("gateway: {parse_stream_max_bytes: 2GiB}\n"),
            "cfg.yaml:1:35: gateway.parse_stream_max_bytes: at most 1GiB: a stream's text is "
            "held in memory");
  EXPECT_EQ(yaml_error("gateway: {parse_stream_max_bytes: 0}\n"),
            "cfg.yaml:1:35: gateway.parse_stream_max_bytes: must be at least 1 byte");
  EXPECT_EQ(yaml_error("gateway: {parse_stream_idle: 50ms}\n"),
            "cfg.yaml:1:30: gateway.parse_stream_idle: must be at least 100ms (idle streams are "
            "swept every quarter of it)");
  EXPECT_EQ(yaml_error("gateway: {parse_stream_idle: 0}\n"),
            "cfg.yaml:1:30: gateway.parse_stream_idle: must be longer than 0");
  // A misspelt key names the real one.
  EXPECT_NE(yaml_error("gateway: {parse_stream_idel: 1s}\n").find("parse_stream_idle"),
            std::string::npos);
}

}  // namespace
}  // namespace toolbridge::config
