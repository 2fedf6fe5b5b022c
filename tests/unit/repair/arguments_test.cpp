#include "repair/arguments.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;
using config::RepairMode;

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "query": {"type": "string"},
    "max_results": {"type": "integer", "default": 10},
    "ratio": {"type": "number"},
    "exact": {"type": "boolean"},
    "mode": {"type": "string", "enum": ["web", "news"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "filters": {"type": "object"},
    "code_block": {"type": "string"},
    "sandbox_id": {"type": "string"},
    "page": {"type": "integer", "default": 1}
  },
  "required": ["query", "page"]
})";

struct Fixture {
  std::shared_ptr<const ToolSchema> schema = ToolSchema::compile(bj::parse(kSchema));
  config::RepairSettings settings;

  ArgumentRepair repair(std::string_view raw) const {
    return repair_arguments(raw, schema.get(), settings);
  }
  // The repaired arguments as a value (the input itself when nothing changed).
  bj::value after(std::string_view raw) const {
    const ArgumentRepair r = repair(raw);
    EXPECT_TRUE(r.problem.empty()) << r.problem;
    return bj::parse(r.arguments ? *r.arguments : std::string(raw));
  }
  std::vector<std::string> kinds(std::string_view raw) const {
    std::vector<std::string> out;
    for (const auto& c : repair(raw).changes) out.emplace_back(c.kind);
    return out;
  }
};

TEST(RepairArguments, AValidCallIsNotTouchedNorParsedForRepair) {
  Fixture f;
  const std::string_view valid = R"({"query": "x", "page": 2, "mode": "web", "tags": ["a"]})";
  EXPECT_FALSE(may_need_repair(valid, *f.schema, f.settings));
  const ArgumentRepair r = f.repair(valid);
  EXPECT_FALSE(r.arguments);
  EXPECT_TRUE(r.changes.empty());
}

TEST(RepairArguments, TheScanFlagsWhatMayNeedRepair) {
  Fixture f;
  EXPECT_TRUE(may_need_repair(R"({"query": "x", "page": "2"})", *f.schema, f.settings));
  EXPECT_TRUE(may_need_repair(R"({"q": "x", "page": 2})", *f.schema, f.settings));
  EXPECT_TRUE(may_need_repair(R"({"query": "x"})", *f.schema, f.settings));  // default for page
  EXPECT_TRUE(
      may_need_repair(R"({"query": "x", "page": 1, "mode": "Web"})", *f.schema, f.settings));
  EXPECT_TRUE(
      may_need_repair(R"({"query": "x", "page": 1, "exact": null})", *f.schema, f.settings));
  f.settings.repair = RepairMode::kOff;
  EXPECT_FALSE(may_need_repair(R"({"query": "x", "page": "2"})", *f.schema, f.settings));
}

TEST(RepairArguments, ParameterNamesLikeToolNamesAndAliases) {
  Fixture f;
  f.settings.param_aliases = {{"code", "code_block"}};
  EXPECT_EQ(f.after(R"({"Query": "x", "page": 1})"), bj::parse(R"({"query": "x", "page": 1})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "max-results": 3})"),
            bj::parse(R"({"query": "x", "page": 1, "max_results": 3})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "sandbox_di": "s"})"),
            bj::parse(R"({"query": "x", "page": 1, "sandbox_id": "s"})"));
  EXPECT_EQ(f.after(R"j({"query": "x", "page": 1, "code": "print(1)"})j"),
            bj::parse(R"j({"query": "x", "page": 1, "code_block": "print(1)"})j"));
  EXPECT_EQ(f.kinds(R"({"query": "x", "page": 1, "code": "1"})"),
            std::vector<std::string>{"param_alias"});
  // Never over a parameter the call also gives under its own name.
  EXPECT_EQ(f.after(R"({"query": "x", "Query": "y", "page": 1})"),
            bj::parse(R"({"query": "x", "Query": "y", "page": 1})"));
}

