// What a reload changes: servers added, removed and changed (with their keys), gateway keys one
// by one, whole sections, and which of them only a restart applies.
#include "config/diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"

namespace toolbridge::config {
namespace {

using Names = std::vector<std::string>;

Diff yaml_diff(const std::string& a, const std::string& b) {
  return diff_texts(a, b, "cfg.yaml", false);
}

const std::string kBase = R"(
gateway:
  max_sessions: 10
  listen: 127.0.0.1:0
servers:
  a: {command: ./a, env: {X: "1"}}
  b: {command: ./b}
  c: {command: ./c, args: [one]}
)";

TEST(ConfigDiff, SameDocumentIsNoChange) {
  const Diff d = yaml_diff(kBase, kBase);
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.summary(), "no change");
  EXPECT_TRUE(restart_only_keys(d).empty());
}

TEST(ConfigDiff, KeyOrderAndCommentsAreNoChange) {
  const std::string reordered = R"(
# a comment
servers:
  c: {args: [one], command: ./c}
  b: {command: ./b}
  a: {env: {X: "1"}, command: ./a}
gateway: {listen: 127.0.0.1:0, max_sessions: 10}
)";
  EXPECT_TRUE(yaml_diff(kBase, reordered).empty());
}

TEST(ConfigDiff, ServersAddedRemovedAndChangedWithTheirKeys) {
  const std::string next = R"(
gateway:
  max_sessions: 10
  listen: 127.0.0.1:0
servers:
  a: {command: ./a, env: {X: "2"}}
  c: {command: ./c, args: [one, two], cwd: /tmp}
  d: {command: ./d}
)";
  const Diff d = yaml_diff(kBase, next);
  EXPECT_EQ(d.servers_added, Names{"d"});
  EXPECT_EQ(d.servers_removed, Names{"b"});
  ASSERT_EQ(d.servers_changed.size(), 2u);
  EXPECT_EQ(d.servers_changed[0].name, "a");
  EXPECT_EQ(d.servers_changed[0].keys, Names{"env"});
  EXPECT_EQ(d.servers_changed[1].name, "c");
  EXPECT_EQ(d.servers_changed[1].keys, (Names{"args", "cwd"}));
  EXPECT_TRUE(d.keys_changed.empty());
  EXPECT_EQ(d.summary(), "servers +d -b ~a(env) ~c(args,cwd)");
  EXPECT_TRUE(restart_only_keys(d).empty());
}

TEST(ConfigDiff, GatewayKeysOneByOneAndWhichNeedARestart) {
  const std::string next = R"(
gateway:
  max_sessions: 20
  listen: 127.0.0.1:9000
  max_calls_in_flight: 8
  auth: {keys: [{name: k, token: abcdefghijklmnopq}]}
servers:
  a: {command: ./a, env: {X: "1"}}
  b: {command: ./b}
  c: {command: ./c, args: [one]}
)";
  const Diff d = yaml_diff(kBase, next);
  EXPECT_TRUE(d.servers_added.empty() && d.servers_removed.empty() && d.servers_changed.empty());
  EXPECT_EQ(d.keys_changed, (Names{"gateway.auth", "gateway.listen", "gateway.max_calls_in_flight",
                                   "gateway.max_sessions"}));
  EXPECT_EQ(restart_only_keys(d), Names{"gateway.listen"});
  EXPECT_EQ(d.summary(),
            "keys gateway.auth, gateway.listen, gateway.max_calls_in_flight, gateway.max_sessions");
}

TEST(ConfigDiff, SectionsAsAWholeAndTheirAliases) {
  const std::string before = R"({"mcpServers": {"a": {"command": "./a"}},
                                 "toolbridge": {"max_sessions": 5}})";
  const std::string after = R"({"mcpServers": {"a": {"command": "./a"}},
                                "toolbridge": {"max_sessions": 5, "trace": "/tmp/t.jsonl"},
                                "surfaces": {"s": {"tools": ["a__*"]}}})";
  const Diff d = diff_texts(before, after, "cfg.json", true);
  EXPECT_EQ(d.keys_changed, (Names{"gateway.trace", "surfaces"}));
  // Surfaces change live; the trace file only at a restart.
  EXPECT_EQ(restart_only_keys(d), Names{"gateway.trace"});
}

TEST(ConfigDiff, ModelsModelByModelAndLive) {
  const std::string before = R"(
models:
  keep: {workers: [http://127.0.0.1:1]}
  gone: {workers: [http://127.0.0.1:2]}
  moved: {workers: [http://127.0.0.1:3], routing: round_robin}
)";
  const std::string after = R"(
models:
  moved: {workers: [http://127.0.0.1:3], routing: least_outstanding}
  keep: {workers: [http://127.0.0.1:1]}
  new: {workers: [http://127.0.0.1:4]}
)";
  const Diff d = yaml_diff(before, after);
  EXPECT_EQ(d.models_added, Names{"new"});
  EXPECT_EQ(d.models_removed, Names{"gone"});
  EXPECT_EQ(d.models_changed, Names{"moved"});
  EXPECT_TRUE(d.keys_changed.empty());
  EXPECT_EQ(d.summary(), "models +new -gone ~moved");
  EXPECT_TRUE(restart_only_keys(d).empty());
  // The first model of a file that had none, beside a server change.
  const Diff first =
      yaml_diff("servers: {a: {command: ./a}}\n",
                "servers: {a: {command: ./b}}\nmodels: {m: {workers: [http://h:1]}}\n");
  EXPECT_EQ(first.models_added, Names{"m"});
  EXPECT_EQ(first.summary(), "servers ~a(command); models +m");
}

TEST(ConfigDiff, TenantsRatesAndSharedLimitsChangeLive) {
  const std::string next = R"(
gateway:
  max_sessions: 10
  listen: 127.0.0.1:0
  tenant_rate: 50
  tenants: {run: {limit: 4, rate: 10}}
  shared_limits: {address: 127.0.0.1:6379}
servers:
  a: {command: ./a, env: {X: "1"}}
  b: {command: ./b}
  c: {command: ./c, args: [one]}
)";
  const Diff d = yaml_diff(kBase, next);
  EXPECT_EQ(d.keys_changed,
            (Names{"gateway.shared_limits", "gateway.tenant_rate", "gateway.tenants"}));
  EXPECT_TRUE(restart_only_keys(d).empty());
}

TEST(ConfigDiff, AnUnparsableDocumentIsAConfigErrorWithItsPosition) {
  try {
    yaml_diff(kBase, "servers: [\n");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("cfg.yaml:")) << e.what();
  }
}

}  // namespace
}  // namespace toolbridge::config
