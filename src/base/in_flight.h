#pragma once
// A count of things in flight (requests, calls) and a wait for it to reach zero: a drain wakes
// when the last one ends, or at its deadline, with no polling. One io_context thread.
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <vector>

#include "base/clock.h"

namespace toolbridge::base {

class InFlight {
 public:
  explicit InFlight(const Clock& clock) : clock_(clock) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  void add() { ++count_; }
  // One ended; at zero every waiter wakes.
  void done();
  std::size_t count() const { return count_; }

  // Returns true once the count is zero, false if `until` comes first.
  boost::asio::awaitable<bool> until_zero(Clock::time_point until);

 private:
  const Clock& clock_;
  std::size_t count_ = 0;
  std::vector<Timer*> waiters_;  // the timers of until_zero calls waiting now
};

}  // namespace toolbridge::base
