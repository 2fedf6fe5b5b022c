#include "llm/token_records.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace toolbridge::llm {
namespace {

using namespace std::chrono_literals;
using Clock = base::Clock;

TokenRecord record(std::size_t ids) {
  TokenRecord r;
  r.model = "m";
  r.worker = "w0";
  r.endpoint = "chat/completions";
  r.tokens.prompt_ids.assign(ids, 7);
  r.tokens.completion_ids = {1, 2};
  return r;
}

TokenRecords::Limits limits() {
  TokenRecords::Limits l;
  l.max_bytes = 1u << 20;
  l.trajectory_max_bytes = 256u << 10;
  l.max_turns = 10;
  l.idle_ttl = 60s;
  l.ttl = 300s;
  return l;
}

const Clock::time_point t0{std::chrono::hours(1)};

TEST(TokenRecords, KeepsTurnsInOrderUpToMaxTurns) {
  TokenRecords store(limits());
  for (int i = 0; i < 25; ++i) store.add("a", record(10), t0 + std::chrono::seconds(i));
  const auto* t = store.find("a", t0 + 30s);
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->records.size(), 10u);
  EXPECT_EQ(t->records.front().turn, 15u);  // the oldest went first
  EXPECT_EQ(t->records.back().turn, 24u);
  EXPECT_EQ(t->turns_dropped, 15u);
  EXPECT_EQ(store.counters().kept, 25u);
  EXPECT_EQ(store.counters().dropped_turns, 15u);
}

TEST(TokenRecords, TrajectoryBytesBound) {
  TokenRecords store(limits());
  // ~40 KiB each: 256 KiB holds six.
  for (int i = 0; i < 9; ++i) store.add("a", record(10'000), t0);
  const auto* t = store.find("a", t0);
  ASSERT_NE(t, nullptr);
  EXPECT_LE(t->bytes, limits().trajectory_max_bytes);
  EXPECT_EQ(t->records.back().turn, 8u);
  EXPECT_GT(store.counters().dropped_trajectory_bytes, 0u);
  EXPECT_EQ(t->turns_dropped, store.counters().dropped_trajectory_bytes);
}

TEST(TokenRecords, TotalBoundTakesReleasedTrajectoriesFirst) {
  TokenRecords store(limits());
  store.add("old-released", record(10'000), t0);
  store.release("old-released", t0 + 1s);
  for (int i = 0; i < 5; ++i) store.add("live" + std::to_string(i), record(10'000), t0 + 2s);
  store.add("live0", record(10'000), t0 + 3s);
  // Over 1 MiB now or soon: keep adding to live trajectories.
  for (int i = 0; i < 30; ++i) store.add("live" + std::to_string(i % 5), record(10'000), t0 + 4s);
  EXPECT_LE(store.bytes(), limits().max_bytes);
  EXPECT_EQ(store.find("old-released", t0 + 4s), nullptr);  // went whole, first
  EXPECT_NE(store.find("live0", t0 + 4s), nullptr);
  EXPECT_GT(store.counters().dropped_max_bytes, 0u);
}

TEST(TokenRecords, ReleasedRecordsAgeOut) {
  TokenRecords store(limits());
  store.add("a", record(10), t0);
  store.release("a", t0 + 10s);
  const auto* t = store.find("a", t0 + 100s);
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(store.is_released(*t, t0 + 100s));
  EXPECT_EQ(store.expires_at(*t), t0 + 10s + 300s);
  EXPECT_EQ(store.find("a", t0 + 311s), nullptr);
  EXPECT_EQ(store.counters().dropped_expired, 1u);
  // Idle past idle_ttl counts as released; its records age out ttl later.
  store.add("b", record(10), t0);
  ASSERT_NE(store.find("b", t0 + 359s), nullptr);
  EXPECT_TRUE(store.is_released(*store.find("b", t0 + 359s), t0 + 359s));
  EXPECT_EQ(store.find("b", t0 + 360s), nullptr);
}

TEST(TokenRecords, OneHugeRecordStaysWithinItsTrajectory) {
  TokenRecords store(limits());
  EXPECT_LE(store.max_values() * 4, limits().trajectory_max_bytes);
  store.add("a", record(store.max_values() * 2 / 3), t0);
  store.add("a", record(store.max_values() * 2 / 3), t0);
  const auto* t = store.find("a", t0);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->records.size(), 1u);
  EXPECT_EQ(t->records.front().turn, 1u);
}

}  // namespace
}  // namespace toolbridge::llm
