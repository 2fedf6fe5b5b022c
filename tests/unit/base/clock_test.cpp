#include "base/clock.h"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using toolbridge::base::ManualClock;
using toolbridge::base::Timer;

namespace {

// Runs what is ready; an io_context that ran out of work stops, and a new wait needs it again.
void poll(asio::io_context& io) {
  io.restart();
  io.poll();
}

// Starts a coroutine that waits on `timer` and records how the wait ended.
void wait_on(asio::io_context& io, Timer& timer, int& ended, boost::system::error_code& ec) {
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto [e] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        ec = e;
        ++ended;
      },
      asio::detached);
}

}  // namespace

TEST(ManualClockTimer, FiresWhenTheClockReachesItsExpiryAndNotBefore) {
  asio::io_context io;
  ManualClock clock;
  Timer timer(io, clock, 10s);
  int ended = 0;
  boost::system::error_code ec;
  wait_on(io, timer, ended, ec);
  poll(io);
  EXPECT_EQ(clock.timers_waiting(), 1u);
  clock.advance(9s);
  poll(io);
  EXPECT_EQ(ended, 0);
  clock.advance(1s);
  poll(io);
  EXPECT_EQ(ended, 1);
  EXPECT_FALSE(ec);
  EXPECT_EQ(clock.timers_waiting(), 0u);
}

TEST(ManualClockTimer, CancelAndANewExpiryEndTheWaitAsAborted) {
  asio::io_context io;
  ManualClock clock;
  Timer timer(io, clock, 1s);
  int ended = 0;
  boost::system::error_code ec;
  wait_on(io, timer, ended, ec);
  poll(io);
  timer.cancel();
  poll(io);
  EXPECT_EQ(ended, 1);
  EXPECT_EQ(ec, asio::error::operation_aborted);
  wait_on(io, timer, ended, ec);
  poll(io);
  timer.expires_after(5s);
  poll(io);
  EXPECT_EQ(ended, 2);
  EXPECT_EQ(ec, asio::error::operation_aborted);
  clock.advance(1h);  // nothing waits any more
  poll(io);
  EXPECT_EQ(ended, 2);
}

TEST(ManualClockTimer, AWaitOnADueTimerEndsAtOnceAndANeverSetTimerNeverFires) {
  asio::io_context io;
  ManualClock clock;
  Timer due(io, clock, clock.now());
  Timer signal(io, clock);
  int ended = 0, woken = 0;
  boost::system::error_code ec, signal_ec;
  wait_on(io, due, ended, ec);
  wait_on(io, signal, woken, signal_ec);
  poll(io);
  EXPECT_EQ(ended, 1);
  EXPECT_FALSE(ec);
  clock.advance(24h * 365);
  poll(io);
  EXPECT_EQ(woken, 0);
  signal.cancel();
  poll(io);
  EXPECT_EQ(woken, 1);
}

TEST(ManualClockTimer, TimersFireInExpiryOrderAndHonourPerOperationCancellation) {
  using namespace asio::experimental::awaitable_operators;
  asio::io_context io;
  ManualClock clock;
  Timer late(io, clock, 3s), early(io, clock, 2s);
  std::string order;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // The earlier timer wins the race; the later one's wait is cancelled through its slot.
        auto r = co_await (late.async_wait(asio::use_awaitable) ||
                           early.async_wait(asio::use_awaitable));
        order += r.index() == 1 ? "early" : "late";
      },
      asio::detached);
  poll(io);
  clock.advance(10s);
  poll(io);
  EXPECT_EQ(order, "early");
  EXPECT_EQ(clock.timers_waiting(), 0u);
}

TEST(ManualClockTimer, WallTimeMovesWithTheSimulatedTime) {
  ManualClock clock;
  const auto start = clock.wall_now();
  clock.advance(90s);
  EXPECT_EQ(clock.wall_now() - start, 90s);
  EXPECT_EQ(clock.wall_time(clock.now() - 30s), start + 60s);
}

TEST(SteadyClockTimer, WaitsRealTimeUntilItsExpiry) {
  asio::io_context io;
  const auto& clock = toolbridge::base::steady_clock();
  Timer timer(io, clock, 2ms);
  int ended = 0;
  boost::system::error_code ec;
  wait_on(io, timer, ended, ec);
  io.run();
  EXPECT_EQ(ended, 1);
  EXPECT_FALSE(ec);
  EXPECT_GE(clock.now(), timer.expiry());  // the wait began before the expiry was read
}
