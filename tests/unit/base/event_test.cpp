// base::Event: a wait ends at a notification that comes after it began, or at its deadline; on
// simulated time, so no test waits.
#include "base/event.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using toolbridge::base::Event;
using toolbridge::base::ManualClock;
using toolbridge::base::Timer;

namespace {

void poll(asio::io_context& io) {
  io.restart();
  io.poll();
}

// Starts event.wait(until); `out` gets its answer when it returns.
void wait(asio::io_context& io, Event& e, ManualClock::time_point until, std::optional<bool>& out) {
  asio::co_spawn(
      io, [&e, until, &out]() -> asio::awaitable<void> { out = co_await e.wait(until); },
      asio::detached);
}

}  // namespace

TEST(Event, ANotificationWakesEveryWaitInProgress) {
  asio::io_context io;
  ManualClock clock;
  Event e(clock);
  std::optional<bool> first, second;
  wait(io, e, Timer::never(), first);
  wait(io, e, clock.now() + 10s, second);
  poll(io);
  EXPECT_FALSE(first.has_value());
  EXPECT_FALSE(second.has_value());
  EXPECT_EQ(e.waiting(), 2u);
  e.notify_all();
  poll(io);
  EXPECT_EQ(first, true);
  EXPECT_EQ(second, true);
  EXPECT_EQ(e.waiting(), 0u);
}

TEST(Event, ANotificationBeforeAWaitBeganDoesNotEndIt) {
  asio::io_context io;
  ManualClock clock;
  Event e(clock);
  e.notify_all();
  std::optional<bool> woke;
  wait(io, e, clock.now() + 5s, woke);
  poll(io);
  EXPECT_FALSE(woke.has_value()) << "an event is not a latch";
  e.notify_all();
  poll(io);
  EXPECT_EQ(woke, true);
}

TEST(Event, AWaitEndsAtItsDeadlineWithoutANotification) {
  asio::io_context io;
  ManualClock clock;
  Event e(clock);
  std::optional<bool> woke;
  wait(io, e, clock.now() + 5s, woke);
  poll(io);
  clock.advance(4s);
  poll(io);
  EXPECT_FALSE(woke.has_value());
  clock.advance(1s);
  poll(io);
  EXPECT_EQ(woke, false);
  EXPECT_EQ(e.waiting(), 0u);
}

TEST(Event, AWaitWhoseCoroutineIsDestroyedLeavesTheList) {
  ManualClock clock;
  Event e(clock);
  {
    asio::io_context io;
    std::optional<bool> woke;
    wait(io, e, Timer::never(), woke);
    poll(io);
    EXPECT_EQ(e.waiting(), 1u);
  }  // the io_context destroys the suspended coroutine
  EXPECT_EQ(e.waiting(), 0u);
  e.notify_all();  // no dangling timer to cancel
}
