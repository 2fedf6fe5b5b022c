#include "config/node_reader.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <string_view>

namespace toolbridge::config {
namespace {

Node scalar(std::string text) {
  Node n;
  n.kind = Node::Kind::kScalar;
  n.mark = {2, 5};
  n.scalar = std::move(text);
  return n;
}

Node of_kind(Node::Kind kind) {
  Node n;
  n.kind = kind;
  n.mark = {2, 5};
  return n;
}

std::string error_of(auto read) {
  try {
    read();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

const NodeReader yaml("f.yaml", false);
const NodeReader json("f.json", true);

TEST(ConfigNodeReader, FailsAtTheNodeWithItsPath) {
  EXPECT_EQ(error_of([] { yaml.fail({2, 5}, "servers.a", "bad"); }), "f.yaml:2:5: servers.a: bad");
}

TEST(ConfigNodeReader, DescribesNodesInTheWordsOfTheFormat) {
  EXPECT_EQ(yaml.describe(of_kind(Node::Kind::kMap)), "a mapping");
  EXPECT_EQ(json.describe(of_kind(Node::Kind::kMap)), "an object");
  EXPECT_EQ(yaml.describe(of_kind(Node::Kind::kList)), "a list");
  EXPECT_EQ(json.describe(of_kind(Node::Kind::kList)), "an array");
  EXPECT_EQ(yaml.describe(of_kind(Node::Kind::kNull)), "nothing");
  EXPECT_EQ(yaml.describe(scalar("x")), "'x'");
  EXPECT_EQ(yaml.describe(scalar(std::string(41, 'a'))), "'" + std::string(40, 'a') + "...'");
}

TEST(ConfigNodeReader, ReadsTypedScalars) {
  EXPECT_EQ(yaml.text(scalar("npx"), "p"), "npx");
  EXPECT_TRUE(yaml.boolean(scalar("yes"), "p"));
  EXPECT_FALSE(yaml.boolean(scalar("off"), "p"));
  EXPECT_EQ(yaml.duration(scalar("1m30s"), "p", false), Duration(90'000));
  EXPECT_EQ(yaml.duration(scalar("0"), "p", true), Duration(0));
  EXPECT_EQ(yaml.size(scalar("4MiB"), "p"), 4u << 20);
  EXPECT_EQ(yaml.count(scalar("12"), "p"), 12u);
  EXPECT_EQ(yaml.zero_or_count(scalar("0"), "p"), 0u);
  constexpr std::array<std::string_view, 2> choices{"shared", "pool"};
  EXPECT_EQ(yaml.one_of(scalar("pool"), "p", choices), "pool");
}

TEST(ConfigNodeReader, SaysWhatItExpected) {
  EXPECT_EQ(error_of([] { yaml.text(of_kind(Node::Kind::kNull), "p"); }),
            "f.yaml:2:5: p: expected a value (write \"\" for an empty string)");
  EXPECT_EQ(error_of([] { yaml.text(scalar(std::string("a\0b", 3)), "p"); }),
            "f.yaml:2:5: p: must not contain a NUL character");
  EXPECT_EQ(error_of([] { json.text(of_kind(Node::Kind::kList), "p"); }),
            "f.json:2:5: p: expected a string, got an array");
  EXPECT_EQ(error_of([] { yaml.boolean(scalar("1"), "p"); }),
            "f.yaml:2:5: p: expected true or false, got '1'");
  EXPECT_EQ(error_of([] { yaml.duration(scalar("0s"), "p", false); }),
            "f.yaml:2:5: p: must be longer than 0");
  EXPECT_EQ(error_of([] { yaml.size(scalar("0"), "p"); }),
            "f.yaml:2:5: p: must be at least 1 byte");
  EXPECT_EQ(error_of([] { yaml.count(scalar("0"), "p"); }),
            "f.yaml:2:5: p: expected a whole number of at least 1, got '0'");
  EXPECT_EQ(error_of([] { yaml.zero_or_count(scalar("11"), "p"); }),
            "f.yaml:2:5: p: expected a whole number from 0 to 10, got '11'");
  constexpr std::array<std::string_view, 2> choices{"shared", "pool"};
  EXPECT_EQ(error_of([&] { yaml.one_of(scalar("poll"), "p", choices); }),
            "f.yaml:2:5: p: expected one of shared, pool, got 'poll' (did you mean 'pool'?)");
}

TEST(ConfigNodeReader, NullIsAnEmptyMappingOrList) {
  EXPECT_TRUE(yaml.entries(of_kind(Node::Kind::kNull), "p").empty());
  EXPECT_TRUE(yaml.items(of_kind(Node::Kind::kNull), "p").empty());
  EXPECT_EQ(error_of([] { yaml.items(scalar("x"), "p"); }),
            "f.yaml:2:5: p: expected a list, got 'x'");
}

Entry key(std::string name, int line) {
  return Entry{std::move(name), {line, 3}, scalar("v")};
}

constexpr std::array<std::string_view, 2> kKnown{"command", "env"};

TEST(ConfigNodeReader, CheckKeyAcceptsKnownKeysOnce) {
  NodeReader::Seen seen;
  EXPECT_TRUE(yaml.check_key(key("command", 1), "s", kKnown, false, seen));
  EXPECT_EQ(error_of([&] { yaml.check_key(key("command", 4), "s", kKnown, false, seen); }),
            "f.yaml:4:3: s: duplicate key 'command' (first at line 1)");
}

TEST(ConfigNodeReader, CheckKeyRejectsUnknownKeysWithASuggestionOrTheList) {
  NodeReader::Seen seen;
  EXPECT_EQ(error_of([&] { yaml.check_key(key("comand", 1), "s", kKnown, false, seen); }),
            "f.yaml:1:3: s: unknown key 'comand' (did you mean 'command'?)");
  EXPECT_EQ(error_of([&] { yaml.check_key(key("zzz", 1), "s", kKnown, false, seen); }),
            "f.yaml:1:3: s: unknown key 'zzz'; expected one of: command, env");
}

TEST(ConfigNodeReader, LenientCheckKeySkipsOtherToolsKeysButNotTypos) {
  NodeReader::Seen seen;
  constexpr std::array<std::string_view, 1> also{"disabled"};
  EXPECT_FALSE(json.check_key(key("autoApprove", 1), "s", kKnown, true, seen));
  EXPECT_FALSE(json.check_key(key("envv", 1), "s", kKnown, true, seen));  // too short to tell
  EXPECT_TRUE(json.check_key(key("disabled", 1), "s", kKnown, true, seen, also));
  EXPECT_EQ(error_of([&] { json.check_key(key("ENV", 2), "s", kKnown, true, seen); }),
            "f.json:2:3: s: unknown key 'ENV' (did you mean 'env'?)");
  EXPECT_EQ(error_of([&] { json.check_key(key("comand", 3), "s", kKnown, true, seen); }),
            "f.json:3:3: s: unknown key 'comand' (did you mean 'command'?)");
}

TEST(ConfigNodeReader, PathsAndNames) {
  EXPECT_EQ(join_path("", "servers"), "servers");
  EXPECT_EQ(join_path("servers", "a"), "servers.a");
  EXPECT_TRUE(is_name_char('a'));
  EXPECT_TRUE(is_name_char('-'));
  EXPECT_TRUE(is_name_char('_'));
  EXPECT_FALSE(is_name_char('.'));
  EXPECT_FALSE(is_name_char(' '));
}

}  // namespace
}  // namespace toolbridge::config
