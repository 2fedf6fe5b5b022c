#include "catalog/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace toolbridge::catalog {
namespace {

using Pairs = std::vector<std::pair<std::string, std::string>>;
using config::ToolNaming;

std::vector<std::string> prefixed(const Pairs& pairs, std::string_view sep = "__") {
  return expose_names(pairs, ToolNaming::kPrefixed, sep);
}
std::vector<std::string> unprefixed(const Pairs& pairs) {
  return expose_names(pairs, ToolNaming::kUnprefixedWhenUnique, "__");
}

// ^[a-zA-Z0-9_-]{1,64}$, written out (std::regex trips GCC 12 warnings in sanitizer builds).
bool llm_valid(const std::string& name) {
  auto ok = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  };
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), ok);
}

// "<first 55 chars of the sanitized name>_<8 lowercase hex digits>".
bool is_hashed_form_of(const std::string& exposed, const std::string& sanitized) {
  const std::string head = sanitized.substr(0, 55);
  if (exposed.size() != head.size() + 9 || exposed.compare(0, head.size(), head) != 0) return false;
  if (exposed[head.size()] != '_') return false;
  return std::all_of(exposed.end() - 8, exposed.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::map<std::pair<std::string, std::string>, std::string> mapping(const Pairs& pairs,
                                                                   const std::vector<std::string>& names) {
  std::map<std::pair<std::string, std::string>, std::string> out;
  for (std::size_t i = 0; i < pairs.size(); ++i) out[pairs[i]] = names.at(i);
  return out;
}

TEST(Catalog, PrefixedByDefault) {
  const Pairs pairs = {{"github", "create_issue"}, {"fs", "read-file"}, {"fs", "Write2"}};
  EXPECT_EQ(prefixed(pairs),
            (std::vector<std::string>{"github__create_issue", "fs__read-file", "fs__Write2"}));
}

TEST(Catalog, EmptyInput) {
  EXPECT_TRUE(prefixed({}).empty());
  EXPECT_TRUE(unprefixed({}).empty());
}

TEST(Catalog, CustomSeparator) {
  EXPECT_EQ(prefixed({{"a", "b"}}, "-"), std::vector<std::string>{"a-b"});
  EXPECT_EQ(prefixed({{"a", "b"}}, "_x_"), std::vector<std::string>{"a_x_b"});
}

TEST(Catalog, UnprefixedWhenUnique) {
  const Pairs pairs = {{"a", "search"}, {"b", "search"}, {"b", "fetch"}, {"c", "run"}};
  EXPECT_EQ(unprefixed(pairs),
            (std::vector<std::string>{"a__search", "b__search", "fetch", "run"}));
}

TEST(Catalog, UnprefixedFallsBackToPrefixForInvalidBareNames) {
  const Pairs pairs = {{"a", "read.file"}, {"b", std::string(65, 'n')}};
  const auto names = unprefixed(pairs);
  EXPECT_EQ(names[0], "a__read_file");
  EXPECT_TRUE(llm_valid(names[1])) << names[1];
}

TEST(Catalog, UnprefixedBareNameCollidingWithAPrefixedOneIsHashed) {
  // "x__y" is unique as a bare name, and "x" + "__" + "y" is the prefixed form of another pair.
  const Pairs pairs = {{"s1", "x__y"}, {"x", "y"}, {"s2", "y"}};
  const auto names = unprefixed(pairs);
  EXPECT_TRUE(is_hashed_form_of(names[0], "x__y")) << names[0];
  EXPECT_TRUE(is_hashed_form_of(names[1], "x__y")) << names[1];
  EXPECT_NE(names[0], names[1]);
  EXPECT_EQ(names[2], "s2__y");
}

TEST(Catalog, SeparatorCollisionHashesBothMembers) {
  const Pairs pairs = {{"a", "b__c"}, {"a__b", "c"}};
  const auto names = prefixed(pairs);
  ASSERT_EQ(names.size(), 2u);
  EXPECT_NE(names[0], names[1]);
  EXPECT_TRUE(is_hashed_form_of(names[0], "a__b__c")) << names[0];
  EXPECT_TRUE(is_hashed_form_of(names[1], "a__b__c")) << names[1];
  for (const auto& n : names) EXPECT_TRUE(llm_valid(n)) << n;
}

TEST(Catalog, CollisionResultDoesNotDependOnInputOrder) {
  Pairs pairs = {{"a", "b__c"},   {"a__b", "c"},  {"srv", "tool.x"}, {"srv", "tool_x"},
                 {"fs", "read"},  {"db", "read"}, {"q", "ü"},       {"q", "__"}};
  const auto expected = mapping(pairs, prefixed(pairs));
  const auto expected_bare = mapping(pairs, unprefixed(pairs));
  std::sort(pairs.begin(), pairs.end());
  int permutations = 0;
  do {
    EXPECT_EQ(mapping(pairs, prefixed(pairs)), expected);
    EXPECT_EQ(mapping(pairs, unprefixed(pairs)), expected_bare);
    ++permutations;
  } while (std::next_permutation(pairs.begin(), pairs.end()) && permutations < 2000);
}

TEST(Catalog, SanitizedCollisionIsHashed) {
  // "tool.x" and "tool_x" both sanitize to "srv__tool_x".
  const Pairs pairs = {{"srv", "tool.x"}, {"srv", "tool_x"}};
  const auto names = prefixed(pairs);
  EXPECT_NE(names[0], names[1]);
  EXPECT_TRUE(is_hashed_form_of(names[0], "srv__tool_x")) << names[0];
  EXPECT_TRUE(is_hashed_form_of(names[1], "srv__tool_x")) << names[1];
}

TEST(Catalog, InvalidCharactersAreSanitized) {
  const Pairs pairs = {{"fs", "read.file"},
                       {"fs", "list files"},
                       {"fs", "caf\xc3\xa9"},   // é: two bytes, two underscores
                       {"fs", "a/b:c@d"},
                       {"fs", "tab\there"}};
  EXPECT_EQ(prefixed(pairs), (std::vector<std::string>{"fs__read_file", "fs__list_files",
                                                        "fs__caf__", "fs__a_b_c_d", "fs__tab_here"}));
}

TEST(Catalog, LongNamesAreHashedTo64) {
  const std::string server(40, 's');
  const std::string tool(40, 't');
  const auto names = prefixed({{server, tool}});
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].size(), 64u);
  EXPECT_TRUE(llm_valid(names[0])) << names[0];
  EXPECT_TRUE(is_hashed_form_of(names[0], server + "__" + tool)) << names[0];
}

