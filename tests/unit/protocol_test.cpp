#include "mcp/protocol.h"

#include <gtest/gtest.h>

#include <string>

namespace toolbridge::mcp {
namespace {

TEST(Protocol, NegotiateKeepsEverySupportedVersion) {
  for (Version v : kSupportedVersions) {
    EXPECT_EQ(negotiate(to_string(v)), v) << to_string(v);
  }
  EXPECT_EQ(negotiate("2025-03-26"), Version::k2025_03_26);
  EXPECT_EQ(negotiate("2025-06-18"), Version::k2025_06_18);
  EXPECT_EQ(negotiate("2025-11-25"), Version::k2025_11_25);
}

TEST(Protocol, NegotiateUnknownOrEmptyGivesLatest) {
  for (const char* requested : {"", "2024-11-05", "2099-01-01", "2025-06-18 ", " 2025-06-18",
                                "2025-6-18", "latest", "2025-11-25\n"}) {
    EXPECT_EQ(negotiate(requested), kLatestVersion) << "'" << requested << "'";
  }
  EXPECT_EQ(kLatestVersion, Version::k2025_11_25);
}

TEST(Protocol, ParseVersionAndToStringRoundTrip) {
  for (Version v : kSupportedVersions) {
    const auto parsed = parse_version(to_string(v));
    ASSERT_TRUE(parsed.has_value()) << to_string(v);
    EXPECT_EQ(*parsed, v);
  }
  EXPECT_EQ(to_string(Version::k2025_03_26), "2025-03-26");
  EXPECT_EQ(to_string(Version::k2025_06_18), "2025-06-18");
  EXPECT_EQ(to_string(Version::k2025_11_25), "2025-11-25");
  EXPECT_FALSE(parse_version("").has_value());
  EXPECT_FALSE(parse_version("2024-11-05").has_value());
  EXPECT_FALSE(parse_version("2025-03-26x").has_value());
}

TEST(Protocol, SupportedVersionsAreDistinctAndLatestFirst) {
  EXPECT_EQ(kSupportedVersions.front(), kLatestVersion);
  for (std::size_t i = 0; i < kSupportedVersions.size(); ++i) {
    for (std::size_t j = i + 1; j < kSupportedVersions.size(); ++j) {
      EXPECT_NE(to_string(kSupportedVersions[i]), to_string(kSupportedVersions[j]));
      EXPECT_GT(kSupportedVersions[i], kSupportedVersions[j]);
    }
  }
}

TEST(Protocol, BatchesOnlyIn2025_03_26) {
  EXPECT_TRUE(allows_batches(Version::k2025_03_26));
  EXPECT_FALSE(allows_batches(Version::k2025_06_18));
  EXPECT_FALSE(allows_batches(Version::k2025_11_25));
  EXPECT_EQ(kDefaultHttpVersion, Version::k2025_03_26);
}

TEST(Protocol, FeaturesByVersion) {
  EXPECT_FALSE(has_elicitation(Version::k2025_03_26));
  EXPECT_TRUE(has_elicitation(Version::k2025_06_18));
  EXPECT_TRUE(has_elicitation(Version::k2025_11_25));
  EXPECT_FALSE(requires_version_header(Version::k2025_03_26));
  EXPECT_TRUE(requires_version_header(Version::k2025_06_18));
  EXPECT_TRUE(requires_version_header(Version::k2025_11_25));
}

TEST(Protocol, LogLevelRankFollowsRfc5424Order) {
  const char* order[] = {"debug", "info", "notice", "warning", "error", "critical", "alert",
                         "emergency"};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(log_level_rank(order[i]), i) << order[i];
  for (int i = 0; i + 1 < 8; ++i) EXPECT_LT(log_level_rank(order[i]), log_level_rank(order[i + 1]));
}

TEST(Protocol, LogLevelRankUnknownIsMinusOne) {
  for (const char* level : {"", "warn", "DEBUG", "Info", "fatal", "trace", " error"}) {
    EXPECT_EQ(log_level_rank(level), -1) << "'" << level << "'";
  }
}

}  // namespace
}  // namespace toolbridge::mcp
