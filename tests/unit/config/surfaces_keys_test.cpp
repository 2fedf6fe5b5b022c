// The `surfaces` section: what each surface selects, renames, re-describes and hides, and the
// errors (FILE:LINE:COL, the key path, "did you mean") for names, rules and name conflicts.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "config/config.h"
#include "config/surfaces.h"
#include "load_error.h"

namespace toolbridge::config {
namespace {

const std::string kServers = "servers:\n  fixture:\n    command: x\n  files:\n    command: y\n";

TEST(ConfigSurfaces, NoneByDefault) {
  const Config c = load_text(kServers, "cfg.yaml", false);
  EXPECT_TRUE(!c.surfaces || c.surfaces->list.empty());
}

TEST(ConfigSurfaces, ReadsRulesRenamesOverridesAndHiddenDefaults) {
  const Config c =
      load_text(kServers +
                    "surfaces:\n"
                    "  bench-a:\n"
                    "    include:\n"
                    "      - server: fixture\n"
                    "        glob: \"l*\"\n"
                    "      - annotation: readOnlyHint\n"
                    "      - name: files__read\n"
                    "    exclude: [{glob: \"*crash*\"}]\n"
                    "    tools:\n"
                    "      fixture__echo:\n"
                    "        name: say\n"
                    "        description: Says it back.\n"
                    "        title: Say\n"
                    "        defaults: {mode: fast, n: 3, deep: {on: true}, s: \"x y\"}\n"
                    "  small:\n"
                    "    tools: {fixture__add: {}}\n",
                "cfg.yaml", false);
  ASSERT_TRUE(c.surfaces);
  ASSERT_EQ(c.surfaces->list.size(), 2u);
  const Surface* s = c.surfaces->find("bench-a");
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(s->include.size(), 3u);
  EXPECT_EQ(s->include[0].server, "fixture");
  EXPECT_EQ(s->include[0].glob, "l*");
  EXPECT_EQ(s->include[1].annotation, "readOnlyHint");
  EXPECT_EQ(s->include[2].name, "files__read");
  ASSERT_EQ(s->exclude.size(), 1u);
  const SurfaceTool& echo = s->tools.at("fixture__echo");
  EXPECT_EQ(echo.name, "say");
  EXPECT_EQ(echo.description, "Says it back.");
  EXPECT_EQ(echo.title, "Say");
  // YAML scalars that read as numbers or booleans are those; the rest are strings.
  EXPECT_EQ(boost::json::parse(echo.defaults),
            boost::json::parse(R"({"mode":"fast","n":3,"deep":{"on":true},"s":"x y"})"));
  EXPECT_TRUE(c.surfaces->find("small")->tools.contains("fixture__add"));
  EXPECT_EQ(c.surfaces->find("nope"), nullptr);
}

TEST(ConfigSurfaces, ReadsFromAJsonFileBesideMcpServers) {
  const Config c = load_text(
      R"({"mcpServers": {"fixture": {"command": "x"}},
          "surfaces": {"a": {"tools": {"fixture__echo": {"defaults": {"n": 2}}}}}})",
      "cfg.json", true);
  ASSERT_TRUE(c.surfaces);
  EXPECT_EQ(c.surfaces->list.at(0).tools.at("fixture__echo").defaults, R"({"n":2})");
}

TEST(ConfigSurfaces, SurfaceNamesAreBoundedAndUrlSafe) {
  EXPECT_TRUE(check_surface_name("bench-a_1").ok());
  EXPECT_EQ(check_surface_name("").error(), "a surface name is 1-64 characters of [A-Za-z0-9_-]");
  EXPECT_FALSE(check_surface_name(std::string(65, 'a')).ok());
  EXPECT_TRUE(check_surface_name(std::string(64, 'a')).ok());
  for (const char* bad : {"a/b", "a.b", "..", "a b", "%2e", "é"})
    EXPECT_FALSE(check_surface_name(bad).ok()) << bad;
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a/b:\n    tools: {x: {}}\n"),
            "cfg.yaml:7:3: surfaces.a/b: 'a/b': a surface name is 1-64 characters of "
            "[A-Za-z0-9_-] (it is part of the URL /s/NAME/mcp)");
}

