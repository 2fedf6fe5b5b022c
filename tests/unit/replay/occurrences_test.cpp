// The occurrence table: counts per key, through growth, with keys that share a probe chain.
#include "replay/occurrences.h"

#include <gtest/gtest.h>

#include <map>

namespace {

using toolbridge::replay::Occurrences;

TEST(Occurrences, CountsEachKeyFromOne) {
  Occurrences o;
  EXPECT_EQ(o.next(42), 1u);
  EXPECT_EQ(o.next(42), 2u);
  EXPECT_EQ(o.next(7), 1u);
  EXPECT_EQ(o.next(42), 3u);
  EXPECT_EQ(o.size(), 2u);
}

TEST(Occurrences, KeysOnOneProbeChainAndGrowthKeepTheirCounts) {
  Occurrences o;
  std::map<std::uint64_t, std::uint64_t> expected;
  // Keys that differ only in their high bits (multiples of 2^20) and keys that differ in their
  // low bits; 100,000 keys make the table grow many times.
  for (std::uint64_t i = 1; i <= 100'000; ++i) {
    const std::uint64_t key = i % 3 == 0 ? (i << 20) : i * 0x9E3779B97F4A7C15ull;
    const std::uint64_t times = 1 + i % 4;
    for (std::uint64_t t = 0; t < times; ++t) EXPECT_EQ(o.next(key), ++expected[key]) << key;
  }
  for (const auto& [key, count] : expected) EXPECT_EQ(o.next(key), count + 1) << key;
  EXPECT_EQ(o.size(), expected.size());
}

TEST(Occurrences, KeyZeroIsCountedLikeAnyOther) {
  Occurrences o;
  EXPECT_EQ(o.next(0), 1u);
  EXPECT_EQ(o.next(0), 2u);
}

}  // namespace
