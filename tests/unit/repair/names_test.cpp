#include "repair/names.h"

#include <gtest/gtest.h>

namespace toolbridge::repair {
namespace {

using config::RepairMode;

TEST(RepairNames, NormaliseFoldsCaseAndSeparators) {
  EXPECT_EQ(normalize_name("Web-Search"), "web_search");
  EXPECT_EQ(normalize_name("web.search"), "web_search");
  EXPECT_EQ(normalize_name("web/search"), "web_search");
  EXPECT_EQ(normalize_name("web__search"), "web_search");
  EXPECT_EQ(normalize_name("__web  search__"), "web_search");
  EXPECT_EQ(normalize_name("---"), "");
}

TEST(RepairNames, BoundGrowsWithLengthAndMode) {
  EXPECT_EQ(fuzzy_bound(3, RepairMode::kSafe), 0u);
  EXPECT_EQ(fuzzy_bound(5, RepairMode::kSafe), 1u);
  EXPECT_EQ(fuzzy_bound(12, RepairMode::kSafe), 2u);
  EXPECT_EQ(fuzzy_bound(12, RepairMode::kAggressive), 3u);
  EXPECT_EQ(fuzzy_bound(12, RepairMode::kOff), 0u);
}

const std::vector<std::vector<std::string>> kTools{{"search__web_search", "web_search"},
                                                   {"docs__search", "search"},
                                                   {"fs__read_file", "read_file"}};

TEST(RepairNames, ExactThenNormalisedThenFuzzy) {
  EXPECT_EQ(match_name("docs__search", kTools, RepairMode::kSafe).kind, MatchKind::kExact);
  const NameMatch n = match_name("Search.Web-Search", kTools, RepairMode::kSafe);
  EXPECT_EQ(n.kind, MatchKind::kNormalised);
  EXPECT_EQ(n.candidates, std::vector<std::size_t>{0});
  const NameMatch f = match_name("read_fiel", kTools, RepairMode::kSafe);
  EXPECT_EQ(f.kind, MatchKind::kFuzzy);
  EXPECT_EQ(f.candidates, std::vector<std::size_t>{2});
}

TEST(RepairNames, TwoCandidatesAreNoGuess) {
  const std::vector<std::vector<std::string>> two{{"a__search", "search"}, {"b__search", "search"}};
  const NameMatch m = match_name("search", two, RepairMode::kSafe);
  EXPECT_EQ(m.kind, MatchKind::kAmbiguous);
  EXPECT_EQ(m.candidates.size(), 2u);
  // Both within the bound of a typo: ambiguous, even though one is nearer.
  const std::vector<std::vector<std::string>> near{{"perch"}, {"search"}};
  EXPECT_EQ(match_name("serch", near, RepairMode::kSafe).kind, MatchKind::kAmbiguous);
}

TEST(RepairNames, FarNamesAndShortNamesAreNotGuessed) {
  EXPECT_EQ(match_name("delete_everything", kTools, RepairMode::kSafe).kind, MatchKind::kNone);
  const std::vector<std::vector<std::string>> short_names{{"ab"}};
  EXPECT_EQ(match_name("ac", short_names, RepairMode::kSafe).kind, MatchKind::kNone);
  EXPECT_EQ(match_name("", kTools, RepairMode::kSafe).kind, MatchKind::kNone);
  // A long name is no typo (and would cost its length per candidate).
  EXPECT_EQ(match_name(std::string(kMaxMatchedName + 1, 'a'), kTools, RepairMode::kAggressive).kind,
            MatchKind::kNone);
}

TEST(RepairNames, OffFindsExactNamesOnly) {
  EXPECT_EQ(match_name("docs__search", kTools, RepairMode::kOff).kind, MatchKind::kExact);
  EXPECT_EQ(match_name("Docs__Search", kTools, RepairMode::kOff).kind, MatchKind::kNone);
}

TEST(RepairNames, AggressiveTakesAWholeWordOfOneCandidate) {
  const std::vector<std::vector<std::string>> tools{{"sandbox__run_python_code"}, {"sandbox__ls"}};
  EXPECT_EQ(match_name("python", tools, RepairMode::kSafe).kind, MatchKind::kNone);
  const NameMatch m = match_name("python", tools, RepairMode::kAggressive);
  EXPECT_EQ(m.kind, MatchKind::kFuzzy);
  EXPECT_EQ(m.candidates, std::vector<std::size_t>{0});
  // Part of a word is not a word.
  EXPECT_EQ(match_name("pyth", tools, RepairMode::kAggressive).kind, MatchKind::kNone);
}

}  // namespace
}  // namespace toolbridge::repair
