// base::InFlight: a drain wakes when the last thing in flight ends, or at its deadline; on
// simulated time, so no test waits.
#include "base/in_flight.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using toolbridge::base::InFlight;
using toolbridge::base::ManualClock;

namespace {

void poll(asio::io_context& io) {
  io.restart();
  io.poll();
}

// Starts until_zero(until); `out` gets its answer when it returns.
void drain(asio::io_context& io, InFlight& f, ManualClock::time_point until,
           std::optional<bool>& out) {
  asio::co_spawn(
      io, [&f, until, &out]() -> asio::awaitable<void> { out = co_await f.until_zero(until); },
      asio::detached);
}

}  // namespace

TEST(InFlight, ADrainWithNothingInFlightReturnsAtOnce) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  std::optional<bool> zero;
  drain(io, f, clock.now() + 10s, zero);
  poll(io);
  EXPECT_EQ(zero, true);
}

TEST(InFlight, ADrainWakesWhenTheLastEndsNotBefore) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  f.add();
  f.add();
  std::optional<bool> first, second;
  drain(io, f, clock.now() + 10s, first);
  drain(io, f, clock.now() + 10s, second);
  poll(io);
  EXPECT_FALSE(first.has_value());
  f.done();
  poll(io);
  EXPECT_FALSE(first.has_value()) << "one is still in flight";
  EXPECT_EQ(f.count(), 1u);
  f.done();
  poll(io);
  EXPECT_EQ(first, true);
  EXPECT_EQ(second, true);
}

TEST(InFlight, ADrainEndsAtItsDeadlineWithCallsStillInFlight) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  f.add();
  std::optional<bool> zero;
  drain(io, f, clock.now() + 5s, zero);
  poll(io);
  clock.advance(4s);
  poll(io);
  EXPECT_FALSE(zero.has_value());
  clock.advance(1s);
  poll(io);
  EXPECT_EQ(zero, false);
  EXPECT_EQ(f.count(), 1u);
}

TEST(InFlight, ACountThatRisesAgainBeforeTheWaiterRunsKeepsItWaiting) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  f.add();
  std::optional<bool> zero;
  drain(io, f, clock.now() + 5s, zero);
  poll(io);
  f.done();  // wakes the waiter...
  f.add();   // ...but another starts before it runs
  poll(io);
  EXPECT_FALSE(zero.has_value());
  f.done();
  poll(io);
  EXPECT_EQ(zero, true);
}
