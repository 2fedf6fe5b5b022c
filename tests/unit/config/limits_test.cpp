// Config values that used to pass through or blow up: unset ${env:NAME} in env, durations past
// the clock's range, YAML alias bombs.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "config/config.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

TEST(ConfigLimits, EnvValuesExpandEnvReferencesAndAnUnsetOneIsAnError) {
  ::unsetenv("TB_LIMITS_TEST_UNSET");
  EXPECT_EQ(
      yaml_error("servers:\n  s:\n    command: x\n    env: {X: \"${env:TB_LIMITS_TEST_UNSET}\"}\n"),
      "cfg.yaml:4:14: servers.s.env.X: environment variable TB_LIMITS_TEST_UNSET (from "
      "${env:TB_LIMITS_TEST_UNSET}) is not set in the gateway's environment");
  ::setenv("TB_LIMITS_TEST_SET", "v4lue", 1);
  const Config c =
      load_text("servers:\n  s:\n    command: x\n    env: {X: \"a-${env:TB_LIMITS_TEST_SET}\"}\n",
                "cfg.yaml", false);
  ::unsetenv("TB_LIMITS_TEST_SET");
  EXPECT_EQ(c.servers.at(0).env.at("X"), "a-v4lue");
}

TEST(ConfigLimits, DurationsAreBoundedAtThirtyDays) {
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    call_timeout: 2562048h\n"),
            "cfg.yaml:4:19: servers.s.call_timeout: 2562048h is longer than the limit of 720h "
            "(30 days)");
  EXPECT_EQ(
      yaml_error("gateway:\n  session_idle_ttl: 721h\n"),
      "cfg.yaml:2:21: gateway.session_idle_ttl: 721h is longer than the limit of 720h (30 days)");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    idle_ttl: 720h\n"), "<no error>");
  EXPECT_EQ(yaml_error("servers:\n  s:\n    command: x\n    tool_timeouts: {t: 9999999999s}\n"),
            "cfg.yaml:4:24: servers.s.tool_timeouts.t: 9999999999s is longer than the limit of "
            "720h (30 days)");
}

// Each level doubles ... nine levels of nine aliases name 9^9 (387 million) leaves.
std::string alias_bomb() {
  std::string text =
      "a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'i'; ++c, ++prev) {
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 9; ++i) text += std::string(i ? ", *" : "*") + prev;
    text += "]\n";
  }
  return text + "servers: {}\n";
}

TEST(ConfigLimits, YamlAliasBombIsAClearError) {
  const std::string error = yaml_error(alias_bomb());
  EXPECT_NE(error.find("cfg.yaml:"), std::string::npos) << error;
  EXPECT_NE(error.find("more than 100000 nodes once its aliases are expanded"), std::string::npos)
      << error;
}

TEST(ConfigLimits, YamlAliasOfAHugeScalarIsAClearError) {
  std::string text = "big: &big \"" + std::string(1 << 20, 'x') + "\"\nlist: [";
  for (int i = 0; i < 40; ++i) text += std::string(i ? ", " : "") + "*big";
  const std::string error = yaml_error(text + "]\nservers: {}\n");
  EXPECT_NE(error.find("more than 16 MiB of text"), std::string::npos) << error;
}

TEST(ConfigLimits, DeepYamlNestingIsAClearError) {
  const std::string error =
      yaml_error("x: " + std::string(100, '[') + std::string(100, ']') + "\n");
  EXPECT_NE(error.find("nests deeper than 64 levels"), std::string::npos) << error;
}

// fuzz/findings/config-yaml-self-alias.yaml: an alias inside its own anchor made yaml-cpp hand
// back a node that contains itself, and reading it overflowed the stack (SIGSEGV).
TEST(ConfigLimits, AnAliasInsideItsOwnAnchorIsAClearError) {
  for (const std::string text : {"a: &a [*a]\n", "servers: &s {x: *s}\n"}) {
    const std::string error = yaml_error(text);
    EXPECT_NE(error.find("cfg.yaml:1:"), std::string::npos) << text << " -> " << error;
    EXPECT_NE(error.find("nests deeper than 64 levels"), std::string::npos)
        << text << " -> " << error;
  }
}

}  // namespace
}  // namespace toolbridge::config
