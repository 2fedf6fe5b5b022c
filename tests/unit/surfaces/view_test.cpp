// A surface's view over the catalog: which tools it shows, under which names and descriptions,
// the schema without its hidden arguments, the fingerprint (stable, and moved by any change the
// model can see), and the stage that maps a call by a shown name back to the gateway's tool.
#include "surfaces/view.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>

#include "call/call.h"
#include "catalog/catalog.h"
#include "json/envelope.h"
#include "surfaces/registry.h"
#include "surfaces/surface_stage.h"
#include "upstream/instance.h"

namespace toolbridge::surfaces {
namespace {

namespace bj = boost::json;
using config::Surface;
using config::SurfaceSelector;
using config::SurfaceTool;

bj::object tool(const char* server, const char* name, bool read_only = false) {
  bj::object def{{"name", std::string(server) + "__" + name},
                 {"description", std::string("the ") + name + " tool"},
                 {"inputSchema",
                  bj::object{{"type", "object"},
                             {"properties", bj::object{{"text", bj::object{{"type", "string"}}},
                                                       {"mode", bj::object{{"type", "string"}}}}},
                             {"required", bj::array{"text", "mode"}}}},
                 {"_meta", bj::object{{"toolbridge/server", server}, {"toolbridge/name", name}}}};
  if (read_only) def["annotations"] = bj::object{{"readOnlyHint", true}};
  return def;
}

bj::array catalog_tools() {
  return bj::array{tool("fixture", "echo"),         tool("fixture", "add"),
                   tool("fixture", "lookup", true), tool("fixture", "crash"),
                   tool("files", "read", true),     tool("files", "write")};
}

std::vector<std::string> shown(const View& v) {
  std::vector<std::string> out;
  for (const Tool& t : v.tools()) out.push_back(t.shown);
  return out;
}

TEST(SurfaceGlob, MatchesStarsAndQuestionMarks) {
  EXPECT_TRUE(glob_match("fixture__*", "fixture__echo"));
  EXPECT_TRUE(glob_match("*__e?ho", "fixture__echo"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "axxbyyc"));
  EXPECT_FALSE(glob_match("a*b*c", "axxbyy"));
  EXPECT_FALSE(glob_match("fixture__?", "fixture__echo"));
  EXPECT_FALSE(glob_match("echo", "fixture__echo"));
  // Many stars over a long text finish quickly (one backtrack point).
  EXPECT_FALSE(glob_match(std::string(100, '*') + "b", std::string(10000, 'a')));
}

TEST(SurfaceView, SelectsByServerNameGlobAndAnnotation) {
  Surface by_server{"s", {SurfaceSelector{.server = "files"}}, {}, {}};
  EXPECT_EQ(shown(*View::build(by_server, catalog_tools())),
            (std::vector<std::string>{"files__read", "files__write"}));
  Surface by_name{"s", {SurfaceSelector{.name = "fixture__add"}}, {}, {}};
  EXPECT_EQ(shown(*View::build(by_name, catalog_tools())),
            (std::vector<std::string>{"fixture__add"}));
  Surface by_glob{"s", {SurfaceSelector{.glob = "*__*o*"}}, {}, {}};
  EXPECT_EQ(shown(*View::build(by_glob, catalog_tools())),
            (std::vector<std::string>{"fixture__echo", "fixture__lookup"}));
  Surface by_hint{"s", {SurfaceSelector{.annotation = "readOnlyHint"}}, {}, {}};
  EXPECT_EQ(shown(*View::build(by_hint, catalog_tools())),
            (std::vector<std::string>{"files__read", "fixture__lookup"}));
  // Every key of one rule must match; any rule may; exclude takes out.
  Surface both{"s",
               {SurfaceSelector{.server = "fixture", .annotation = "readOnlyHint"},
                SurfaceSelector{.server = "files"}},
               {SurfaceSelector{.glob = "*write"}},
               {}};
  EXPECT_EQ(shown(*View::build(both, catalog_tools())),
            (std::vector<std::string>{"files__read", "fixture__lookup"}));
}

TEST(SurfaceView, ListsRenamedRedescribedToolsWithoutHiddenArguments) {
  Surface s{"bench", {}, {}, {}};
  s.tools["fixture__echo"] = SurfaceTool{"say", "Repeats text.", "Say", R"({"mode":"loud"})"};
  s.tools["fixture__add"] = SurfaceTool{};
  auto view = View::build(s, catalog_tools());
  EXPECT_EQ(shown(*view), (std::vector<std::string>{"fixture__add", "say"}));
  const bj::object list = bj::parse(view->tools_json()).as_object();
  const bj::array& tools = list.at("tools").as_array();
  ASSERT_EQ(tools.size(), 2u);
  const bj::object& say = tools[1].as_object();
  EXPECT_EQ(say.at("name").as_string(), "say");
  EXPECT_EQ(say.at("description").as_string(), "Repeats text.");
  EXPECT_EQ(say.at("title").as_string(), "Say");
  const bj::object& schema = say.at("inputSchema").as_object();
  EXPECT_FALSE(schema.at("properties").as_object().contains("mode"));
  EXPECT_TRUE(schema.at("properties").as_object().contains("text"));
  EXPECT_EQ(bj::serialize(schema.at("required")), R"(["text"])");
  // The untouched tool is as the catalog has it.
  EXPECT_EQ(tools[0].as_object().at("description").as_string(), "the add tool");
  const bj::object& meta = list.at("_meta").at("toolbridge/surface").as_object();
  EXPECT_EQ(meta.at("name").as_string(), "bench");
  EXPECT_EQ(std::string(meta.at("fingerprint").as_string()), view->fingerprint());
  const Tool* t = view->find("say");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->exposed, "fixture__echo");
  EXPECT_EQ(t->server, "fixture");
  EXPECT_EQ(t->original, "echo");
  EXPECT_EQ(view->find("fixture__echo"), nullptr);  // the gateway name is not shown
}

TEST(SurfaceView, FingerprintIsStableAndMovesWithWhatTheModelSees) {
  Surface s{"bench", {SurfaceSelector{.server = "fixture"}}, {}, {}};
  const std::string base = View::build(s, catalog_tools())->fingerprint();
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(View::build(s, catalog_tools())->fingerprint(), base);
  // The catalog's order and its _meta do not matter; key order does not either.
  bj::array reordered = catalog_tools();
  std::reverse(reordered.begin(), reordered.end());
  reordered[0].as_object()["_meta"].as_object()["extra"] = 1;
  EXPECT_EQ(View::build(s, reordered)->fingerprint(), base);
  // A description override, a rename, a hidden argument or a server's own change moves it.
  Surface described = s;
  described.tools["fixture__echo"] = SurfaceTool{.description = "Repeats text."};
  EXPECT_NE(View::build(described, catalog_tools())->fingerprint(), base);
  Surface renamed = s;
  renamed.tools["fixture__echo"] = SurfaceTool{.name = "say"};
  EXPECT_NE(View::build(renamed, catalog_tools())->fingerprint(), base);
  Surface hidden = s;
  hidden.tools["fixture__echo"] = SurfaceTool{.defaults = R"({"mode":"x"})"};
  EXPECT_NE(View::build(hidden, catalog_tools())->fingerprint(), base);
  bj::array changed = catalog_tools();
  changed[1].as_object()["description"] = "adds";
  EXPECT_NE(View::build(s, changed)->fingerprint(), base);
  // A tool of another server (not in the surface) does not.
  bj::array more = catalog_tools();
  more.push_back(tool("files", "delete"));
  EXPECT_EQ(View::build(s, more)->fingerprint(), base);
}

TEST(SurfaceView, ARenameOntoAListedNameTakesItAndReportsTheOther) {
  Surface s{"s", {SurfaceSelector{.server = "fixture"}}, {}, {}};
  s.tools["fixture__echo"] = SurfaceTool{.name = "fixture__add"};
  auto view = View::build(s, catalog_tools());
  const Tool* t = view->find("fixture__add");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->exposed, "fixture__echo");
  ASSERT_EQ(view->problems().size(), 1u);
  EXPECT_NE(view->problems()[0].find("'fixture__add' is left out"), std::string::npos);
}

