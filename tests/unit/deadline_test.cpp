#include "policy/deadline.h"

#include <gtest/gtest.h>

#include "stage_support.h"

namespace toolbridge::policy {
namespace {

using call::call_budget;
using call::Fault;
using namespace std::chrono_literals;

TEST(CallBudget, ToolTimeoutOverridesAndTheCallerMayOnlyShorten) {
  config::Server s;
  s.call_timeout = 300'000ms;
  s.tool_timeouts["slow"] = 900'000ms;
  EXPECT_EQ(call_budget(s, "fast", 0ms), 300'000ms);
  EXPECT_EQ(call_budget(s, "slow", 0ms), 900'000ms);
  EXPECT_EQ(call_budget(s, "fast", 2'000ms), 2'000ms);
  EXPECT_EQ(call_budget(s, "fast", 999'999ms), 300'000ms);
  EXPECT_EQ(call_budget(s, "", 0ms), 300'000ms);
}

TEST(CallRoute, SetsTheBudgetAndDeadlineOnceFromWhenTheCallArrived) {
  config::Server s;
  s.call_timeout = 2'000ms;
  s.tool_timeouts["slow"] = 9'000ms;
  testing::Routed routed(s);
  base::ManualClock clock;
  const auto arrived = clock.now();
  clock.advance(500ms);  // routed after it waited: the wait counts against its budget
  call::Call call;
  call.started = arrived;
  call.set_route(call::Route{routed.up, "srv", "slow", "srv__slow", "srv__slow"});
  EXPECT_EQ(call.timeout, 9'000ms);
  EXPECT_EQ(call.deadline, arrived + 9'000ms);

  call::Call asked;
  asked.started = arrived;
  asked.requested_timeout = 1'000ms;
  asked.set_route(call::Route{routed.up, "srv", "t", "srv__t", "srv__t"});
  EXPECT_EQ(asked.timeout, 1'000ms);
  EXPECT_EQ(asked.deadline, arrived + 1'000ms);

  // A stage tested alone with no upstream behind its route has no deadline.
  call::Call alone;
  alone.set_route(call::Route{nullptr, "srv", "t", "srv__t", "srv__t"});
  EXPECT_EQ(alone.deadline, call::Call::Clock::time_point::max());
}

TEST(DeadlineStage, RefusesAnAttemptPastTheDeadlineAndLeavesItAsSet) {
  config::Server s;
  s.call_timeout = 2'000ms;
  testing::Routed routed(s);
  base::ManualClock clock;
  std::vector<std::unique_ptr<call::Stage>> chain;
  chain.push_back(std::make_unique<DeadlineStage>(clock));
  auto scripted = std::make_unique<testing::ScriptedStage>();
  auto* last = scripted.get();
  chain.push_back(std::move(scripted));

  auto call = routed.call("t", clock.now());
  EXPECT_EQ(testing::run(routed.io, call::Next(chain, 0)(call)).fault, Fault::kNone);
  EXPECT_EQ(call.deadline, clock.now() + 2'000ms);
  EXPECT_EQ(call.timeout, 2'000ms);

  clock.advance(2'000ms);  // a retry arrives at the deadline
  const call::Result r = testing::run(routed.io, call::Next(chain, 0)(call));
  EXPECT_EQ(r.fault, Fault::kTimeout);
  EXPECT_EQ(r.why, "srv__t timed out after 2 s before it could be sent");
  EXPECT_EQ(last->attempts_seen.size(), 1u) << "the expired attempt never reaches dispatch";
  EXPECT_EQ(call.deadline, clock.now()) << "no stage moves the deadline";
}

}  // namespace
}  // namespace toolbridge::policy
