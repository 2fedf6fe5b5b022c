#include "catalog/tool_name.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "repair/answer.h"
#include "upstream/instance.h"

namespace toolbridge::repair {
namespace {

namespace bj = boost::json;
using catalog::match_tool_name;
using catalog::ModeOf;
using catalog::repair_tool_name;
using catalog::ToolNameMatch;
using catalog::ToolNameRepair;
using config::RepairMode;

upstream::Catalog lists(std::initializer_list<const char*> tools) {
  upstream::Catalog c;
  for (const char* t : tools) {
    c.tools.push_back(bj::object{{"name", t}, {"inputSchema", bj::object{{"type", "object"}}}});
  }
  return c;
}

struct Tools {
  upstream::Catalog search = lists({"web_search", "fetch-page"});
  upstream::Catalog docs = lists({"search", "read_file"});
  upstream::Catalog sandbox = lists({"run_python_code"});
  catalog::Catalog catalog;
  std::map<std::string, RepairMode> modes;

  Tools() {
    catalog.rebuild(
        std::vector<catalog::Catalog::Source>{
            {"search", &search}, {"docs", &docs}, {"sandbox", &sandbox}},
        config::ToolNaming::kPrefixed, "__");
  }
  ModeOf mode_of() const {
    return [this](const catalog::Entry& e) {
      auto it = modes.find(e.server);
      return it == modes.end() ? RepairMode::kSafe : it->second;
    };
  }
  std::string match(std::string_view name, RepairMode cap = RepairMode::kAggressive) const {
    const ToolNameMatch m = match_tool_name(catalog, name, mode_of(), cap);
    std::string out(to_string(m.kind));
    for (const auto* e : m.entries) out += " " + e->exposed;
    return out;
  }
};

TEST(RepairToolName, PrefixMissingOrWrittenAnotherWay) {
  Tools t;
  EXPECT_EQ(t.match("web_search"), "exact search__web_search");
  EXPECT_EQ(t.match("search-web_search"), "normalised search__web_search");
  EXPECT_EQ(t.match("search.web_search"), "normalised search__web_search");
  EXPECT_EQ(t.match("search/web-search"), "normalised search__web_search");
  EXPECT_EQ(t.match("Docs__Read_File"), "normalised docs__read_file");
  EXPECT_EQ(t.match("fetch_page"), "normalised search__fetch-page");
}

TEST(RepairToolName, TheUniqueToolWithinASmallDistance) {
  Tools t;
  EXPECT_EQ(t.match("web_serch"), "fuzzy search__web_search");
  EXPECT_EQ(t.match("read_fille"), "fuzzy docs__read_file");
}

TEST(RepairToolName, ServerNamesAreNotToolNames) {
  Tools t;
  // The server "search" has no tool "search"; docs has.
  EXPECT_EQ(t.match("Search"), "normalised docs__search");
  EXPECT_EQ(t.match("searchh"), "fuzzy docs__search");
}

TEST(RepairToolName, TwoCandidatesAreNoGuess) {
  upstream::Catalog a = lists({"read_file"}), b = lists({"read_files"});
  catalog::Catalog c;
  c.rebuild(std::vector<catalog::Catalog::Source>{{"x", &a}, {"y", &b}},
            config::ToolNaming::kPrefixed, "__");
  const ToolNameMatch m = match_tool_name(
      c, "read_fil", [](const catalog::Entry&) { return RepairMode::kSafe; }, RepairMode::kSafe);
  EXPECT_EQ(m.kind, MatchKind::kAmbiguous);
  EXPECT_EQ(m.entries.size(), 2u);
}

TEST(RepairToolName, ServersWithRepairOffAreNoCandidates) {
  Tools t;
  t.modes["docs"] = RepairMode::kOff;
  EXPECT_EQ(t.match("read_file"), "none");
  EXPECT_EQ(t.match("web_search", RepairMode::kOff), "none");
}

TEST(RepairToolName, AggressiveServersAlsoGetWholeWords) {
  Tools t;
  EXPECT_EQ(t.match("python"), "none");
  t.modes["sandbox"] = RepairMode::kAggressive;
  EXPECT_EQ(t.match("python"), "fuzzy sandbox__run_python_code");
  EXPECT_EQ(t.match("python", RepairMode::kSafe), "none");
}

TEST(RepairToolName, AmbiguousNamesGetAnIsErrorListingThem) {
  upstream::Catalog a = lists({"search"}), b = lists({"search"});
  catalog::Catalog c;
  c.rebuild(std::vector<catalog::Catalog::Source>{{"web", &a}, {"docs", &b}},
            config::ToolNaming::kPrefixed, "__");
  call::Call call;
  call.id = "3";
  call.method = "tools/call";
  const ToolNameRepair r =
      repair_tool_name(c, call, "search", [](const catalog::Entry&) { return RepairMode::kSafe; });
  EXPECT_EQ(r.entry, nullptr);
  ASSERT_TRUE(r.answer);
  const bj::value v = bj::parse(r.answer->response);
  EXPECT_EQ(v.at("result").at("isError"), true);
  const std::string text(v.at("result").at("content").at(0).at("text").as_string());
  EXPECT_NE(text.find("'docs__search'"), std::string::npos) << text;
  EXPECT_NE(text.find("'web__search'"), std::string::npos) << text;
  EXPECT_TRUE(call.repairs.empty());
}

TEST(RepairToolName, ARepairIsRecordedInTheCall) {
  Tools t;
  call::Call call;
  const ToolNameRepair r = repair_tool_name(t.catalog, call, "web-search", t.mode_of());
  ASSERT_NE(r.entry, nullptr);
  EXPECT_EQ(r.entry->exposed, "search__web_search");
  ASSERT_EQ(call.repairs.size(), 1u);
  EXPECT_EQ(call.repairs[0].kind, "tool_name");
  EXPECT_EQ(call.repairs[0].from, "web-search");
  EXPECT_EQ(call.repairs[0].to, "search__web_search");
  // The caller's _meta turns it off.
  call::Call off;
  off.slots.get<repair::Request>().mode = "off";
  EXPECT_EQ(repair_tool_name(t.catalog, off, "web-search", t.mode_of()).entry, nullptr);
}

}  // namespace
}  // namespace toolbridge::repair
