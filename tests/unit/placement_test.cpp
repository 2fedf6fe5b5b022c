// Placement strategies over plain candidates: no instances, no processes.
#include "upstream/placement.h"

#include <gtest/gtest.h>

#include <vector>

namespace toolbridge::upstream {
namespace {

Candidate ready(std::size_t in_flight, std::string_view key = {}) {
  return Candidate{true, false, in_flight, key};
}
Candidate starting(std::string_view key = {}) {
  return Candidate{false, false, 0, key};
}
Candidate retiring(std::size_t in_flight = 0, std::string_view key = {}) {
  return Candidate{false, true, in_flight, key};
}

TEST(SharedPlacement, TheReadyMemberTakesEveryCall) {
  const SharedPlacement p;
  const std::vector<Candidate> c = {retiring(0), ready(7)};
  const Choice choice = p.choose(c, "s", Situation{});
  EXPECT_EQ(choice.member, 1u);
  EXPECT_FALSE(choice.start);
  EXPECT_FALSE(choice.wait);
}

TEST(SharedPlacement, NothingRunningStartsOneAndWaits) {
  const SharedPlacement p;
  const std::vector<Candidate> none;
  const Choice choice = p.choose(none, "", Situation{});
  EXPECT_FALSE(choice.placed());
  EXPECT_TRUE(choice.start);
  EXPECT_TRUE(choice.wait);
  // Only retiring ones: they do not count.
  const std::vector<Candidate> old = {retiring(3)};
  EXPECT_TRUE(p.choose(old, "", Situation{}).start);
}

TEST(SharedPlacement, AMemberAlreadyStartingIsWaitedForNotDoubled) {
  const SharedPlacement p;
  const std::vector<Candidate> c = {starting()};
  const Choice choice = p.choose(c, "", Situation{});
  EXPECT_TRUE(choice.wait);
  EXPECT_FALSE(choice.start);
}

TEST(SharedPlacement, WhileBackingOffTheCallWaitsWithoutStarting) {
  const SharedPlacement p;
  const Choice choice = p.choose({}, "", Situation{false, true, 0});
  EXPECT_TRUE(choice.wait);
  EXPECT_FALSE(choice.start);
}

TEST(SharedPlacement, FailingStartsRefuseAtOnce) {
  const SharedPlacement p;
  const Choice choice = p.choose({}, "", Situation{true, true, 0});
  EXPECT_TRUE(choice.refused());
  EXPECT_FALSE(choice.start);
}

TEST(LeastLoadedPlacement, PicksTheReadyMemberWithFewestCallsInFlight) {
  const LeastLoadedPlacement p(/*target*/ 4, /*max_in_flight*/ 8, /*max_members*/ 4);
  const std::vector<Candidate> c = {ready(3), retiring(0), starting(), ready(1), ready(2)};
  const Choice choice = p.choose(c, "", Situation{});
  EXPECT_EQ(choice.member, 3u);
  EXPECT_FALSE(choice.start);
}

TEST(LeastLoadedPlacement, GrowsByOneWhenEveryMemberHasTheTarget) {
  const LeastLoadedPlacement p(2, 8, 3);
  const std::vector<Candidate> c = {ready(2), ready(3)};
  const Choice choice = p.choose(c, "", Situation{});
  EXPECT_EQ(choice.member, 0u);  // this call does not wait for the new one
  EXPECT_TRUE(choice.start);
  EXPECT_FALSE(choice.wait);
}

TEST(LeastLoadedPlacement, DoesNotGrowPastMaxWhileStartingOrBackingOff) {
  const LeastLoadedPlacement p(1, 8, 2);
  const std::vector<Candidate> full = {ready(1), ready(1), retiring(0)};
  EXPECT_FALSE(p.choose(full, "", Situation{}).start);  // retiring ones do not count to max
  const std::vector<Candidate> growing = {ready(1), starting()};
  EXPECT_FALSE(p.choose(growing, "", Situation{}).start);
  const std::vector<Candidate> one = {ready(1)};
  EXPECT_TRUE(p.choose(one, "", Situation{}).start);
  EXPECT_FALSE(p.choose(one, "", Situation{false, true, 0}).start);
}

TEST(LeastLoadedPlacement, AtMaxInFlightTheCallWaitsForTheMemberStarting) {
  const LeastLoadedPlacement p(1, 2, 4);
  const std::vector<Candidate> busy = {ready(2)};
  Choice choice = p.choose(busy, "", Situation{});
  EXPECT_TRUE(choice.start);
  EXPECT_TRUE(choice.wait);
  EXPECT_FALSE(choice.placed());
  // Nothing can start (max reached): the call goes to the busy member rather than wait forever.
  const LeastLoadedPlacement full(1, 2, 1);
  choice = full.choose(busy, "", Situation{});
  EXPECT_EQ(choice.member, 0u);
  EXPECT_FALSE(choice.wait);
}

TEST(LeastLoadedPlacement, EmptyPoolBehavesLikeShared) {
  const LeastLoadedPlacement p(1, 2, 4);
  EXPECT_TRUE(p.choose({}, "", Situation{}).start);
  EXPECT_TRUE(p.choose({}, "", Situation{true, false, 0}).refused());
}

TEST(SessionAffinityPlacement, AKeysCallsGoToItsOwnMember) {
  const SessionAffinityPlacement p(8, true);
  const std::vector<Candidate> c = {ready(0), ready(5, "a"), ready(0, "b")};
  EXPECT_EQ(p.choose(c, "a", Situation{}).member, 1u);
  EXPECT_EQ(p.choose(c, "b", Situation{}).member, 2u);
  const std::vector<Candidate> mine_starting = {ready(0), starting("a")};
  const Choice choice = p.choose(mine_starting, "a", Situation{});
  EXPECT_TRUE(choice.wait);
  EXPECT_FALSE(choice.start);
  EXPECT_FALSE(choice.placed());
}

TEST(SessionAffinityPlacement, ANewKeyTakesTheFirstReadySpare) {
  const SessionAffinityPlacement p(8, true);
  const std::vector<Candidate> c = {ready(0, "a"), starting(), retiring(0), ready(0), ready(0)};
  EXPECT_EQ(p.choose(c, "new", Situation{}).member, 3u);
  // Even while starts are failing: a warm spare is fine.
  EXPECT_EQ(p.choose(c, "new", Situation{true, true, 0}).member, 3u);
}

TEST(SessionAffinityPlacement, AMemberRetiringFromAnEndedSessionIsNotReused) {
  const SessionAffinityPlacement p(8, true);
  const std::vector<Candidate> c = {retiring(0, "a")};
  const Choice choice = p.choose(c, "a", Situation{});
  EXPECT_TRUE(choice.start);
  EXPECT_TRUE(choice.wait);
}

TEST(SessionAffinityPlacement, SparesStartingServeKeysInArrivalOrder) {
  const SessionAffinityPlacement p(8, true);
  const std::vector<Candidate> c = {starting(), starting()};
  Choice choice = p.choose(c, "k", Situation{false, false, 1});
  EXPECT_TRUE(choice.queued);
  EXPECT_FALSE(choice.start);
  // Two keys are ahead: no spare left for this one, it starts its own.
  choice = p.choose(c, "k", Situation{false, false, 2});
  EXPECT_FALSE(choice.queued);
  EXPECT_TRUE(choice.start);
  EXPECT_TRUE(choice.wait);
}

TEST(SessionAffinityPlacement, WithoutSparesEachKeyStartsItsOwnUpToTheMax) {
  const SessionAffinityPlacement p(2, /*spares_serve_keys*/ false);
  std::vector<Candidate> c = {ready(0), starting()};  // not for keys: made for no session
  Choice choice = p.choose(c, "k", Situation{});
  EXPECT_FALSE(choice.placed());
  EXPECT_FALSE(choice.queued);
  EXPECT_FALSE(choice.start);  // two members exist: max reached
  EXPECT_TRUE(choice.wait);
  c.pop_back();
  EXPECT_TRUE(p.choose(c, "k", Situation{}).start);
}

TEST(SessionAffinityPlacement, NoSpareAndFailingStartsRefuse) {
  const SessionAffinityPlacement p(8, true);
  EXPECT_TRUE(p.choose({}, "k", Situation{true, false, 0}).refused());
  EXPECT_TRUE(p.choose({}, "k", Situation{false, true, 0}).refused());
}

}  // namespace
}  // namespace toolbridge::upstream