TEST(Catalog, NameOfExactly64IsKeptAndOf65IsHashed) {
  const std::string name64 = std::string(31, 'a') + "__" + std::string(31, 'b');
  ASSERT_EQ(name64.size(), 64u);
  EXPECT_EQ(prefixed({{std::string(31, 'a'), std::string(31, 'b')}})[0], name64);
  const auto names = prefixed({{std::string(31, 'a'), std::string(32, 'b')}});   // 65 chars
  EXPECT_EQ(names[0].size(), 64u);
  EXPECT_TRUE(llm_valid(names[0]));
}

TEST(Catalog, LongNamesSharingAPrefixStayDistinct) {
  const std::string server(40, 's');
  const Pairs pairs = {{server, std::string(40, 't') + "_one"}, {server, std::string(40, 't') + "_two"}};
  const auto names = prefixed(pairs);
  EXPECT_NE(names[0], names[1]);
  for (const auto& n : names) EXPECT_TRUE(llm_valid(n)) << n;
}

TEST(Catalog, EveryResultIsAValidToolName) {
  Pairs pairs;
  const std::vector<std::string> servers = {"a", "a__b", "github", std::string(64, 'S'), "x-y"};
  const std::vector<std::string> tools = {"b__c",  "c",      "",       "read.file", "日本語",
                                          "a b",   "__",     "-",      std::string(100, 'T'),
                                          "ok_1",  "quote\"", "nl\n"};
  for (const auto& s : servers)
    for (const auto& t : tools) pairs.emplace_back(s, t);
  pairs.emplace_back("solo", "a__b__c");  // unique bare name equal to a prefixed clash
  pairs.emplace_back("solo", "unique_tool");
  for (auto naming : {ToolNaming::kPrefixed, ToolNaming::kUnprefixedWhenUnique}) {
    const auto names = expose_names(pairs, naming, "__");
    ASSERT_EQ(names.size(), pairs.size());
    std::set<std::string> unique;
    for (std::size_t i = 0; i < names.size(); ++i) {
      EXPECT_TRUE(llm_valid(names[i])) << pairs[i].first << " / " << pairs[i].second << " -> " << names[i];
      unique.insert(names[i]);
    }
    EXPECT_EQ(unique.size(), names.size()) << "exposed names must be unique";
  }
}

