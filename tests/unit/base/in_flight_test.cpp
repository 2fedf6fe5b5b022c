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

TEST(InFlight, ATokenCountsWhileItLivesAndItsCopiesCountToo) {
  ManualClock clock;
  InFlight f(clock);
  {
    InFlight::Token a(f);
    EXPECT_EQ(f.count(), 1u);
    InFlight::Token b = a;  // a copy is one more
    EXPECT_EQ(f.count(), 2u);
    InFlight::Token c = std::move(b);  // a move is not
    EXPECT_EQ(f.count(), 2u);
    c.release();
    c.release();  // once only
    EXPECT_EQ(f.count(), 1u);
    InFlight::Token empty;
    empty = a;  // assigned: counts
    EXPECT_EQ(f.count(), 2u);
    empty = InFlight::Token();  // assigned empty: gives its count back
    EXPECT_EQ(f.count(), 1u);
  }
  EXPECT_EQ(f.count(), 0u);
}

TEST(InFlight, TheLastTokenReleasedWakesADrain) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  std::optional<InFlight::Token> token(std::in_place, f);
  std::optional<bool> zero;
  drain(io, f, clock.now() + 10s, zero);
  poll(io);
  EXPECT_FALSE(zero.has_value());
  token.reset();
  poll(io);
  EXPECT_EQ(zero, true);
}

TEST(InFlight, WakeAllEndsTheDrainsWaitingNowButNotLaterOnes) {
  asio::io_context io;
  ManualClock clock;
  InFlight f(clock);
  f.add();
  std::optional<bool> early;
  drain(io, f, clock.now() + 10s, early);
  poll(io);
  f.wake_all();
  poll(io);
  EXPECT_EQ(early, false) << "woken with one still in flight";
  std::optional<bool> later;
  drain(io, f, clock.now() + 10s, later);
  poll(io);
  EXPECT_FALSE(later.has_value()) << "a drain started after wake_all waits as usual";
  f.done();
  poll(io);
  EXPECT_EQ(later, true);
}