TEST(SurfaceView, HiddenDefaultsArePinned) {
  EXPECT_EQ(bj::parse(*with_defaults(R"({"text":"hi","mode":"quiet"})", R"({"mode":"loud"})")),
            bj::parse(R"({"text":"hi","mode":"loud"})"));
  EXPECT_EQ(*with_defaults("", R"({"mode":"loud"})"), R"({"mode":"loud"})");
  EXPECT_FALSE(with_defaults("[1]", R"({"mode":"loud"})"));
}

call::Call tool_call(const std::string& params) {
  call::Call call;
  call.method = "tools/call";
  call.params = params;
  call.members = *json::object_members(call.params);
  return call;
}

TEST(SurfaceStage, MapsAShownNameToTheGatewaysToolWithItsDefaults) {
  Surface s{"bench", {SurfaceSelector{.name = "fixture__add"}}, {}, {}};
  s.tools["fixture__echo"] = SurfaceTool{.name = "say", .defaults = R"({"mode":"loud"})"};
  auto view = View::build(s, catalog_tools());
  call::Call call = tool_call(R"({"name":"say","arguments":{"text":"hi"},"_meta":{"k":1}})");
  EXPECT_FALSE(SurfaceStage::translate(call, *view));
  EXPECT_EQ(call.string_member("name"), "fixture__echo");
  EXPECT_EQ(bj::parse(call.member("arguments")), bj::parse(R"({"text":"hi","mode":"loud"})"));
  EXPECT_EQ(call.member("_meta"), R"({"k":1})");
  // A tool without defaults keeps its arguments byte for byte.
  call::Call add = tool_call(R"({"name":"fixture__add","arguments":{"a": 1}})");
  EXPECT_FALSE(SurfaceStage::translate(add, *view));
  EXPECT_EQ(add.member("arguments"), R"({"a": 1})");
}

