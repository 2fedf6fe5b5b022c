#pragma once
// An awaitable event: coroutines wait until it is notified (or until their deadline), and
// notify_all() wakes every one waiting then. It stands where a timer that never expires was
// cancelled to wake its waiter: the wait reads as what it is. One io_context thread.
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <vector>

#include "base/clock.h"

namespace toolbridge::base {

class Event {
 public:
  explicit Event(const Clock& clock = steady_clock()) : clock_(clock) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Returns true once notify_all() is called after this wait began, false if `until` comes
  // first (the default: only a notification ends the wait).
  boost::asio::awaitable<bool> wait(Clock::time_point until = Timer::never());
  // Wakes every wait in progress; a wait that begins later waits for the next notification.
  void notify_all();
  std::size_t waiting() const { return waiters_.size(); }

 private:
  const Clock& clock_;
  std::vector<Timer*> waiters_;  // the timers of the waits in progress
  std::uint64_t notified_ = 0;   // notify_all() calls so far
};

}  // namespace toolbridge::base
