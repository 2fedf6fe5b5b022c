// Deadlines, the breaker's cool-down, cache TTLs and idle expiry on the whole gateway (its
// pipeline, supervisors and instances, with the real fixture server as a child process) under a
// ManualClock: the processes are real, the passing of time is not, so nothing here sleeps. These
// replace integration tests that slept through each timeout (CONTRIBUTING.md, "Time in tests").
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <chrono>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "config/config.h"
#include "gateway/gateway.h"
#include "gateway/methods.h"
#include "gateway/pipeline.h"
#include "json/envelope.h"
#include "policy/breaker_stage.h"

namespace toolbridge::gateway {
namespace {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

class SimulatedTime : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    spdlog::set_level(spdlog::level::err);
  }
  void TearDown() override {
    if (gateway_) {
      gateway_->begin_stop();
      bool stopped = false;
      asio::co_spawn(io_, gateway_->stop_servers(), [&](std::exception_ptr) { stopped = true; });
      // A server that does not exit when its stdin closes is stopped by the ladder's next rung
      // once its stop_grace has passed: let simulated time pass too.
      until(
          [&] {
            clock_.advance(100ms);
            return stopped;
          },
          "the servers stopped");
    }
    spdlog::set_level(spdlog::level::info);
  }

  // A gateway with the fixture server under `server_yaml` (its keys, indented by four spaces).
  void start(const std::string& server_yaml, const std::string& gateway_yaml = "") {
    std::string text = "servers:\n  fixture:\n    command: " + std::string(TOOLBRIDGE_FIXTURE) +
                       "\n    startup_timeout: 20s\n    stop_grace: 2s\n" + server_yaml;
    if (!gateway_yaml.empty()) text += "gateway:\n" + gateway_yaml;
    gateway_ = std::make_unique<Gateway>(io_, config::load_text(text, "test.yaml", false), clock_);
    const base::Status started = gateway_->start();
    ASSERT_TRUE(started.ok()) << started.error();
    until([&] { return gateway_->settled(); }, "the fixture server started");
  }

  // Runs the io_context until `done`: the child's answers arrive in real time (bounded here by
  // a watchdog that is no measurement), the gateway's timers only when the clock is advanced.
  void until(const std::function<bool()>& done, const char* what) {
    const auto give_up = std::chrono::steady_clock::now() + 20s;
    while (!done()) {
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "gave up waiting for: " << what;
        return;
      }
      io_.restart();
      io_.run_one_for(10ms);
    }
  }

  // Lets whatever is ready run (the child's answers included) without advancing the clock.
  void settle() {
    for (int i = 0; i < 20; ++i) {
      io_.restart();
      io_.run_for(2ms);
    }
  }

  struct Running {
    call::Call call;
    std::optional<call::Result> result;
    std::string answer() const { return to_jsonrpc(call, *result); }
    bool done() const { return result.has_value(); }
  };

  // Starts a tools/call through the pipeline as a front end does; `requested` is the caller's
  // _meta["toolbridge/timeout_ms"] (0: none).
  std::shared_ptr<Running> call(const std::string& tool, bj::object args, int id = 1,
                                std::chrono::milliseconds requested = {}) {
    auto r = std::make_shared<Running>();
    r->call.method = "tools/call";
    r->call.id = std::to_string(id);
    r->call.params = bj::serialize(bj::object{{"name", tool}, {"arguments", std::move(args)}});
    r->call.members = *json::object_members(r->call.params);
    r->call.trajectory = "t1";
    r->call.tenant = "t1";
    r->call.requested_timeout = requested;
    r->call.started = clock_.now();
    asio::co_spawn(
        io_,
        [this, r]() -> asio::awaitable<void> {
          r->result = co_await gateway_->pipeline().run(r->call);
        },
        asio::detached);
    return r;
  }
  std::shared_ptr<Running> call_and_wait(const std::string& tool, bj::object args, int id = 1,
                                         std::chrono::milliseconds requested = {}) {
    auto r = call(tool, std::move(args), id, requested);
    until([&] { return r->done(); }, "the call's answer");
    return r;
  }

  bj::object fixture_health() const {
    return bj::parse(gateway_->health_json()).at("servers").at("fixture").as_object();
  }
  std::uint64_t in_flight() const {
    return fixture_health().at("in_flight").to_number<std::uint64_t>();
  }

  static std::string text_of(const std::string& answer) {
    const bj::value v = bj::parse(answer);
    return std::string(v.at("result").at("content").at(0).at("text").as_string());
  }
  static bool is_error(const std::string& answer) {
    const bj::value v = bj::parse(answer);
    const auto* e = v.at("result").as_object().if_contains("isError");
    return e && e->as_bool();
  }
  std::string breaker() const {
    const policy::Breaker* b = gateway_->pipeline().breakers().find("fixture");
    return b ? std::string(b->state_name()) : "closed";
  }

  asio::io_context io_;
  base::ManualClock clock_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(SimulatedTime, ACallTimesOutAtItsDeadlineAndNotBefore) {
  start("    call_timeout: 1s\n");
  auto r = call("fixture__sleep", {{"ms", 5000}});
  until([&] { return in_flight() == 1; }, "the call reached the server");
  clock_.advance(999ms);
  settle();
  EXPECT_FALSE(r->done()) << "the deadline is 1 s from the call's start";
  clock_.advance(1ms);
  until([&] { return r->done(); }, "the timeout");
  EXPECT_TRUE(is_error(r->answer()));
  EXPECT_EQ(text_of(r->answer()), "fixture__sleep timed out after 1 s; the request was cancelled");
  EXPECT_NE(gateway_->metrics().render().find("outcome=\"timeout\""), std::string::npos);
  // The instance is still healthy for the next call.
  EXPECT_EQ(text_of(call_and_wait("fixture__echo", {{"text", "after"}}, 2)->answer()), "after");
}