TEST(ConfigSurfaces, TyposAreReportedWhereTheyAreWritten) {
  EXPECT_EQ(yaml_error(kServers + "surfacs:\n  a: {}\n"),
            "cfg.yaml:6:1: unknown key 'surfacs' (did you mean 'surfaces'?)");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    incude: []\n"),
            "cfg.yaml:8:5: surfaces.a: unknown key 'incude' (did you mean 'include'?)");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    tools:\n      x:\n        descripton: d\n"),
            "cfg.yaml:10:9: surfaces.a.tools.x: unknown key 'descripton' (did you mean "
            "'description'?)");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    include: [{server: fixtur}]\n"),
            "cfg.yaml:8:24: surfaces.a.include[0].server: no server 'fixtur' is configured (did "
            "you mean 'fixture'?)");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    include: [{annotation: readonlyhint}]\n"),
            "cfg.yaml:8:28: surfaces.a.include[0].annotation: expected one of readOnlyHint, "
            "destructiveHint, idempotentHint, openWorldHint, got 'readonlyhint' (did you mean "
            "'readOnlyHint'?)");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    include: [{}]\n"),
            "cfg.yaml:8:15: surfaces.a.include[0]: an empty rule matches nothing; give one or "
            "more of: server, name, glob, annotation");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a: {}\n"),
            "cfg.yaml:7:3: surfaces.a: selects no tool: give `include` rules or name tools under "
            "`tools`");
}

TEST(ConfigSurfaces, RenamesAreValidToolNames) {
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    tools:\n      x:\n        name: a b\n"),
            "cfg.yaml:10:15: surfaces.a.tools.x.name: 'a b' is not a tool name clients accept: "
            "1-64 characters of [A-Za-z0-9_-]");
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    tools:\n      x:\n        defaults: 3\n"),
            "cfg.yaml:10:19: surfaces.a.tools.x.defaults: expected a mapping of argument names "
            "and values, got '3'");
}

TEST(ConfigSurfaces, TwoToolsShownUnderOneNameAreAConflict) {
  // Two renamed to one name.
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    tools:\n"
                                  "      x: {name: say}\n"
                                  "      y: {name: say}\n"),
            "cfg.yaml:10:7: surfaces.a.tools.y: 'y' and 'x' (line 9) are both shown as 'say'; two "
            "tools of one surface cannot share a name");
  // One renamed onto another's own name.
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n  a:\n    tools:\n"
                                  "      b: {}\n"
                                  "      a: {name: b}\n"),
            "cfg.yaml:10:7: surfaces.a.tools.a: 'a' and 'b' (line 9) are both shown as 'b'; two "
            "tools of one surface cannot share a name");
  // The same name in two surfaces is fine.
  EXPECT_EQ(yaml_error(kServers + "surfaces:\n"
                                  "  a: {tools: {x: {name: say}}}\n"
                                  "  b: {tools: {y: {name: say}}}\n"),
            "<no error>");
}

TEST(ConfigSurfaces, AnApiKeyMayBeRestrictedToDefinedSurfaces) {
  const std::string key =
      "gateway:\n  auth:\n    keys:\n"
      "      - {name: b, token: 0123456789abcdef-b, tenant: t, surfaces: [bench]}\n";
  const Config c =
      load_text(key + kServers + "surfaces:\n  bench: {tools: {x: {}}}\n", "cfg.yaml", false);
  ASSERT_EQ(c.gateway.auth.keys.size(), 1u);
  EXPECT_EQ(c.gateway.auth.keys[0].surfaces, std::vector<std::string>{"bench"});
  EXPECT_EQ(yaml_error(key + kServers + "surfaces:\n  benchs: {tools: {x: {}}}\n"),
            "cfg.yaml:4:68: gateway.auth.keys[0].surfaces[0]: no surface 'bench' is defined in "
            "`surfaces` (did you mean 'benchs'?)");
  EXPECT_EQ(yaml_error(key + kServers),
            "cfg.yaml:4:68: gateway.auth.keys[0].surfaces[0]: no surface 'bench' is defined in "
            "`surfaces`");
}

}  // namespace
}  // namespace toolbridge::config
