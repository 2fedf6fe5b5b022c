#include "parse/tool_index.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "parse_support.h"
#include "upstream/instance.h"

namespace toolbridge::parse {
namespace {

namespace bj = boost::json;

const char* kRunSchema = R"({"type": "object", "properties": {
  "code": {"type": "string"}, "timeout": {"type": "integer"}, "ratio": {"type": "number"},
  "verbose": {"type": "boolean"}, "env": {"type": "object"}, "files": {"type": "array"}}})";

struct IndexFixture {
  upstream::Catalog sandbox, search;
  catalog::Catalog catalog;
  config::Config config;

  IndexFixture() {
    sandbox.tools.push_back(
        bj::object{{"name", "run_code"}, {"inputSchema", bj::parse(kRunSchema)}});
    sandbox.tools.push_back(bj::object{{"name", "lookup"}, {"inputSchema", bj::object{}}});
    search.tools.push_back(bj::object{{"name", "web_search"}, {"inputSchema", bj::object{}}});
    search.tools.push_back(bj::object{{"name", "lookup"}, {"inputSchema", bj::object{}}});
    rebuild();
    for (const char* name : {"sandbox", "search"}) {
      config::Server s;
      s.name = name;
      config.servers.push_back(s);
    }
  }
  void rebuild() {
    catalog.rebuild(
        std::vector<catalog::Catalog::Source>{{"sandbox", &sandbox}, {"search", &search}},
        config::ToolNaming::kPrefixed, "__");
  }
  ParsedCall resolve(const RawCall& raw, std::string* why_out = nullptr) {
    ToolIndex index(catalog, config);
    ParsedCall out;
    const base::Status resolved = index.resolve(raw, out);
    if (why_out) *why_out = resolved.error();
    EXPECT_EQ(resolved.ok(), resolved.error().empty());
    return out;
  }
};

RawCall raw(std::string name, std::string arguments, std::string server = "") {
  RawCall r;
  r.name = std::move(name);
  r.arguments = std::move(arguments);
  r.server = std::move(server);
  return r;
}

TEST(ToolIndex, Qwen3ValuesAreConvertedByTheSchemaTypes) {
  IndexFixture f;
  RawCall r;
  r.name = "sandbox__run_code";
  r.parameters = {{"code", "print(1)"}, {"timeout", "30"},         {"ratio", "0.5"},
                  {"verbose", "True"},  {"env", "{\"A\": \"1\"}"}, {"files", "[\"a\"]"},
                  {"unknown", "7"}};
  const ParsedCall c = f.resolve(r);
  EXPECT_TRUE(c.resolved);
  EXPECT_EQ(bj::parse(c.arguments),
            bj::parse(R"js({"code":"print(1)","timeout":30,"ratio":0.5,"verbose":true,)js"
                      R"js("env":{"A":"1"},"files":["a"],"unknown":"7"})js"));
  EXPECT_TRUE(c.repairs.empty());
}

TEST(ToolIndex, ConvertParameterKeepsTextThatIsNotTheType) {
  EXPECT_EQ(convert_parameter("12x", {"integer"}), "\"12x\"");
  EXPECT_EQ(convert_parameter("null", {"integer"}), "null");
  EXPECT_EQ(convert_parameter("5", {"string"}), "\"5\"");
  EXPECT_EQ(convert_parameter("5", {}), "\"5\"");
  EXPECT_EQ(convert_parameter("yes", {"boolean"}), "\"yes\"");
  EXPECT_EQ(convert_parameter("1e3", {"number"}), "1E3");
}

