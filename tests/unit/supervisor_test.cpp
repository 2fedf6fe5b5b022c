// The supervisor against the toolbridge-fixture server, with a ManualClock deciding recycling
// and backoff: processes are real, the passing of time is not.
#include "upstream/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <functional>

namespace toolbridge::upstream {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class FixedRandom final : public base::RandomSource {
 public:
  double uniform() override { return 0.5; }  // no jitter
};

class RecordingCallbacks final : public SupervisorCallbacks {
 public:
  void start_failed(const Member& m) override { failed_keys.push_back(m.key); }
  void member_lost(const Member& m, const std::string& why) override {
    lost.push_back(m.key + ": " + why);
  }
  void members_changed() override { ++changes; }
  void catalog_changed() override { ++catalogs; }

  std::vector<std::string> failed_keys;
  std::vector<std::string> lost;
  int changes = 0;
  int catalogs = 0;
};

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::signal(SIGPIPE, SIG_IGN);
    spdlog::set_level(spdlog::level::err);
    server_.name = "fx";
    server_.command = TOOLBRIDGE_FIXTURE;
    server_.startup_timeout = 20s;
    server_.stop_grace = 2s;
  }
  void TearDown() override { spdlog::set_level(spdlog::level::info); }

  std::shared_ptr<Supervisor> make() {
    auto s =
        std::make_shared<Supervisor>(io_, server_, gate_, metrics_, std::string(), clock_, random_);
    s->set_callbacks(&callbacks_);
    return s;
  }

  // Runs `body` to completion; the watchdog turns a hang into a failure (not a measurement).
  void run(std::function<asio::awaitable<void>()> body) {
    bool finished = false;
    asio::steady_timer watchdog(io_, 30s);
    watchdog.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      ADD_FAILURE() << "watchdog: the test did not finish in 30 s";
      io_.stop();
    });
    asio::co_spawn(io_, body(), [&](std::exception_ptr) {
      finished = true;
      io_.stop();
    });
    io_.run();
    EXPECT_TRUE(finished);
  }

  // Polls: the supervisor's work happens in detached coroutines on the same io_context.
  asio::awaitable<void> until(const std::function<bool()>& done) {
    asio::steady_timer t(io_);
    boost::system::error_code ec;
    while (!done()) {
      t.expires_after(5ms);
      co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }

  static std::size_t ready_count(const Supervisor& s) {
    std::size_t n = 0;
    for (const auto& m : s.members()) n += m->ready() ? 1 : 0;
    return n;
  }

  config::Server server_;
  asio::io_context io_;
  StartGate gate_{4};
  telemetry::Metrics metrics_;
  base::ManualClock clock_;
  FixedRandom random_;
  RecordingCallbacks callbacks_;
};

TEST_F(SupervisorTest, APoolStartsItsMinimumAndReplacesMembersRecycledByAge) {
  server_.policy = config::Policy::kPool;
  server_.min_instances = 2;
  server_.max_age = 10min;
  server_.idle_ttl = config::Duration{0};
  auto sup = make();
  run([&]() -> asio::awaitable<void> {
    sup->launch(std::string());
    co_await until([&] { return ready_count(*sup) == 2; });
    EXPECT_EQ(callbacks_.catalogs, 2);  // pool: every ready member refreshes the catalog
    EXPECT_TRUE(sup->catalog() && !sup->catalog()->tools.empty());
    sup->tick();
    EXPECT_TRUE(sup->recycles().empty()) << "nothing is old yet";
    clock_.advance(10min);
    sup->tick();
    EXPECT_EQ(sup->recycles().at("max_age"), 2u);
    EXPECT_EQ(sup->live(), 2u) << "replacements start at once";
    co_await until([&] { return ready_count(*sup) == 2 && sup->members().size() == 2; });
    co_await sup->stop();
  });
}

TEST_F(SupervisorTest, MaxCallsRetiresAMemberOnItsLastCall) {
  server_.max_calls = 2;
  auto sup = make();
  run([&]() -> asio::awaitable<void> {
    auto m = sup->launch(std::string());
    co_await until([&] { return m->ready(); });
    sup->use(m);
    EXPECT_TRUE(m->ready());
    sup->use(m);
    EXPECT_EQ(m->state, MemberState::kRetiring);
    EXPECT_EQ(sup->recycles().at("max_calls"), 1u);
    co_await until([&] { return m->exited() && ready_count(*sup) == 1; });
    co_await sup->stop();
  });
}

TEST_F(SupervisorTest, ASharedServerIdleForItsTtlGoesDormant) {
  server_.idle_ttl = config::Duration{60'000};
  auto sup = make();
  run([&]() -> asio::awaitable<void> {
    auto m = sup->launch(std::string());
    co_await until([&] { return m->ready(); });
    clock_.advance(59s);
    sup->tick();
    EXPECT_FALSE(sup->dormant());
    clock_.advance(1s);
    sup->tick();
    EXPECT_TRUE(sup->dormant());
    EXPECT_EQ(sup->recycles().at("idle"), 1u);
    co_await until([&] { return sup->members().empty(); });
    EXPECT_EQ(sup->live(), 0u) << "dormant: nothing starts until a call comes";
    sup->wake_from_dormant();
    sup->maintain();
    EXPECT_EQ(sup->live(), 1u);
    co_await sup->stop();
  });
}

TEST_F(SupervisorTest, AFailedStartBacksOffByTheInitialDelayThenDoubles) {
  server_.command = "/nonexistent/toolbridge-no-such-server";
  server_.restart_backoff_initial = config::Duration{500};
  auto sup = make();
  run([&]() -> asio::awaitable<void> {
    sup->launch(std::string());
    co_await until([&] { return sup->failing(); });
    EXPECT_TRUE(sup->backing_off());
    EXPECT_EQ(sup->retry_at() - clock_.now(), 500ms);
    EXPECT_EQ(sup->live(), 0u) << "no start while backing off";
    EXPECT_NE(sup->last_error(), "");
    clock_.advance(499ms);
    co_await until([&] { return clock_.timers_waiting() > 0; });
    EXPECT_EQ(sup->restarts(), 0u) << "the retry timer has not fired yet";
    clock_.advance(1ms);  // the retry timer fires: the supervisor tries again, and fails again
    co_await until([&] { return sup->restarts() == 1 && sup->backing_off(); });
    EXPECT_EQ(sup->retry_at() - clock_.now(), 1000ms);
    EXPECT_EQ(sup->restarts(), 1u);
    co_await sup->stop();
  });
}

}  // namespace
}  // namespace toolbridge::upstream