TEST_F(SimulatedTime, ACallerMayShortenItsDeadlineButNotLengthenIt) {
  start("    call_timeout: 2s\n");
  auto shortened = call("fixture__sleep", {{"ms", 5000}}, 1, 300ms);
  until([&] { return in_flight() == 1; }, "the call reached the server");
  clock_.advance(300ms);
  until([&] { return shortened->done(); }, "the shortened deadline");
  EXPECT_NE(text_of(shortened->answer()).find("after 0.3 s"), std::string::npos)
      << shortened->answer();
  auto capped = call("fixture__sleep", {{"ms", 5000}}, 2, 60s);  // more than 2 s gets 2 s
  until([&] { return in_flight() == 1; }, "the call reached the server");
  clock_.advance(1999ms);
  settle();
  EXPECT_FALSE(capped->done());
  clock_.advance(1ms);
  until([&] { return capped->done(); }, "the configured deadline");
  EXPECT_NE(text_of(capped->answer()).find("after 2 s"), std::string::npos) << capped->answer();
  // A short call under a generous caller deadline is unaffected.
  EXPECT_EQ(text_of(call_and_wait("fixture__sleep", {{"ms", 10}}, 3, 5s)->answer()), "slept 10 ms");
}

TEST_F(SimulatedTime, APerToolTimeoutOverridesTheServerDefault) {
  start("    call_timeout: 30s\n    tool_timeouts:\n      sleep: 500ms\n");
  auto r = call("fixture__sleep", {{"ms", 3000}});
  until([&] { return in_flight() == 1; }, "the call reached the server");
  clock_.advance(500ms);
  until([&] { return r->done(); }, "the timeout");
  EXPECT_EQ(text_of(r->answer()),
            "fixture__sleep timed out after 0.5 s; the request was cancelled");
}

TEST_F(SimulatedTime, TheBreakerOpensAfterTimeoutsFailsFastAndClosesOnAGoodProbe) {
  start("    call_timeout: 300ms\n    breaker_threshold: 3\n    breaker_cooldown: 1s\n");
  for (int i = 0; i < 3; ++i) {
    auto r = call("fixture__hang", {}, i + 1);
    until([&] { return in_flight() == 1; }, "the call reached the server");
    clock_.advance(300ms);
    until([&] { return r->done(); }, "the timeout");
    EXPECT_NE(text_of(r->answer()).find("timed out"), std::string::npos) << r->answer();
  }
  EXPECT_EQ(breaker(), "open");
  auto refused = call("fixture__echo", {{"text", "refused"}}, 10);
  settle();
  ASSERT_TRUE(refused->done()) << "an open breaker answers at once";
  EXPECT_TRUE(is_error(refused->answer()));
  const std::string message = text_of(refused->answer());
  EXPECT_NE(message.find("is failing (3 calls in a row timed out"), std::string::npos) << message;
  EXPECT_NE(message.find("probe"), std::string::npos) << message;

  clock_.advance(1s);  // half-open: one probe goes through; it succeeds, so the breaker closes
  EXPECT_EQ(text_of(call_and_wait("fixture__echo", {{"text", "probe"}}, 11)->answer()), "probe");
  EXPECT_EQ(breaker(), "closed");
  EXPECT_EQ(text_of(call_and_wait("fixture__echo", {{"text", "normal"}}, 12)->answer()), "normal");
  EXPECT_NE(
      gateway_->metrics().render().find("toolbridge_breaker_opened_total{server=\"fixture\"} 1"),
      std::string::npos);
}

