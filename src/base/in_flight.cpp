#include "base/in_flight.h"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::base {

void InFlight::done() {
  if (count_ > 0) --count_;
  if (count_ != 0) return;
  for (Timer* t : waiters_) t->cancel();
}

void InFlight::wake_all() {
  ++wakes_;
  for (Timer* t : waiters_) t->cancel();
}

boost::asio::awaitable<bool> InFlight::until_zero(Clock::time_point until) {
  Timer timer(co_await boost::asio::this_coro::executor, clock_, until);
  const std::uint64_t wakes = wakes_;
  while (count_ > 0 && clock_.now() < until && wakes_ == wakes) {
    waiters_.push_back(&timer);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    std::erase(waiters_, &timer);
    // Cancelled at zero: the loop sees it; a count that rose again before this resumed waits on.
    timer.expires_at(until);
  }
  co_return count_ == 0;
}

}  // namespace toolbridge::base
