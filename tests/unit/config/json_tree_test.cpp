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

TEST(ConfigJsonTree, KeepsPositionsDuplicatesAndSpelling) {
  const Node root = parse_json("{\n  \"a\": 1.50,\n  \"a\": true,\n  \"b\": null\n}", "f.json");
  ASSERT_EQ(root.kind, Node::Kind::kMap);
  ASSERT_EQ(root.entries.size(), 3u);
  EXPECT_EQ(root.entries[0].key, "a");
  EXPECT_EQ(root.entries[0].value.scalar, "1.50");
  EXPECT_EQ(root.entries[0].key_mark.line, 2);
  EXPECT_EQ(root.entries[0].key_mark.column, 3);
  EXPECT_EQ(root.entries[0].value.mark.column, 8);
  EXPECT_EQ(root.entries[1].key, "a");
  EXPECT_EQ(root.entries[1].value.scalar, "true");
  EXPECT_EQ(root.entries[2].value.kind, Node::Kind::kNull);
}

TEST(ConfigJsonTree, AcceptsCommentsAndTrailingCommas) {
  const Node root = parse_json(
      "// mcp.json\n{\"l\": [1, /* two */ 2,], /* c */ \"s\": \"x\", // end\n}", "f.json");
  ASSERT_EQ(root.entries.size(), 2u);
  ASSERT_EQ(root.entries[0].value.items.size(), 2u);
  EXPECT_EQ(root.entries[0].value.items[1].scalar, "2");
  EXPECT_EQ(root.entries[1].value.scalar, "x");
}

TEST(ConfigJsonTree, DecodesEscapesInKeysAndStrings) {
  const Node root = parse_json(R"({"k\u0041": "a\"b\\c\u00e9", "e": ""})", "f.json");
  EXPECT_EQ(root.entries[0].key, "kA");
  EXPECT_EQ(root.entries[0].value.scalar, "a\"b\\c\xC3\xA9");
  EXPECT_EQ(root.entries[1].value.kind, Node::Kind::kScalar);
  EXPECT_EQ(root.entries[1].value.scalar, "");
}

TEST(ConfigJsonTree, SyntaxErrorsPointAtTheCharacter) {
  EXPECT_EQ(error_of([] { parse_json("{\n  \"a\": 1\n  \"b\": 2\n}", "f.json"); }),
            "f.json:3:3: invalid JSON: syntax error at '\"'");
  EXPECT_EQ(error_of([] { parse_json("{\"a\": [1, 2}", "f.json"); }).rfind("f.json:1:", 0), 0u);
}

}  // namespace
}  // namespace toolbridge::config