TEST_F(SimulatedTime, AFailedProbeReopensTheBreaker) {
  start("    call_timeout: 300ms\n    breaker_threshold: 2\n    breaker_cooldown: 500ms\n");
  for (int i = 0; i < 2; ++i) {
    auto r = call("fixture__hang", {}, i + 1);
    until([&] { return in_flight() == 1; }, "the call reached the server");
    clock_.advance(300ms);
    until([&] { return r->done(); }, "the timeout");
  }
  EXPECT_EQ(breaker(), "open");
  clock_.advance(500ms);
  auto probe = call("fixture__hang", {}, 3);
  until([&] { return in_flight() == 1; }, "the probe reached the server");
  clock_.advance(300ms);
  until([&] { return probe->done(); }, "the probe's timeout");
  EXPECT_NE(text_of(probe->answer()).find("timed out"), std::string::npos) << probe->answer();
  EXPECT_EQ(breaker(), "open");
  auto refused = call("fixture__echo", {{"text", "x"}}, 4);
  settle();
  ASSERT_TRUE(refused->done());
  EXPECT_NE(text_of(refused->answer()).find("is failing"), std::string::npos);
}

TEST_F(SimulatedTime, CachedResultsExpireAfterTheirTtl) {
  start("    cache:\n      tools: [lookup]\n      ttl: 1s\n");
  auto cache_hit = [](const std::string& answer) {
    const bj::value v = bj::parse(answer);
    const auto* meta = v.at("result").as_object().if_contains("_meta");
    return meta && meta->as_object().contains("toolbridge/cache");
  };
  const std::string first = call_and_wait("fixture__lookup", {{"query", "q"}}, 1)->answer();
  EXPECT_FALSE(cache_hit(first));
  EXPECT_TRUE(cache_hit(call_and_wait("fixture__lookup", {{"query", "q"}}, 2)->answer()));
  clock_.advance(999ms);
  EXPECT_TRUE(cache_hit(call_and_wait("fixture__lookup", {{"query", "q"}}, 3)->answer()));
  clock_.advance(1ms);
  const std::string late = call_and_wait("fixture__lookup", {{"query", "q"}}, 4)->answer();
  EXPECT_FALSE(cache_hit(late)) << late;
}

TEST_F(SimulatedTime, ASharedServerIdleForItsTtlIsStoppedAndTheNextCallStartsIt) {
  start("    idle_ttl: 60s\n");
  EXPECT_EQ(text_of(call_and_wait("fixture__counter", {})->answer()), "1");
  auto pids = [&] { return fixture_health().at("pids").as_array().size(); };
  EXPECT_EQ(pids(), 1u);
  clock_.advance(59s);
  settle();
  EXPECT_EQ(pids(), 1u);
  clock_.advance(2s);  // the supervisor's tick finds it idle past its TTL
  until([&] { return pids() == 0; }, "the idle instance stopped");
  EXPECT_EQ(fixture_health().at("recycles").at("idle"), 1);
  EXPECT_EQ(text_of(call_and_wait("fixture__counter", {}, 2)->answer()), "1") << "a new instance";
}

TEST_F(SimulatedTime, AnIdleSessionExpiresAfterSessionIdleTtl) {
  start("", "  session_idle_ttl: 10m\n");
  const auto session = gateway_->create_session("127.0.0.1");
  ASSERT_TRUE(session) << session.error();
  const std::string id = (*session)->id();
  clock_.advance(10min);
  settle();
  EXPECT_TRUE(gateway_->find_session(id)) << "idle for exactly its TTL: not yet";
  clock_.advance(5min);  // the next sweep (every half TTL) finds it idle past its TTL
  settle();
  EXPECT_FALSE(gateway_->find_session(id));
}

}  // namespace
}  // namespace toolbridge::gateway
