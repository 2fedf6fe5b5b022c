#include <gtest/gtest.h>

#include <string>

#include "config/config.h"
#include "config/tree.h"

namespace toolbridge::config {
namespace {

std::string error_of(auto parse) {
  try {
    parse();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ConfigYamlTree, KeepsPositionsAndOrder) {
  const Node root = parse_yaml("b: 1\na:\n  - x\n  - {k: v}\n", "f.yaml");
  ASSERT_EQ(root.kind, Node::Kind::kMap);
  ASSERT_EQ(root.entries.size(), 2u);
  EXPECT_EQ(root.entries[0].key, "b");
  EXPECT_EQ(root.entries[0].value.scalar, "1");
  EXPECT_EQ(root.entries[0].value.mark.line, 1);
  EXPECT_EQ(root.entries[0].value.mark.column, 4);
  const Node& list = root.entries[1].value;
  EXPECT_EQ(root.entries[1].key_mark.line, 2);
  ASSERT_EQ(list.kind, Node::Kind::kList);
  ASSERT_EQ(list.items.size(), 2u);
  EXPECT_EQ(list.items[0].scalar, "x");
  EXPECT_EQ(list.items[1].kind, Node::Kind::kMap);
  EXPECT_EQ(list.items[1].entries[0].key_mark.line, 4);
}

TEST(ConfigYamlTree, EmptyValueIsNullAtItsKey) {
  const Node root = parse_yaml("servers:\n\nnext: 1\n", "f.yaml");
  const Entry& servers = root.entries[0];
  EXPECT_EQ(servers.value.kind, Node::Kind::kNull);
  EXPECT_EQ(servers.value.mark.line, 1);
  EXPECT_EQ(servers.value.mark.column, servers.key_mark.column);
}

TEST(ConfigYamlTree, SyntaxErrorHasAPosition) {
  EXPECT_EQ(error_of([] { parse_yaml("a: [1, 2\n", "f.yaml"); }).rfind("f.yaml:", 0), 0u);
  EXPECT_EQ(error_of([] { parse_yaml("? [a]\n: 1\n", "f.yaml"); }),
            "f.yaml:1:3: a key must be plain text");
}

}  // namespace
}  // namespace toolbridge::config
