#include "config/suggestion.h"

#include <gtest/gtest.h>

#include <array>
#include <string_view>

namespace toolbridge::config {
namespace {

constexpr std::array<std::string_view, 4> kKeys{"command", "env", "policy", "max_instances"};

TEST(ConfigSuggestion, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("comand", "command"), 1u);
  EXPECT_EQ(edit_distance("commandd", "command"), 1u);
  EXPECT_EQ(edit_distance("kommand", "command"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(ConfigSuggestion, EditDistanceIgnoresCase) {
  EXPECT_EQ(edit_distance("Command", "command"), 0u);
  EXPECT_EQ(edit_distance("MAX_INSTANCES", "max_instances"), 0u);
}

TEST(ConfigSuggestion, ClosestFindsATypo) {
  EXPECT_EQ(closest("comand", kKeys), "command");
  EXPECT_EQ(closest("polcy", kKeys), "policy");
  EXPECT_EQ(closest("max_instance", kKeys), "max_instances");
}

TEST(ConfigSuggestion, ShortCandidatesGetLessSlack) {
  // One edit is all a three-letter word allows: "emv" is near "env", "dev" and "xyz" are not.
  EXPECT_EQ(closest("emv", kKeys), "env");
  EXPECT_EQ(closest("dev", kKeys), std::nullopt);
  EXPECT_EQ(closest("xyz", kKeys), std::nullopt);
  // Long words allow up to three edits, never more.
  EXPECT_EQ(closest("max_instnc", kKeys), "max_instances");
  EXPECT_EQ(closest("mx_nstnc", kKeys), std::nullopt);
}

TEST(ConfigSuggestion, CaseAloneIsATypoEvenForShortWords) {
  EXPECT_EQ(closest("ENV", kKeys), "env");
}

TEST(ConfigSuggestion, NearestWinsAndTheFirstOfEqualsWins) {
  constexpr std::array<std::string_view, 3> words{"shared", "pool", "poll"};
  EXPECT_EQ(closest("pool", words), "pool");
  EXPECT_EQ(closest("pull", words), "poll");
  EXPECT_EQ(closest("pobl", words), "pool");  // one edit from both
}

TEST(ConfigSuggestion, NothingToSuggestFromNoCandidates) {
  EXPECT_EQ(closest("anything", {}), std::nullopt);
}

TEST(ConfigSuggestion, JoinWordsSeparatesWithCommas) {
  EXPECT_EQ(join_words({}), "");
  constexpr std::array<std::string_view, 1> one{"auto"};
  EXPECT_EQ(join_words(one), "auto");
  constexpr std::array<std::string_view, 3> three{"auto", "streamable_http", "sse"};
  EXPECT_EQ(join_words(three), "auto, streamable_http, sse");
}

}  // namespace
}  // namespace toolbridge::config
