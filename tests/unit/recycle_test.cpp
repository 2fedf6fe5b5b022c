// Recycling decisions and session idle expiry, driven by a ManualClock: no sleeping.
#include "upstream/recycle.h"

#include <gtest/gtest.h>

#include <vector>

namespace toolbridge::upstream {
namespace {

using namespace std::chrono_literals;

MemberUse ready_since(base::Clock::time_point t, std::size_t in_flight = 0) {
  return MemberUse{true, t, t, 0, in_flight};
}

TEST(Recycling, MaxCallsRetiresOnTheLastAllowedCall) {
  const Recycling r(RecycleLimits{.max_calls = 3});
  EXPECT_FALSE(r.calls_exhausted(1));
  EXPECT_FALSE(r.calls_exhausted(2));
  EXPECT_TRUE(r.calls_exhausted(3));
  EXPECT_TRUE(r.calls_exhausted(4));
  EXPECT_FALSE(Recycling(RecycleLimits{}).calls_exhausted(1'000'000));  // 0: never
}

TEST(Recycling, MaxAgeCountsFromReadiness) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.max_age = 10min});
  const MemberUse m = ready_since(clock.now(), 5);
  clock.advance(10min - 1ms);
  EXPECT_FALSE(r.too_old(m, clock.now()));
  clock.advance(1ms);
  EXPECT_TRUE(r.too_old(m, clock.now()));  // busy or not: it drains first
  MemberUse starting = m;
  starting.ready = false;
  EXPECT_FALSE(r.too_old(starting, clock.now()));
  EXPECT_FALSE(Recycling(RecycleLimits{}).too_old(m, clock.now() + 1000h));
}

TEST(Recycling, IdleMeansReadyNothingInFlightAndUnusedForTheTtl) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.idle_ttl = 60s});
  MemberUse m = ready_since(clock.now());
  clock.advance(30s);
  m.last_used = clock.now();
  clock.advance(59s);
  EXPECT_FALSE(r.idle_too_long(m, clock.now()));
  clock.advance(1s);
  EXPECT_TRUE(r.idle_too_long(m, clock.now()));
  m.in_flight = 1;
  EXPECT_FALSE(r.idle_too_long(m, clock.now()));
  EXPECT_FALSE(
      Recycling(RecycleLimits{}).idle_too_long(ready_since(clock.now() - 1000h), clock.now()));
}

TEST(Recycling, APoolShrinksTowardsItsMinimum) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.idle_ttl = 60s, .min_members = 2});
  const std::vector<MemberUse> members(4, ready_since(clock.now()));
  EXPECT_TRUE(r.idle_pool_members(members, 4, clock.now() + 59s).empty());
  const auto retire = r.idle_pool_members(members, 4, clock.now() + 60s);
  EXPECT_EQ(retire, (std::vector<std::size_t>{0, 1}));
}

TEST(Recycling, APoolKeepsItsSparesIdle) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.idle_ttl = 60s, .min_members = 0, .spares = 1});
  std::vector<MemberUse> members(3, ready_since(clock.now()));
  members[0].in_flight = 2;  // busy: not idle, and it does not count as a spare
  const auto retire = r.idle_pool_members(members, 3, clock.now() + 2min);
  EXPECT_EQ(retire, (std::vector<std::size_t>{1}));
}

TEST(Recycling, OnlyMembersIdleForTheTtlAreRetired) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.idle_ttl = 60s, .min_members = 1});
  std::vector<MemberUse> members(3, ready_since(clock.now()));
  members[0].last_used = clock.now() + 30s;  // used recently
  members[2].ready = false;                  // retiring or starting: not this decision's
  const auto retire = r.idle_pool_members(members, 3, clock.now() + 70s);
  EXPECT_EQ(retire, (std::vector<std::size_t>{1}));
}

TEST(Recycling, NoIdleTtlNeverShrinks) {
  base::ManualClock clock;
  const Recycling r(RecycleLimits{.min_members = 0});
  const std::vector<MemberUse> members(3, ready_since(clock.now()));
  EXPECT_TRUE(r.idle_pool_members(members, 3, clock.now() + 1000h).empty());
}

TEST(ExpiredBindings, SessionsIdleSinceTheCutoffWithNothingInFlight) {
  base::ManualClock clock;
  const auto start = clock.now();
  std::vector<BindingUse> bindings = {
      {"old", start, false},
      {"old-but-busy", start, true},
      {"recent", start + 50s, false},
      {"at-cutoff", start + 30s, false},
  };
  clock.advance(90s);
  const auto cutoff = clock.now() - 60s;  // session_idle_ttl 60 s
  EXPECT_EQ(expired_bindings(bindings, cutoff), (std::vector<std::string>{"old"}));
  clock.advance(1ms);
  EXPECT_EQ(expired_bindings(bindings, clock.now() - 60s),
            (std::vector<std::string>{"old", "at-cutoff"}));
}

}  // namespace
}  // namespace toolbridge::upstream
