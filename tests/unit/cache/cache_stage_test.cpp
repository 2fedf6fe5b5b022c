#include "cache/cache_stage.h"

#include <gtest/gtest.h>

#include <string>

#include "cache/canonical.h"
#include "cache/entry.h"
#include "json/envelope.h"

namespace toolbridge::cache {
namespace {

using call::Call;

// A call as a front end makes it (params is an object, its members scanned); with
// `upstream_params`, as repair leaves it after rewriting the arguments.
Call tool_call(std::string params, std::string upstream_params = {}) {
  Call c;
  c.method = "tools/call";
  c.params = std::move(params);
  c.members = json::object_members(c.params).value();
  c.arguments_rewritten = !upstream_params.empty();
  c.upstream_params = std::move(upstream_params);
  c.route.server = "srv";
  c.route.tool = "lookup";
  c.tenant = "run1";
  c.trajectory = "t1";
  return c;
}

std::string key_of_arguments(std::string_view arguments) {
  return make_key("srv", "lookup", Scope::kGlobal, "run1", "t1", *canonical_json(arguments));
}

TEST(CacheStageKey, IsTheKeyOfTheArgumentsTheServerGets) {
  const Plan plan;
  const std::string args = R"({"query":"cpu","delay_ms":0})";
  EXPECT_EQ(CacheStage::key(tool_call(R"({"name":"lookup","arguments":)" + args + "}"), plan),
            key_of_arguments(args));
  // Whitespace, arguments before the name, other members around them.
  EXPECT_EQ(CacheStage::key(tool_call(R"( { "arguments" : { "delay_ms" : 0.0, "query" : "cpu" } ,)"
                                      R"( "name" : "x\"y", "_meta" : {"a":[1,"}"]} } )"),
                            plan),
            key_of_arguments(args));
  // The params the server is sent win over the caller's (repair may have changed them).
  EXPECT_EQ(CacheStage::key(tool_call(R"({"arguments":{"q":1}})", R"({"arguments":{"q":2}})"),
                            plan),
            key_of_arguments(R"({"q":2})"));
}

TEST(CacheStageKey, NamesAreReadAsJson) {
  const Plan plan;
  // An escaped name is the same name; the first "arguments" counts.
  EXPECT_EQ(CacheStage::key(tool_call(R"({"\u0061rguments":{"q":1},"arguments":{"q":2}})"), plan),
            key_of_arguments(R"({"q":1})"));
  EXPECT_EQ(CacheStage::key(tool_call(R"({"arguments":{"q":1},"arguments":{"q":2}})"), plan),
            key_of_arguments(R"({"q":1})"));
  // A member whose string value ends in an escaped backslash.
  EXPECT_EQ(CacheStage::key(tool_call(R"({"name":"a\\","arguments":[1]})"), plan),
            key_of_arguments("[1]"));
}

TEST(CacheStageKey, NoArgumentsAreEmptyArguments) {
  EXPECT_EQ(CacheStage::key(tool_call(R"({"name":"lookup"})"), Plan{}), key_of_arguments("{}"));
  EXPECT_EQ(CacheStage::key(tool_call("{}"), Plan{}), key_of_arguments("{}"));
}

TEST(CacheStageKey, ArgumentsWithoutACanonicalFormHaveNoKey) {
  for (const char* params : {R"({"arguments":{"q":0.1000000000000000055511151231257827}})",
                             R"({"arguments":"\ud800"})"}) {
    EXPECT_EQ(CacheStage::key(tool_call(params), Plan{}), "") << params;
  }
  // Arguments repair rewrote are read from what the server is sent, whatever it holds.
  for (const char* sent : {R"({"arguments":{"q":1})", "[]", R"({"arguments":1} x)"}) {
    EXPECT_EQ(CacheStage::key(tool_call("{}", sent), Plan{}), "") << sent;
  }
}

}  // namespace
}  // namespace toolbridge::cache
