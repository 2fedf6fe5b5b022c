#include "policy/admission_stage.h"

#include <gtest/gtest.h>

#include "policy/retry.h"
#include "stage_support.h"

namespace toolbridge::policy {
namespace {

using gateway::Fault;
using gateway::Result;
using namespace std::chrono_literals;

struct AdmissionStageTest : ::testing::Test {
  base::ManualClock clock;
  bool stopping = false;
  config::Config config;
  std::unique_ptr<testing::Routed> routed;
  std::vector<std::unique_ptr<gateway::Stage>> chain;
  AdmissionStage* admission = nullptr;
  testing::ScriptedStage* last = nullptr;

  void build(config::Server server) {
    // Calls start on the steady clock, their deadlines too: the manual clock starts there.
    clock.set(std::chrono::steady_clock::now());
    server.name = "srv";
    config.servers.push_back(server);
    routed = std::make_unique<testing::Routed>(server);
    chain.push_back(std::make_unique<AdmissionStage>(routed->io, config, routed->metrics, clock));
    admission = static_cast<AdmissionStage*>(chain.back().get());
    chain.push_back(std::make_unique<RetryStage>(routed->io, clock, stopping, [] { return 0ms; }));
    auto scripted = std::make_unique<testing::ScriptedStage>();
    last = scripted.get();
    chain.push_back(std::move(scripted));
  }
  Result run(gateway::Call& call) {
    return testing::run(routed->io, gateway::Next(chain, 0)(call));
  }
};

TEST_F(AdmissionStageTest, WithoutALimitTheStageIsSteppedOver) {
  config::Server per_session;
  per_session.policy = config::Policy::kPerSession;
  build(per_session);
  auto call = routed->call();
  EXPECT_FALSE(admission->applies(call));
}

TEST_F(AdmissionStageTest, ASharedServerWithoutALimitIsAdmittedByItsCapacity) {
  build(config::Server{});  // shared: its capacity (max_in_flight) is its limit
  auto call = routed->call();
  EXPECT_TRUE(admission->applies(call));
}

TEST_F(AdmissionStageTest, ARetriedCallKeepsItsSlotAndGivesItBackOnceAnswered) {
  config::Server s;
  s.concurrency_limit = 1;
  s.max_retries = 2;
  build(s);
  std::vector<std::size_t> in_flight_seen;
  last->on_call = [&](gateway::Call&) {
    in_flight_seen.push_back(admission->admission().servers()[0].in_flight);
  };
  last->script = {Result::failure(Fault::kNotSent, "died before"), Result{}};
  auto call = routed->call();
  call.tenant = "run-a";
  ASSERT_TRUE(admission->applies(call));
  EXPECT_EQ(run(call).fault, Fault::kNone);
  // One slot through both attempts (the retry runs inside the admission), none after.
  EXPECT_EQ(in_flight_seen, (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(admission->admission().servers()[0].in_flight, 0u);
  // The deadline was set here, from the server's call_timeout: queue time counts against it.
  EXPECT_EQ(call.timeout, s.call_timeout);
  EXPECT_EQ(routed->metrics.counter("toolbridge_admission_admitted_total",
                                    telemetry::labels({{"server", "srv"}, {"tenant", "other"}})),
            1u);
  const auto health = admission->health();
  EXPECT_EQ(health.at("servers").at("srv").at("limit"), 1);
  EXPECT_EQ(health.at("servers").at("srv").at("in_flight"), 0);
}

}  // namespace
}  // namespace toolbridge::policy
