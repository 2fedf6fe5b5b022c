#include "repair/schema.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "catalog/catalog.h"
#include "upstream/instance.h"

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;

const char* kSearch = R"({
  "type": "object",
  "properties": {
    "query": {"type": "string"},
    "limit": {"type": "integer", "default": 10, "minimum": 1},
    "mode": {"type": "string", "enum": ["web", "news"]},
    "tags": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["query"],
  "additionalProperties": false
})";

TEST(RepairSchema, DigestOfTheParameters) {
  const auto s = ToolSchema::compile(bj::parse(kSearch));
  ASSERT_TRUE(s->compiled()) << s->error();
  EXPECT_TRUE(s->closed());
  ASSERT_EQ(s->parameters().size(), 4u);
  EXPECT_TRUE(s->parameter("query")->required);
  EXPECT_FALSE(s->parameter("limit")->required);
  EXPECT_EQ(*s->parameter("limit")->default_value, bj::value(10));
  EXPECT_EQ(s->parameter("mode")->quoted_enum, (std::vector<std::string>{"\"web\"", "\"news\""}));
  EXPECT_EQ(s->parameter("tags")->item_types, std::vector<std::string>{"string"});
  EXPECT_TRUE(s->parameter("limit")->accepts("integer"));
  EXPECT_FALSE(s->parameter("limit")->accepts("number"));
  EXPECT_EQ(s->parameter("nope"), nullptr);
}

TEST(RepairSchema, ValidArgumentsHaveNoViolations) {
  const auto s = ToolSchema::compile(bj::parse(kSearch));
  EXPECT_TRUE(s->validate(bj::parse(R"({"query": "x", "limit": 3, "mode": "web"})")).empty());
}

TEST(RepairSchema, EveryViolationByPointer) {
  const auto s = ToolSchema::compile(bj::parse(kSearch));
  const auto v = s->validate(bj::parse(R"({"limit": "3", "mode": "blogs", "tags": [1], "x": 1})"));
  std::vector<std::string> pointers;
  for (const auto& x : v) pointers.push_back(x.pointer);
  auto has = [&](const std::string& p) {
    return std::find(pointers.begin(), pointers.end(), p) != pointers.end();
  };
  EXPECT_TRUE(has("")) << "missing query, additional x";
  EXPECT_TRUE(has("/limit"));
  EXPECT_TRUE(has("/mode"));
  EXPECT_TRUE(has("/tags/0"));
  for (const auto& x : v) EXPECT_FALSE(x.message.empty());
}

TEST(RepairSchema, ASchemaThatDoesNotCompileIsKeptWithItsError) {
  const auto s = ToolSchema::compile(bj::parse(R"({"type": "object", "$ref": "http://x/y#"})"));
  EXPECT_FALSE(s->compiled());
  EXPECT_FALSE(s->error().empty());
  EXPECT_TRUE(s->validate(bj::parse("{}")).empty());
  EXPECT_FALSE(ToolSchema::compile(bj::parse("[]"))->compiled());
}

bool scan(const ToolSchema& s, std::string_view raw) {
  return s.valid_by_scan(raw, *json::object_members(raw));
}

TEST(RepairSchema, OneScanProvesSimpleCallsValid) {
  const auto s = ToolSchema::compile(bj::parse(R"({"type": "object", "properties": {
      "q": {"type": "string", "description": "d"}, "n": {"type": ["integer", "null"]},
      "mode": {"type": "string", "enum": ["a", "b"]}}, "required": ["q"],
      "additionalProperties": false})"));
  EXPECT_TRUE(scan(*s, R"({"q": "x"})"));
  EXPECT_TRUE(scan(*s, R"({"q": "x", "n": 3, "mode": "b"})"));
  EXPECT_TRUE(scan(*s, R"({"q": "x", "n": null})"));
  // Not proven: validate() decides (and finds these invalid).
  EXPECT_FALSE(scan(*s, R"({"n": 3})"));
  EXPECT_FALSE(scan(*s, R"({"q": 1})"));
  EXPECT_FALSE(scan(*s, R"({"q": "x", "mode": "c"})"));
  EXPECT_FALSE(scan(*s, R"({"q": "x", "other": 1})"));
  EXPECT_FALSE(scan(*s, R"({"q": "x", "n": 2.5})"));
  const auto two = ToolSchema::compile(bj::parse(R"({"type": "object", "properties": {
      "a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]})"));
  EXPECT_FALSE(scan(*two, R"({"a": "x", "a": "y"})")) << "a name given twice counts once";
  // Keywords the scan does not check make a schema validate()'s alone.
  const auto bounded = ToolSchema::compile(
      bj::parse(R"({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}})"));
  EXPECT_FALSE(scan(*bounded, R"({"n": 5})"));
  const auto nested = ToolSchema::compile(bj::parse(
      R"({"type": "object", "properties": {"t": {"type": "array", "items": {"type": "string"}}}})"));
  EXPECT_FALSE(scan(*nested, R"({"t": ["a"]})"));
}

TEST(RepairSchema, JsonTypes) {
  EXPECT_EQ(json_type(bj::parse("5")), "integer");
  EXPECT_EQ(json_type(bj::parse("5.0")), "integer");
  EXPECT_EQ(json_type(bj::parse("5.5")), "number");
  EXPECT_EQ(json_type(bj::parse("\"5\"")), "string");
  EXPECT_EQ(json_type(bj::parse("null")), "null");
}

TEST(RepairSchema, CompiledOnceWithTheCatalogAndErrorsReported) {
  upstream::Catalog lists;
  lists.tools.push_back(bj::object{{"name", "a"}, {"inputSchema", bj::parse(kSearch)}});
  lists.tools.push_back(bj::object{{"name", "b"}, {"inputSchema", bj::parse(kSearch)}});
  lists.tools.push_back(
      bj::object{{"name", "bad"}, {"inputSchema", bj::parse(R"({"$ref": "http://x/y#"})")}});
  lists.tools.push_back(bj::object{{"name", "none"}});
  catalog::Catalog c;
  const std::vector<catalog::Catalog::Source> sources{{"s", &lists}};
  c.rebuild(sources, config::ToolNaming::kPrefixed, "__");
  const auto* a = c.tool("s__a");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a->schema, nullptr);
  EXPECT_EQ(a->schema, c.tool("s__b")->schema) << "one compiled schema per distinct schema";
  EXPECT_EQ(c.tool("s__none")->schema, nullptr);
  ASSERT_EQ(c.schema_errors().size(), 1u);
  EXPECT_TRUE(c.schema_errors()[0].starts_with("s__bad: ")) << c.schema_errors()[0];
  // A rebuild (a list changed elsewhere) keeps what did not change.
  const auto before = a->schema;
  c.rebuild(sources, config::ToolNaming::kPrefixed, "__");
  EXPECT_EQ(c.tool("s__a")->schema, before);
  EXPECT_EQ(c.schema_errors().size(), 1u);
}

}  // namespace
}  // namespace toolbridge::repair
