#include "base/in_flight.h"

namespace toolbridge::base {

void InFlight::done() {
  if (count_ > 0) --count_;
  if (count_ == 0) zero_.notify_all();
}

void InFlight::wake_all() {
  ++wakes_;
  zero_.notify_all();
}

boost::asio::awaitable<bool> InFlight::until_zero(Clock::time_point until) {
  const std::uint64_t wakes = wakes_;
  // A count that rose again before this resumed waits on.
  while (count_ > 0 && clock_.now() < until && wakes_ == wakes) co_await zero_.wait(until);
  co_return count_ == 0;
}

}  // namespace toolbridge::base
