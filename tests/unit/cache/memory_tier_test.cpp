#include "cache/memory_tier.h"

#include <gtest/gtest.h>

#include <string>

namespace toolbridge::cache {
namespace {

Entry entry(std::size_t bytes, std::int64_t expires = 1'000'000) {
  return Entry{std::string(bytes, 'x'), 0, expires, 0.5};
}

TEST(CacheMemoryTier, FindsWhatItStoredUntilItExpires) {
  MemoryTier m(1 << 20);
  m.put("k", entry(10, 100), 0);
  ASSERT_NE(m.find("k", 99), nullptr);
  EXPECT_EQ(m.find("k", 99)->result, std::string(10, 'x'));
  EXPECT_EQ(m.find("k", 100), nullptr);  // expired: dropped
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.bytes(), 0u);
  EXPECT_EQ(m.evictions(), 1u);
}

TEST(CacheMemoryTier, StaysWithinItsBytesEvictingTheLeastRecentlyUsed) {
  MemoryTier m(8 * 1000);
  for (int i = 0; i < 100; ++i) {
    m.put("k" + std::to_string(i), entry(500), 0);
    EXPECT_LE(m.bytes(), 8u * 1000);
    // k0 is used after every put, so it is never the least recently used.
    ASSERT_NE(m.find("k0", 1), nullptr) << i;
  }
  EXPECT_GT(m.evictions(), 0u);
  EXPECT_EQ(m.find("k1", 1), nullptr);
  EXPECT_NE(m.find("k99", 1), nullptr);
  EXPECT_LT(m.size(), 100u);
}

TEST(CacheMemoryTier, ReplacingAnEntryDoesNotCountItTwice) {
  MemoryTier m(1 << 20);
  m.put("k", entry(100), 0);
  const auto once = m.bytes();
  m.put("k", entry(100), 0);
  EXPECT_EQ(m.bytes(), once);
  EXPECT_EQ(m.size(), 1u);
  m.erase("k");
  EXPECT_EQ(m.bytes(), 0u);
}

TEST(CacheMemoryTier, AnEntryOverAnEighthOfTheBudgetIsNotKept) {
  MemoryTier m(8000);
  m.put("small", entry(100), 0);
  m.put("huge", entry(1500), 0);
  EXPECT_EQ(m.find("huge", 1), nullptr);
  EXPECT_NE(m.find("small", 1), nullptr);  // and it evicted nothing
}

}  // namespace
}  // namespace toolbridge::cache
