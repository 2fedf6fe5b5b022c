#include "llm/radix_tree.h"

#include <gtest/gtest.h>

#include <string>

namespace toolbridge::llm {
namespace {

TEST(LlmRadixTree, LongestMatchPerWorker) {
  RadixTree t(1 << 20);
  t.insert("system prompt. task A turn 1", 0);
  t.insert("system prompt. task B turn 1", 1);
  t.insert("system prompt. task A turn 1 result; turn 2", 2);
  const auto m = t.match("system prompt. task A turn 1 result; turn 2 result", 4);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0], std::string("system prompt. task A turn 1").size());
  EXPECT_EQ(m[1], std::string("system prompt. task ").size());
  EXPECT_EQ(m[2], std::string("system prompt. task A turn 1 result; turn 2").size());
  EXPECT_EQ(m[3], 0u);
}

TEST(LlmRadixTree, MatchInsideAnEdge) {
  RadixTree t(1 << 20);
  t.insert("abcdef", 3);
  EXPECT_EQ(t.match("abcxyz", 4)[3], 3u);
  EXPECT_EQ(t.match("zzz", 4)[3], 0u);
  EXPECT_EQ(t.match("", 4)[3], 0u);
}

TEST(LlmRadixTree, BoundedByEvictingLeastRecentlyUsed) {
  RadixTree t(1000);
  const std::string shared(200, 's');
  for (int i = 0; i < 50; ++i)
    t.insert(shared + "traj" + std::to_string(i) + std::string(100, 'x'), 0);
  EXPECT_LE(t.bytes(), 1000u);
  // The most recent trajectory is kept whole; the oldest is gone past the shared part.
  const std::string last = shared + "traj49" + std::string(100, 'x');
  EXPECT_EQ(t.match(last, 1)[0], last.size());
  const std::string first = shared + "traj0" + std::string(100, 'x');
  EXPECT_LT(t.match(first, 1)[0], first.size());
}

TEST(LlmRadixTree, RecentlyMatchedSurvivesEviction) {
  RadixTree t(600);
  const std::string keep = std::string(100, 'k');
  t.insert(keep, 0);
  for (int i = 0; i < 20; ++i) {
    t.match(keep, 1);  // used again every time: stays
    t.insert(std::string(1, static_cast<char>('a' + i)) + std::string(99, 'y'), 0);
  }
  EXPECT_EQ(t.match(keep, 1)[0], keep.size());
}

TEST(LlmRadixTree, ForgetWorkerDropsOnlyItsPrefixes) {
  RadixTree t(1 << 20);
  t.insert("shared then one", 0);
  t.insert("shared then two", 1);
  t.forget_worker(0);
  const auto m = t.match("shared then one", 2);
  EXPECT_EQ(m[0], 0u);
  EXPECT_EQ(m[1], std::string("shared then ").size());
  EXPECT_EQ(t.bytes(), std::string("shared then two").size());
}

TEST(LlmRadixTree, IgnoresWorkersPastTheMask) {
  RadixTree t(1 << 20);
  t.insert("abc", RadixTree::kMaxWorkers);
  EXPECT_EQ(t.bytes(), 0u);
}

}  // namespace
}  // namespace toolbridge::llm