TEST(RepairArguments, ValuesCoercedWhereTheSchemaIsClear) {
  Fixture f;
  EXPECT_EQ(f.after(R"({"query": "x", "page": "2"})"), bj::parse(R"({"query": "x", "page": 2})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "ratio": "0.5"})"),
            bj::parse(R"({"query": "x", "page": 1, "ratio": 0.5})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "exact": "true"})"),
            bj::parse(R"({"query": "x", "page": 1, "exact": true})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "tags": "a"})"),
            bj::parse(R"({"query": "x", "page": 1, "tags": ["a"]})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "tags": "[\"a\", \"b\"]"})"),
            bj::parse(R"({"query": "x", "page": 1, "tags": ["a", "b"]})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "filters": "{\"lang\": \"en\"}"})"),
            bj::parse(R"({"query": "x", "page": 1, "filters": {"lang": "en"}})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "mode": "News"})"),
            bj::parse(R"({"query": "x", "page": 1, "mode": "news"})"));
  EXPECT_EQ(f.kinds(R"({"query": "x", "page": "2"})"), std::vector<std::string>{"type_coerced"});
}

TEST(RepairArguments, WhatMustNotBeRepaired) {
  Fixture f;
  // A number where a string enum is expected: which member would it be?
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": 1, "mode": 1})").arguments);
  // "2.5" for an integer, "yes" for a boolean, a number for a string: not one reading.
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": "2.5"})").arguments);
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": 1, "exact": "yes"})").arguments);
  EXPECT_FALSE(f.repair(R"({"query": 5, "page": 1})").arguments);
  // A number in an array of strings is not wrapped.
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": 1, "tags": 5})").arguments);
  // A required parameter missing with no default: nothing to fill it with.
  EXPECT_FALSE(f.repair(R"({"page": 1})").arguments);
  // Unknown parameters stay when the schema allows additional ones.
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": 1, "zzzzzz": 1})").arguments);
  // A name too short to guess from.
  EXPECT_FALSE(f.repair(R"({"query": "x", "page": 1, "pag": 1})").arguments);
}

TEST(RepairArguments, DefaultsOfRequiredParametersAndNullsOfOptionalOnes) {
  Fixture f;
  EXPECT_EQ(f.after(R"({"query": "x"})"), bj::parse(R"({"query": "x", "page": 1})"));
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "exact": null})"),
            bj::parse(R"({"query": "x", "page": 1})"));
  EXPECT_EQ(f.kinds(R"({"query": "x", "page": 1, "exact": null})"),
            std::vector<std::string>{"null_dropped"});
  // Absent arguments get the default too.
  const ArgumentRepair absent = f.repair("");
  ASSERT_TRUE(absent.arguments);
  EXPECT_EQ(bj::parse(*absent.arguments), bj::parse(R"({"page": 1})"));
}

TEST(RepairArguments, UnknownParametersDroppedOnlyWhenForbidden) {
  Fixture f;
  bj::value closed = bj::parse(kSchema);
  closed.as_object()["additionalProperties"] = false;
  f.schema = ToolSchema::compile(closed);
  EXPECT_EQ(f.after(R"({"query": "x", "page": 1, "zzzzzz": 1})"),
            bj::parse(R"({"query": "x", "page": 1})"));
  EXPECT_EQ(f.kinds(R"({"query": "x", "page": 1, "zzzzzz": 1})"),
            std::vector<std::string>{"unknown_param_dropped"});
}

