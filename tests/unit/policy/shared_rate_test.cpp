// The shared-rate stage's local window (what decides when Redis does not answer) and its
// decisions without Redis: a sliding second, with the wait until the oldest call leaves it.
#include "policy/shared_rate.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "config/config.h"
#include "telemetry/metrics.h"

namespace toolbridge::policy {
namespace {

using std::chrono::milliseconds;

TEST(LocalWindow, AdmitsUpToTheRateWithinOneSlidingSecond) {
  LocalWindow w;
  const auto t0 = base::Clock::time_point{} + std::chrono::hours(1);
  EXPECT_EQ(w.admit(t0, 3), milliseconds(0));
  EXPECT_EQ(w.admit(t0 + milliseconds(100), 3), milliseconds(0));
  EXPECT_EQ(w.admit(t0 + milliseconds(200), 3), milliseconds(0));
  // Full: the next one may start when the first leaves the window (at t0 + 1 s).
  EXPECT_EQ(w.admit(t0 + milliseconds(300), 3), milliseconds(700));
  EXPECT_EQ(w.admit(t0 + milliseconds(999), 3), milliseconds(1));
  EXPECT_EQ(w.admit(t0 + milliseconds(1000), 3), milliseconds(0));  // the first one left
  EXPECT_EQ(w.admit(t0 + milliseconds(1050), 3), milliseconds(50));
  EXPECT_EQ(w.admit(t0 + milliseconds(5000), 3), milliseconds(0));  // everything left
}

TEST(SharedRateStage, TenantsWithoutARateStepOverIt) {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  base::ManualClock clock;
  config::Gateway g;
  g.tenants["slow"].rate = 2;
  const SharedRateStage stage(io, g, metrics, clock);
  call::Call call;
  call.tenant = "slow";
  EXPECT_TRUE(stage.applies(call));
  EXPECT_EQ(stage.rate_of("slow"), 2u);
  call.tenant = "other";
  EXPECT_FALSE(stage.applies(call));
  g.tenant_rate = 5;  // a default rate for every tenant
  const SharedRateStage with_default(io, g, metrics, clock);
  EXPECT_TRUE(with_default.applies(call));
  EXPECT_EQ(with_default.rate_of("other"), 5u);
  EXPECT_EQ(with_default.rate_of("slow"), 2u);
}

TEST(SharedRateStage, WithoutRedisTheLocalWindowDecides) {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  base::ManualClock clock;
  config::Gateway g;
  g.tenants["t"].rate = 2;
  SharedRateStage stage(io, g, metrics, clock);
  auto admit = [&] {
    const std::string tenant = "t";  // outlives the coroutine, which starts after co_spawn returns
    auto f = boost::asio::co_spawn(io, stage.admit(tenant, 2), boost::asio::use_future);
    io.restart();
    io.run();
    return f.get();
  };
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(1000));
  clock.advance(milliseconds(400));
  EXPECT_EQ(admit(), milliseconds(600));
  clock.advance(milliseconds(600));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_NE(metrics.render().find("toolbridge_rate_shed_total{window=\"local\"} 2"),
            std::string::npos);
}

TEST(SharedRateStage, AReloadChangesRatesAndKeepsEachTenantsWindow) {
  boost::asio::io_context io;
  telemetry::Metrics metrics;
  base::ManualClock clock;
  config::Gateway g;  // the gateway's config: a reload assigns into it, then reconfigure()
  SharedRateStage stage(io, g, metrics, clock);
  call::Call call;
  call.tenant = "t";
  EXPECT_FALSE(stage.applies(call));  // no rate anywhere: stepped over
  auto admit = [&] {
    const std::string tenant = "t";
    auto f = boost::asio::co_spawn(io, stage.admit(tenant, stage.rate_of(tenant)),
                                   boost::asio::use_future);
    io.restart();
    io.run();
    return f.get();
  };
  // The first rate turns the stage on.
  g.tenants["t"].rate = 2;
  stage.reconfigure();
  EXPECT_TRUE(stage.applies(call));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(1000));
  // Raised: the window (two calls this second) is kept, so three more go, not five.
  g.tenants["t"].rate = 5;
  stage.reconfigure();
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(1000));
  // Lowered (the tenant's own rate gone, tenant_rate 1): shed until the second has passed.
  g.tenants.clear();
  g.tenant_rate = 1;
  stage.reconfigure();
  EXPECT_EQ(stage.rate_of("t"), 1u);
  clock.advance(milliseconds(500));
  EXPECT_EQ(admit(), milliseconds(500));
  clock.advance(milliseconds(500));
  EXPECT_EQ(admit(), milliseconds(0));
  EXPECT_EQ(admit(), milliseconds(1000));
  // No rate left: stepped over again.
  g.tenant_rate = 0;
  stage.reconfigure();
  EXPECT_FALSE(stage.applies(call));
}

}  // namespace
}  // namespace toolbridge::policy
