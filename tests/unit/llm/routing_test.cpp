#include "llm/routing.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace toolbridge::llm {
namespace {

std::vector<std::string> names(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back("w" + std::to_string(i));
  return out;
}

config::Model model(config::Routing r) {
  config::Model m;
  m.name = "sim";
  m.routing = r;
  return m;
}

TEST(LlmRouting, RoundRobinSkipsUnavailable) {
  auto p = make_policy(model(config::Routing::kRoundRobin), names(3));
  std::vector<WorkerLoad> w(3);
  w[1].available = false;
  std::vector<std::size_t> got;
  for (int i = 0; i < 4; ++i) got.push_back(p->pick({}, w)->worker);
  EXPECT_EQ(got, (std::vector<std::size_t>{0, 2, 0, 2}));
  for (auto& x : w) x.available = false;
  EXPECT_FALSE(p->pick({}, w));
}

TEST(LlmRouting, LeastOutstandingPicksTheIdlest) {
  auto p = make_policy(model(config::Routing::kLeastOutstanding), names(3));
  std::vector<WorkerLoad> w{{5, true}, {1, true}, {0, false}};
  EXPECT_EQ(p->pick({}, w)->worker, 1u);
}

TEST(LlmRouting, AffinityIsStickyWhileLoadIsBounded) {
  AffinityPolicy p(names(4), 1.25);
  std::vector<WorkerLoad> w(4);
  const RouteInput in{"trajectory-7", "x"};
  const std::size_t home = p.home("trajectory-7");
  for (int turn = 0; turn < 30; ++turn) {
    auto c = p.pick(in, w);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->worker, home);
    EXPECT_FALSE(c->spilled);
  }
}

TEST(LlmRouting, AffinitySpillsToTheNextOnTheRingWhenOverloaded) {
  AffinityPolicy p(names(4), 1.25);
  const RouteInput in{"trajectory-7", "x"};
  const std::size_t home = p.home("trajectory-7");
  std::vector<WorkerLoad> w(4);
  w[home].in_flight = 10;  // mean with this request: 11/4 -> cap ceil(3.44) = 4
  auto c = p.pick(in, w);
  ASSERT_TRUE(c);
  EXPECT_NE(c->worker, home);
  EXPECT_TRUE(c->spilled);
  // Always the same next worker: the ring's order, not a random one.
  EXPECT_EQ(p.pick(in, w)->worker, c->worker);
  // A dead home moves the trajectory too (not a spill: nothing was overloaded).
  w[home].in_flight = 0;
  w[home].available = false;
  auto d = p.pick(in, w);
  EXPECT_NE(d->worker, home);
  EXPECT_FALSE(d->spilled);
}

TEST(LlmRouting, AffinitySpreadsTrajectoriesAndBoundsLoad) {
  AffinityPolicy p(names(4), 1.25);
  std::vector<WorkerLoad> w(4);
  // 64 trajectories each holding one request: no worker gets more than ceil(1.25 x 16) = 20.
  for (int t = 0; t < 64; ++t) {
    const std::string id = "traj-" + std::to_string(t);
    auto c = p.pick({id, ""}, w);
    ++w[c->worker].in_flight;
  }
  for (const auto& x : w) EXPECT_LE(x.in_flight, 20u);
}

TEST(LlmRouting, AffinityWithoutTrajectoryIsLeastLoaded) {
  AffinityPolicy p(names(3), 1.25);
  std::vector<WorkerLoad> w{{3, true}, {0, true}, {2, true}};
  EXPECT_EQ(p.pick({"", "x"}, w)->worker, 1u);
}

TEST(LlmRouting, PrefixAwareFollowsTheLongestMatch) {
  PrefixAwarePolicy p(model(config::Routing::kPrefixAware));
  std::vector<WorkerLoad> w(3);
  const std::string sys(1000, 's');
  p.routed({"", sys + "task A"}, 2);
  p.routed({"", sys + "task B"}, 0);
  auto c = p.pick({"", sys + "task A, turn 2"}, w);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->worker, 2u);
  EXPECT_EQ(c->matched, sys.size() + 6);
  EXPECT_FALSE(c->spilled);
}

TEST(LlmRouting, PrefixAwareShortMatchGoesToTheLeastLoaded) {
  PrefixAwarePolicy p(model(config::Routing::kPrefixAware));
  std::vector<WorkerLoad> w{{2, true}, {0, true}, {1, true}};
  p.routed({"", "ab"}, 0);
  // 2 of 100 bytes matched: below prefix_min_match (0.5).
  EXPECT_EQ(p.pick({"", "ab" + std::string(98, 'z')}, w)->worker, 1u);
}

TEST(LlmRouting, PrefixAwareSpillsFromAnOverloadedWorker) {
  config::Model m = model(config::Routing::kPrefixAware);
  m.prefix_balance = 1.5;
  m.prefix_balance_slack = 2;
  PrefixAwarePolicy p(m);
  const std::string prompt(1000, 'p');
  p.routed({"", prompt}, 0);
  std::vector<WorkerLoad> w{{9, true}, {1, true}, {2, true}};
  // mean 4, limit 1.5 x 4 + 2 = 8: worker 0 (9) is overloaded.
  auto c = p.pick({"", prompt + " more"}, w);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->worker, 1u);
  EXPECT_TRUE(c->spilled);
  w[0].in_flight = 7;  // mean 10/3, limit 7: at the limit, not overloaded
  EXPECT_EQ(p.pick({"", prompt + " more"}, w)->worker, 0u);
}

TEST(LlmRouting, PrefixAwareTiesGoToTheLeastLoaded) {
  PrefixAwarePolicy p(model(config::Routing::kPrefixAware));
  const std::string sys(1000, 's');
  for (std::size_t i = 0; i < 3; ++i) p.routed({"", sys + "task" + std::to_string(i)}, i);
  std::vector<WorkerLoad> w{{3, true}, {1, true}, {2, true}};
  EXPECT_EQ(p.pick({"", sys + "new task"}, w)->worker, 1u);
}

TEST(LlmRouting, StableHashIsStable) {
  // Pinned: the affinity ring must place a trajectory on the same worker in every process and
  // build (several gateways behind one balancer, a restart), so the hash is a fixed function.
  EXPECT_EQ(stable_hash("abc"), 0x0dd490490804b508ull);
  EXPECT_EQ(stable_hash("traj-1"), 0x63af0a9a92697ee3ull);
  EXPECT_EQ(stable_hash(""), 0xf52a15e9a9b5e89bull);
  EXPECT_NE(stable_hash("traj-1"), stable_hash("traj-2"));
}

}  // namespace
}  // namespace toolbridge::llm