// BUG (src/gateway/catalog.cpp, expose_names): uniqueness is checked only before hashing. The
// hashed form of a clash ("a__b__c_<hash>") is never checked against the other names, so a
// tool whose plain exposed name happens to equal it gets the same exposed name, and
// Catalog::rebuild silently maps both to one entry (one tool shadows the other).
TEST(Catalog, HashedNamesDoNotCollideWithPlainNames) {
  const auto clash = prefixed({{"a", "b__c"}, {"a__b", "c"}});
  ASSERT_EQ(clash[0].substr(0, 8), "a__b__c_");
  const std::string look_alike_tool = clash[0].substr(3);  // "b__c_<hash>"
  const Pairs pairs = {{"a", "b__c"}, {"a__b", "c"}, {"a", look_alike_tool}};
  const auto names = prefixed(pairs);
  const std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size())
      << names[0] << " / " << names[1] << " / " << names[2];
}

TEST(Catalog, IsValidToolName) {
  EXPECT_TRUE(is_valid_tool_name("a"));
  EXPECT_TRUE(is_valid_tool_name("A-z_0"));
  EXPECT_TRUE(is_valid_tool_name(std::string(64, 'x')));
  EXPECT_FALSE(is_valid_tool_name(std::string(65, 'x')));
  EXPECT_FALSE(is_valid_tool_name(""));
  EXPECT_FALSE(is_valid_tool_name("a.b"));
  EXPECT_FALSE(is_valid_tool_name("a b"));
  EXPECT_FALSE(is_valid_tool_name("caf\xc3\xa9"));
}

// ---------------------------------------------------------------------------------------------
// URI templates

TEST(Catalog, TemplateMatchesSimpleVariable) {
  EXPECT_TRUE(matches_template("fixture://echo/{text}", "fixture://echo/hello"));
  EXPECT_TRUE(matches_template("db://{table}/rows", "db://users/rows"));
  EXPECT_TRUE(matches_template("x://{a}-{b}", "x://1-2"));
  EXPECT_TRUE(matches_template("file:///{name}.txt", "file:///notes.txt"));
  EXPECT_TRUE(matches_template("exact://no-vars", "exact://no-vars"));
}

TEST(Catalog, TemplateTrailingVariableMaySpanSegments) {
  EXPECT_TRUE(matches_template("file:///{path}", "file:///a.txt"));
  EXPECT_TRUE(matches_template("file:///{path}", "file:///dir/sub/a.txt"));
}

TEST(Catalog, TemplateInnerSimpleVariableDoesNotSpanSegments) {
  EXPECT_FALSE(matches_template("db://{table}/rows", "db://a/b/rows"));
  EXPECT_FALSE(matches_template("file:///{name}.txt", "file:///dir/notes.txt"));
}

TEST(Catalog, TemplateReservedExpansionSpansSegments) {
  EXPECT_TRUE(matches_template("file:///{+path}.txt", "file:///dir/notes.txt"));
  EXPECT_TRUE(matches_template("file://{/path}.txt", "file:///dir/notes.txt"));
}

TEST(Catalog, TemplateMismatches) {
  EXPECT_FALSE(matches_template("fixture://echo/{text}", "fixture://other/hello"));
  EXPECT_FALSE(matches_template("db://{table}/rows", "db://users/cols"));
  EXPECT_FALSE(matches_template("db://{table}/rows", "db://users"));
  EXPECT_FALSE(matches_template("exact://no-vars", "exact://no-vars/more"));
  EXPECT_FALSE(matches_template("exact://no-vars", "exact://no"));
  EXPECT_FALSE(matches_template("file:///{name}.txt", "file:///notes.md"));
  EXPECT_FALSE(matches_template("x://{unclosed", "x://abc"));
  EXPECT_FALSE(matches_template("", "x://a"));
}

// BUG (src/gateway/catalog.cpp, matches_template): a variable ends at the first occurrence of
// the character after it, with no backtracking. So "{name}.json" does not match
// "config.local.json" (stops at the first '.'), and "{+path}/raw" cannot match "a/b/raw"
// although '+' exists precisely to let the value contain '/'. resource_server() then finds no
// server for such URIs.
TEST(Catalog, TemplateVariableMayContainItsStopCharacter) {
  EXPECT_TRUE(matches_template("file:///{name}.json", "file:///config.local.json"));
  EXPECT_TRUE(matches_template("repo://{+path}/raw", "repo://src/main.cpp/raw"));
  EXPECT_TRUE(matches_template("repo://{+path}/raw", "repo://a/b/c/raw"));
}

}  // namespace
}  // namespace toolbridge::catalog