TEST(RepairArguments, ArgumentsThatAreNotAnObject) {
  Fixture f;
  EXPECT_EQ(f.after(R"("{\"query\": \"x\", \"page\": 1}")"),
            bj::parse(R"({"query": "x", "page": 1})"));
  EXPECT_EQ(f.after(R"("{'query': 'x', 'page': 1,}")"), bj::parse(R"({"query": "x", "page": 1})"));
  const auto kinds = f.kinds(R"("{'query': 'x', 'page': 1,}")");
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"arguments_string", "single_quotes", "trailing_comma"}));
  EXPECT_EQ(f.after("null"), bj::parse(R"({"page": 1})"));
  EXPECT_NE(f.repair("[1]").problem.find("not array"), std::string::npos);
  EXPECT_NE(f.repair(R"("just words")").problem.find("not JSON"), std::string::npos);
  EXPECT_NE(f.repair(R"("[1, 2]")").problem.find("array"), std::string::npos);
  f.settings.repair = RepairMode::kOff;
  EXPECT_NE(f.repair(R"("{\"query\": \"x\"}")").problem.find("repair is off"), std::string::npos);
}

TEST(RepairArguments, WithoutASchemaOnlyTheShape) {
  config::RepairSettings s;
  const ArgumentRepair r = repair_arguments(R"("{\"a\": 1}")", nullptr, s);
  ASSERT_TRUE(r.arguments);
  EXPECT_EQ(bj::parse(*r.arguments), bj::parse(R"({"a": 1})"));
  EXPECT_FALSE(repair_arguments(R"({"a": "1"})", nullptr, s).arguments);
}

TEST(RepairArguments, NameMatchingIsBoundedPerCall) {
  Fixture f;
  std::string many = R"({"query": "x", "page": 1)";
  for (int i = 0; i < 100; ++i) many += ",\"zz" + std::to_string(i) + "zz\": 1";
  const std::string late = many + R"(, "Sandbox_ID": "s"})";
  // The 101st unknown name is past the bound: left as it was.
  EXPECT_FALSE(f.repair(late).arguments);
  EXPECT_TRUE(f.repair(R"({"query": "x", "page": 1, "Sandbox_ID": "s"})").arguments);
}

TEST(RepairArguments, ObjectsInsideTheArgumentsAreRepairedTheSameWay) {
  // server-memory's create_entities, as it lists it.
  config::RepairSettings settings;
  const auto schema = ToolSchema::compile(bj::parse(R"({"type": "object", "properties": {
      "entities": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "entityType": {"type": "string"},
        "observations": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "entityType", "observations"], "additionalProperties": false}}},
      "required": ["entities"], "additionalProperties": false})"));
  ASSERT_TRUE(schema->nested());
  const std::string_view raw =
      R"({"entities": [{"name": "A", "entity_type": "person", "observations": "likes tea"},
                       {"name": "B", "entityType": "cat", "observations": ["x"], "age": 3}]})";
  EXPECT_TRUE(may_need_repair(raw, *schema, settings));
  const ArgumentRepair r = repair_arguments(raw, schema.get(), settings);
  ASSERT_TRUE(r.arguments);
  EXPECT_EQ(bj::parse(*r.arguments), bj::parse(R"({"entities": [
      {"name": "A", "entityType": "person", "observations": ["likes tea"]},
      {"name": "B", "entityType": "cat", "observations": ["x"]}]})"));
  std::vector<std::string> where;
  for (const auto& c : r.changes) where.push_back(std::string(c.kind) + " " + c.path);
  EXPECT_EQ(where, (std::vector<std::string>{"param_name /entities/0/entity_type",
                                             "wrapped_in_array /entities/0/observations",
                                             "unknown_param_dropped /entities/1/age"}));
  // A valid nested call is parsed (the scan cannot see inside) but left as it was.
  EXPECT_FALSE(
      repair_arguments(R"({"entities": [{"name": "A", "entityType": "p", "observations": []}]})",
                       schema.get(), settings)
          .arguments);
}

TEST(RepairArguments, ChangesSayFromWhatToWhat) {
  Fixture f;
  const ArgumentRepair r = f.repair(R"({"query": "x", "page": "2"})");
  ASSERT_EQ(r.changes.size(), 1u);
  EXPECT_EQ(r.changes[0].path, "/page");
  EXPECT_EQ(r.changes[0].from, "\"2\"");
  EXPECT_EQ(r.changes[0].to, "2");
}

}  // namespace
}  // namespace toolbridge::repair
