#include "repair/json_repair.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "json/parse.h"

namespace toolbridge::repair {
namespace {

using config::RepairMode;
namespace bj = boost::json;

bj::value parsed(const std::string& text) {
  boost::system::error_code ec;
  bj::value v = json::parse(text, ec);
  EXPECT_FALSE(ec) << text;
  return v;
}

// The repair of `in` in `mode` equals the JSON `want` and reports `fix`.
void expect_repair(std::string_view in, std::string_view want, std::string_view fix,
                   RepairMode mode = RepairMode::kSafe) {
  const JsonRepair r = repair_json(in, mode);
  ASSERT_TRUE(r.ok()) << in << ": " << r.problem;
  EXPECT_EQ(parsed(r.json), parsed(std::string(want))) << in << " -> " << r.json;
  EXPECT_NE(std::find(r.fixes.begin(), r.fixes.end(), fix), r.fixes.end()) << in << ": " << fix;
}

void expect_refused(std::string_view in, RepairMode mode = RepairMode::kSafe) {
  const JsonRepair r = repair_json(in, mode);
  EXPECT_FALSE(r.ok()) << in << " -> " << r.json;
  EXPECT_FALSE(r.problem.empty());
}

TEST(RepairJson, ValidJsonIsUntouched) {
  const JsonRepair r = repair_json(R"({"a": [1, 2.5, "x"], "b": {"c": null}})", RepairMode::kSafe);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.json, R"({"a": [1, 2.5, "x"], "b": {"c": null}})");
  EXPECT_TRUE(r.fixes.empty());
}

TEST(RepairJson, SafeFixesWithOneReading) {
  expect_repair(R"({"a": 1, "b": [1, 2,],})", R"({"a":1,"b":[1,2]})", "trailing_comma");
  expect_repair(R"({'a': 'it\'s "x"'})", R"({"a":"it's \"x\""})", "single_quotes");
  expect_repair(R"({query: "x", max_results: 5})", R"({"query":"x","max_results":5})",
                "unquoted_key");
  expect_repair(R"({"a": True, "b": False, "c": None})", R"({"a":true,"b":false,"c":null})",
                "python_literal");
  expect_repair("{\"a\": 1, // the count\n /* more */ \"b\": 2}", R"({"a":1,"b":2})", "comment");
  expect_repair("```json\n{\"a\": 1}\n```", R"({"a":1})", "code_fence");
  expect_repair("```\n{\"a\": 1}\n```\n", R"({"a":1})", "code_fence");
  expect_repair(
      "{\xE2\x80\x9C"
      "a\xE2\x80\x9D: \xE2\x80\x9C"
      "b\xE2\x80\x9D}",
      R"({"a":"b"})", "smart_quotes");
  expect_repair("{\"code\": \"x = 1\ny = 2\"}", R"({"code":"x = 1\ny = 2"})", "control_character");
  expect_repair(R"({"a": {"b": [1, 2)", R"({"a":{"b":[1,2]}})", "truncated_end");
  expect_repair(R"({"a": "x")", R"({"a":"x"})", "truncated_end");
}

TEST(RepairJson, SafeRefusesWhatNeedsAGuess) {
  expect_refused(R"({"a": "unterminated)");    // where did the string end?
  expect_refused(R"({"a": 1, "b")");           // a key without its value
  expect_refused(R"({"a": 1,)");               // more was coming
  expect_refused(R"({"a": 1 "b": 2})");        // a missing comma
  expect_refused(R"({'text': 'it's here'})");  // an apostrophe or the end?
  expect_refused(R"({"a": hello})");           // a bare word
  expect_refused(R"({"a": 1}})");              // a closer that closes nothing
  expect_refused(R"({"a": 1} and more)");      // text after the value
  expect_refused(R"(Here you go: {"a": 1})");  // prose around it
  expect_refused(R"({"a": NaN})");
  expect_refused(R"({"a": tru)");
  expect_refused("");
  expect_refused("   ");
  expect_refused("{\"a\": 1 /* open comment");
}

TEST(RepairJson, AggressiveGuessesMore) {
  const auto a = RepairMode::kAggressive;
  expect_repair(R"({"a": "unterminated)", R"({"a":"unterminated"})", "truncated_string", a);
  expect_repair(R"({"a": 1, "b")", R"({"a":1})", "dangling_key", a);
  expect_repair(R"({"a": 1, "b":)", R"({"a":1})", "dangling_key", a);
  expect_repair(R"({"a": [1, 2,)", R"({"a":[1,2]})", "truncated_end", a);
  expect_repair(R"({"a": 1 "b": 2})", R"({"a":1,"b":2})", "missing_comma", a);
  expect_repair(R"({'text': 'it's here'})", R"({"text":"it's here"})", "single_quotes", a);
  expect_repair(R"(Here you go: {"a": 1} hope it helps)", R"({"a":1})", "surrounding_text", a);
}

TEST(RepairJson, OffRepairsNothing) {
  expect_refused(R"({"a": 1,})", RepairMode::kOff);
  EXPECT_TRUE(repair_json(R"({"a": 1})", RepairMode::kOff).ok());
}

TEST(RepairJson, BoundedInSizeAndDepth) {
  expect_refused(std::string(kMaxRepairBytes + 1, ' '));
  std::string deep(json::kMaxDepth + 5, '[');
  expect_refused(deep + ",");
  expect_refused(deep, RepairMode::kAggressive);
}

// Every prefix of a call (a cut at every byte) is either repaired into valid JSON or refused
// with a reason; never a crash, never invalid output. Safe mode repairs exactly the cuts right
// after a complete value.
TEST(RepairJson, CutAtEveryByte) {
  const std::string full =
      R"({"query": "caf\u00e9 \"x\"", "n": [1, -2.5e3, true, null], "o": {"k": 'v'}, z: None})";
  for (const RepairMode mode : {RepairMode::kSafe, RepairMode::kAggressive}) {
    std::size_t repaired = 0;
    for (std::size_t cut = 0; cut <= full.size(); ++cut) {
      const JsonRepair r = repair_json(full.substr(0, cut), mode);
      if (!r.ok()) {
        EXPECT_FALSE(r.problem.empty()) << cut;
        continue;
      }
      ++repaired;
      boost::system::error_code ec;
      const bj::value v = json::parse(r.json, ec);
      ASSERT_FALSE(ec) << "cut " << cut << ": " << r.json;
      EXPECT_TRUE(v.is_object()) << r.json;
    }
    EXPECT_GT(repaired, mode == RepairMode::kSafe ? 10u : 40u);
  }
  const JsonRepair whole = repair_json(full, RepairMode::kSafe);
  ASSERT_TRUE(whole.ok()) << whole.problem;
  EXPECT_TRUE(parsed(whole.json).at("z").is_null());
}

// Arbitrary bytes never crash the repairer and never produce invalid JSON.
TEST(RepairJson, ArbitraryBytes) {
  const std::string alphabet = "{}[]:,\"'\\ /*\nTtrueFalseNon0123.-e\xE2\x80\x9C\x9D";
  std::uint32_t seed = 12345;
  for (int i = 0; i < 3000; ++i) {
    std::string in;
    const std::size_t len = 1 + (seed % 40);
    for (std::size_t j = 0; j < len; ++j) {
      seed = seed * 1103515245u + 12345u;
      in += alphabet[(seed >> 16) % alphabet.size()];
    }
    for (const RepairMode mode : {RepairMode::kSafe, RepairMode::kAggressive}) {
      const JsonRepair r = repair_json(in, mode);
      if (!r.ok()) continue;
      boost::system::error_code ec;
      json::parse(r.json, ec);
      EXPECT_FALSE(ec) << in << " -> " << r.json;
    }
  }
}

}  // namespace
}  // namespace toolbridge::repair
