#include "policy/retry.h"

#include <gtest/gtest.h>

#include "stage_support.h"

namespace toolbridge::policy {
namespace {

using call::Fault;
using call::Result;
using namespace std::chrono_literals;

struct RetryTest : ::testing::Test {
  base::ManualClock clock;
  bool stopping = false;
  testing::ScriptedStage* last = nullptr;
  std::vector<std::unique_ptr<call::Stage>> chain;
  std::unique_ptr<testing::Routed> routed;

  void build(config::Server server) {
    routed = std::make_unique<testing::Routed>(std::move(server));
    chain.push_back(std::make_unique<RetryStage>(routed->io, clock, stopping, [] { return 0ms; }));
    auto scripted = std::make_unique<testing::ScriptedStage>();
    last = scripted.get();
    chain.push_back(std::move(scripted));
  }
  Result run(call::Call& call) {
    call.deadline = clock.now() + 10s;
    if (!chain.front()->applies(call)) return testing::run(routed->io, call::Next(chain, 1)(call));
    return testing::run(routed->io, call::Next(chain, 0)(call));
  }
};

TEST_F(RetryTest, ACallThatNeverReachedTheServerIsSentAgain) {
  config::Server s;
  s.max_retries = 2;
  build(s);
  last->script = {Result::failure(Fault::kNotSent, "died before"), Result{}};
  auto call = routed->call();
  const Result r = run(call);
  EXPECT_EQ(r.fault, Fault::kNone);
  EXPECT_EQ(last->attempts_seen, (std::vector<int>{0, 1}));
}

TEST_F(RetryTest, ACrashAfterSendingIsRetriedOnlyForIdempotentTools) {
  config::Server s;
  s.max_retries = 2;
  s.idempotent_tools = {"search"};
  build(s);
  last->script = {Result::failure(Fault::kCrashed, "died"), Result{}};
  auto write = routed->call("write");
  EXPECT_EQ(run(write).fault, Fault::kCrashed);
  EXPECT_EQ(last->attempts_seen.size(), 1u);
  last->attempts_seen.clear();
  last->script = {Result::failure(Fault::kCrashed, "died"), Result{}};
  auto search = routed->call("search");
  EXPECT_EQ(run(search).fault, Fault::kNone);
  EXPECT_EQ(last->attempts_seen.size(), 2u);
}

TEST_F(RetryTest, ATaskAugmentedCallIsNeverSentTwice) {
  // A second send would make a second task on the server (docs/tasks.md).
  config::Server s;
  s.max_retries = 2;
  s.idempotent_tools = {"*"};
  build(s);
  for (const Fault f : {Fault::kNotSent, Fault::kCrashed}) {
    last->attempts_seen.clear();
    last->script = {Result::failure(f, "died"), Result{}};
    auto call = routed->call("search");
    call.task_augmented = true;
    EXPECT_EQ(run(call).fault, f);
    EXPECT_EQ(last->attempts_seen.size(), 1u);
  }
}

TEST_F(RetryTest, StopsAtMaxRetries) {
  config::Server s;
  s.max_retries = 2;
  build(s);
  for (int i = 0; i < 5; ++i) last->script.push_back(Result::failure(Fault::kNotSent, "died"));
  auto call = routed->call();
  EXPECT_EQ(run(call).fault, Fault::kNotSent);
  EXPECT_EQ(last->attempts_seen, (std::vector<int>{0, 1, 2}));
}

TEST_F(RetryTest, NoRetryPastTheDeadline) {
  config::Server s;
  s.max_retries = 2;
  build(s);
  last->script = {Result::failure(Fault::kNotSent, "died"), Result{}};
  last->on_call = [this](call::Call&) { clock.advance(11s); };
  auto call = routed->call();
  EXPECT_EQ(run(call).fault, Fault::kNotSent);
  EXPECT_EQ(last->attempts_seen.size(), 1u);
}

TEST_F(RetryTest, ARetryThatFindsNoInstanceReportsTheFailureThatStartedIt) {
  config::Server s;
  s.max_retries = 1;
  build(s);
  last->script = {Result::failure(Fault::kNotSent, "server 'srv' exited with code 1"),
                  Result::failure(Fault::kUnavailable, "restarting")};
  // The second attempt never reaches an instance.
  last->on_call = [](call::Call& c) {
    if (c.attempts == 1) --c.sends;
  };
  auto call = routed->call();
  const Result r = run(call);
  EXPECT_EQ(r.fault, Fault::kCrashed);
  EXPECT_EQ(r.why,
            "server 'srv' exited with code 1; retried 1 time(s) but no instance was ready before "
            "the deadline");
}

TEST_F(RetryTest, DoesNotApplyToPerSessionServersOrWithoutRetries) {
  config::Server per_session;
  per_session.policy = config::Policy::kPerSession;
  build(per_session);
  {
    // (A call holds its upstream: it must go before the io_context it was made on.)
    auto call = routed->call();
    EXPECT_FALSE(chain.front()->applies(call));
  }
  chain.clear();
  config::Server none;
  none.max_retries = 0;
  build(none);
  auto other = routed->call();
  EXPECT_FALSE(chain.front()->applies(other));
}

}  // namespace
}  // namespace toolbridge::policy