TEST(ToolIndex, NamesResolveWithoutServerAndByServerAndTool) {
  IndexFixture f;
  const ParsedCall bare = f.resolve(raw("run_code", "{}"));
  EXPECT_EQ(bare.name, "sandbox__run_code");
  ASSERT_EQ(bare.repairs.size(), 1u);
  EXPECT_EQ(bare.repairs[0].kind, "tool_name");
  const ParsedCall miro = f.resolve(raw("web_search", "{}", "search"));
  EXPECT_EQ(miro.name, "search__web_search");
  EXPECT_TRUE(miro.repairs.empty());
  EXPECT_EQ(miro.written, "search web_search");
  const ParsedCall ambiguous = f.resolve(raw("lookup", "{}"));
  EXPECT_FALSE(ambiguous.resolved);
  EXPECT_NE(ambiguous.problem.find("sandbox__lookup"), std::string::npos) << ambiguous.problem;
  // A server name that is the tool's own, or another server's (issue 34's eval bench): the
  // tool's own name is unique, so it is the one.
  const ParsedCall twice = f.resolve(raw("web_search", "{}", "web_search"));
  EXPECT_EQ(twice.name, "search__web_search") << twice.problem;
  ASSERT_EQ(twice.repairs.size(), 1u);
  EXPECT_EQ(twice.repairs[0].kind, "tool_name");
  EXPECT_EQ(f.resolve(raw("run_code", "{}", "search")).name, "sandbox__run_code");
  // Not when the name is not unique: that stays a question for the model.
  EXPECT_FALSE(f.resolve(raw("lookup", "{}", "lookup")).resolved);
  const ParsedCall unknown = f.resolve(raw("zzz_nothing_like_it", "{}"));
  EXPECT_FALSE(unknown.resolved);
  EXPECT_NE(unknown.problem.find("Unknown tool"), std::string::npos);
}

TEST(ToolIndex, ArgumentsDecodedRepairedAndNullsDropped) {
  IndexFixture f;
  const ParsedCall s = f.resolve(raw("sandbox__run_code", "\"{\\\"code\\\": \\\"x\\\"}\""));
  EXPECT_EQ(s.arguments, R"({"code":"x"})");
  EXPECT_EQ(s.repairs.back().kind, "arguments_decoded");
  const ParsedCall fixed = f.resolve(raw("sandbox__run_code", "{'code': 'x',}"));
  EXPECT_EQ(fixed.arguments, R"({"code":"x"})");
  EXPECT_EQ(fixed.repairs.front().kind, "json_repaired");
  RawCall miro = raw("web_search", R"({"q": "x", "page": null})", "search");
  miro.drop_nulls = true;
  const ParsedCall dropped = f.resolve(miro);
  EXPECT_EQ(dropped.arguments, R"({"q":"x"})");
  EXPECT_EQ(dropped.repairs.back().kind, "null_dropped");
  std::string why;
  f.resolve(raw("sandbox__run_code", "[1, 2]"), &why);
  EXPECT_EQ(why, "the arguments are not a JSON object");
  f.resolve(raw("sandbox__run_code", "{\"code\": \"unterminated"), &why);
  EXPECT_NE(why.find("not JSON"), std::string::npos);
}

TEST(ToolIndexCache, BuiltOncePerCatalogVersion) {
  IndexFixture f;
  EXPECT_EQ(f.catalog.version(), 1u);
  ToolIndexCache cache;
  const ToolIndex* first = &cache.get(f.catalog, f.config);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(&cache.get(f.catalog, f.config), first);
  EXPECT_EQ(cache.builds(), 1u);
  f.rebuild();  // the same lists again: the same version, the index stays
  EXPECT_EQ(f.catalog.version(), 1u);
  EXPECT_EQ(&cache.get(f.catalog, f.config), first);
  EXPECT_EQ(cache.builds(), 1u);
  f.search.tools.push_back(bj::object{{"name", "news"}, {"inputSchema", bj::object{}}});
  f.rebuild();
  EXPECT_EQ(f.catalog.version(), 2u);
  for (int i = 0; i < 100; ++i) cache.get(f.catalog, f.config);
  EXPECT_EQ(cache.builds(), 2u);
  // A schema change alone is a new version too (qwen3_coder converts values by it).
  f.search.tools.back() =
      bj::object{{"name", "news"},
                 {"inputSchema", bj::parse(R"({"properties": {"n": {"type": "integer"}}})")}};
  f.rebuild();
  EXPECT_EQ(f.catalog.version(), 3u);
  cache.get(f.catalog, f.config);
  EXPECT_EQ(cache.builds(), 3u);
  ParsedCall out;
  ASSERT_TRUE(cache.get(f.catalog, f.config).resolve(raw("news", "{}"), out));
  EXPECT_EQ(out.name, "search__news");
}

}  // namespace
}  // namespace toolbridge::parse