TEST(SurfaceStage, RefusesWhatTheSurfaceDoesNotShowAsAnUnknownTool) {
  Surface s{"bench", {}, {}, {}};
  s.tools["fixture__echo"] = SurfaceTool{.name = "say"};
  auto view = View::build(s, catalog_tools());
  // The gateway name of a shown tool, and a tool the gateway has but the surface does not show.
  for (const char* name : {"fixture__echo", "fixture__crash", "sya"}) {
    call::Call call = tool_call(std::string(R"({"name":")") + name + R"(","arguments":{}})");
    auto refusal = SurfaceStage::translate(call, *view);
    ASSERT_TRUE(refusal) << name;
    EXPECT_EQ(refusal->fault, call::Fault::kInvalidParams);
    EXPECT_EQ(refusal->why.rfind(std::string("Unknown tool: '") + name + "'", 0), 0u)
        << refusal->why;
    EXPECT_NE(refusal->why.find("tools/list shows the 1 available tools."), std::string::npos);
  }
  call::Call typo = tool_call(R"({"name":"sya"})");
  EXPECT_NE(SurfaceStage::translate(typo, *view)->why.find("did you mean 'say'"),
            std::string::npos);
  call::Call far = tool_call(R"({"name":"fixture__crash"})");
  EXPECT_EQ(SurfaceStage::translate(far, *view)->why.find("did you mean"), std::string::npos);
}

TEST(SurfaceStage, RepairsAMistypedNameWithinTheSurfaceOnly) {
  Surface s{"bench", {}, {}, {}};
  s.tools["fixture__echo"] = SurfaceTool{.name = "repeat_text"};
  auto view = View::build(s, catalog_tools());
  const RepairModeOf safe = [](const Tool&) { return config::RepairMode::kSafe; };
  call::Call call = tool_call(R"({"name":"repeat_txt","arguments":{}})");
  EXPECT_FALSE(SurfaceStage::translate(call, *view, safe));
  EXPECT_EQ(call.string_member("name"), "fixture__echo");
  ASSERT_EQ(call.repairs.size(), 1u);
  EXPECT_EQ(call.repairs[0].from, "repeat_txt");
  EXPECT_EQ(call.repairs[0].to, "repeat_text");
  // A near miss of a tool the gateway has but the surface does not show is not repaired to it.
  call::Call outside = tool_call(R"({"name":"fixture__crsh"})");
  EXPECT_TRUE(SurfaceStage::translate(outside, *view, safe));
  EXPECT_TRUE(outside.repairs.empty());
  // Its server does not repair: refused.
  call::Call off = tool_call(R"({"name":"repeat_txt"})");
  EXPECT_TRUE(
      SurfaceStage::translate(off, *view, [](const Tool&) { return config::RepairMode::kOff; }));
}

TEST(SurfaceRegistry, RebuildsViewsWhenTheCatalogChanges) {
  auto surfaces = std::make_shared<config::Surfaces>();
  surfaces->list.push_back(Surface{"a", {SurfaceSelector{.server = "fixture"}}, {}, {}});
  catalog::Catalog catalog;
  Registry registry(surfaces, catalog);
  EXPECT_TRUE(registry.has("a"));
  EXPECT_FALSE(registry.has("b"));
  EXPECT_EQ(registry.view("b"), nullptr);
  EXPECT_TRUE(registry.view("a")->tools().empty());
  upstream::Catalog fixture;
  fixture.tools.push_back(bj::object{{"name", "echo"}, {"description", "e"}});
  catalog.rebuild(std::vector<catalog::Catalog::Source>{{"fixture", &fixture}},
                  config::ToolNaming::kPrefixed, "__");
  auto view = registry.view("a");
  ASSERT_EQ(view->tools().size(), 1u);
  EXPECT_EQ(view->tools()[0].exposed, "fixture__echo");
  EXPECT_EQ(registry.view("a"), view);  // the same catalog: the same view
  EXPECT_EQ(registry.views().size(), 1u);
  EXPECT_EQ(registry.unknown_message("zz"), "Unknown surface: 'zz'. Configured surfaces: a");
}

}  // namespace
}  // namespace toolbridge::surfaces
