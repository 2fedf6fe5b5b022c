// The breaker stage feeds its breaker only the calls that reached the server: a call whose
// deadline passed while it queued (for a permit, for an instance) says nothing of the server.
// Found by `toolbridge-bench eval`'s scale row: 1,024 trajectories at once held sandbox calls in
// the adaptive admission queue to their deadline, the deadline stage answered them "timed out
// before it could be sent", the breaker counted five in a row and refused every sandbox call for
// its cooldown.
#include "policy/breaker_stage.h"

#include <gtest/gtest.h>

#include "policy/deadline.h"
#include "unit/stage_support.h"

namespace toolbridge::policy {
namespace {

using call::Fault;
using namespace std::chrono_literals;

struct BreakerStageTest : ::testing::Test {
  base::ManualClock clock;
  config::Server server = [] {
    config::Server s;
    s.name = "srv";
    s.call_timeout = 1'000ms;
    s.breaker_threshold = 2;
    s.breaker_cooldown = 5'000ms;
    return s;
  }();
  testing::Routed routed{server};
  BreakerStage* breakers = nullptr;
  testing::ScriptedStage* last = nullptr;
  std::vector<std::unique_ptr<call::Stage>> chain;

  BreakerStageTest() {
    auto b =
        std::make_unique<BreakerStage>(std::vector<config::Server>{server}, routed.metrics, clock);
    breakers = b.get();
    chain.push_back(std::move(b));
    chain.push_back(std::make_unique<DeadlineStage>(clock));
    auto s = std::make_unique<testing::ScriptedStage>();
    last = s.get();
    chain.push_back(std::move(s));
  }
  // A call whose deadline passed before it reached the breaker (it queued that long).
  call::Result expired_call() {
    auto call = routed.call("t", clock.now() - 1'500ms);
    return testing::run(routed.io, call::Next(chain, 0)(call));
  }
  // A call that is sent and answered with `result`.
  call::Result sent_call(call::Result result) {
    last->script.push_back(std::move(result));
    auto call = routed.call("t", clock.now());
    return testing::run(routed.io, call::Next(chain, 0)(call));
  }
  Breaker::State state() const { return breakers->find("srv")->state(); }
};

TEST_F(BreakerStageTest, CallsThatExpiredBeforeBeingSentNeverOpenIt) {
  for (int i = 0; i < 5; ++i) {
    const call::Result r = expired_call();
    EXPECT_EQ(r.fault, Fault::kTimeout);
    EXPECT_EQ(r.why, "srv__t timed out after 1 s before it could be sent");
  }
  EXPECT_EQ(state(), Breaker::State::kClosed);
  EXPECT_TRUE(last->attempts_seen.empty());
  EXPECT_EQ(sent_call({}).fault, Fault::kNone) << "a healthy server's next call is not refused";
}

TEST_F(BreakerStageTest, CallsThatTimedOutAtTheServerStillOpenIt) {
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(sent_call(call::Result::failure(Fault::kTimeout, "srv__t timed out")).fault,
              Fault::kTimeout);
  EXPECT_EQ(state(), Breaker::State::kOpen);
  const call::Result refused = sent_call({});
  EXPECT_EQ(refused.fault, Fault::kUnavailable);
  EXPECT_EQ(last->attempts_seen.size(), 2u);
}

TEST_F(BreakerStageTest, AProbeThatExpiredBeforeBeingSentLeavesTheProbeToTheNextCall) {
  for (int i = 0; i < 2; ++i) sent_call(call::Result::failure(Fault::kTimeout, "timed out"));
  ASSERT_EQ(state(), Breaker::State::kOpen);
  last->script.clear();
  clock.advance(5'000ms);
  EXPECT_EQ(expired_call().fault, Fault::kTimeout);  // admitted as the probe, never sent
  EXPECT_EQ(state(), Breaker::State::kHalfOpen) << "not reopened by a call the server never saw";
  EXPECT_EQ(sent_call({}).fault, Fault::kNone) << "the next call probes, and closes it";
  EXPECT_EQ(state(), Breaker::State::kClosed);
}

// A reload (docs/reload.md): a server whose breaker settings did not change keeps its breaker
// and its state; one whose settings changed gets a fresh one; a new server gets one; a removed
// server none.
TEST_F(BreakerStageTest, AReloadKeepsUnchangedBreakersAndRenewsChangedOnes) {
  for (int i = 0; i < 2; ++i) sent_call(call::Result::failure(Fault::kTimeout, "timed out"));
  ASSERT_EQ(state(), Breaker::State::kOpen);
  config::Server added = server;
  added.name = "added";
  breakers->set_servers({server, added});
  EXPECT_EQ(state(), Breaker::State::kOpen);
  ASSERT_NE(breakers->find("added"), nullptr);
  EXPECT_EQ(breakers->find("added")->state(), Breaker::State::kClosed);

  config::Server changed = server;
  changed.breaker_threshold = 3;
  breakers->set_servers({changed});
  EXPECT_EQ(state(), Breaker::State::kClosed);
  EXPECT_EQ(breakers->find("srv")->options().threshold, 3u);
  EXPECT_EQ(breakers->find("added"), nullptr);
}

}  // namespace
}  // namespace toolbridge::policy
