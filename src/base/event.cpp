#include "base/event.h"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::base {

void Event::notify_all() {
  ++notified_;
  for (Timer* t : waiters_) t->cancel();
}

boost::asio::awaitable<bool> Event::wait(Clock::time_point until) {
  Timer timer(co_await boost::asio::this_coro::executor, clock_, until);
  const std::uint64_t seen = notified_;
  // Off the list however the wait ends, also when its coroutine is destroyed while suspended.
  struct Listed {
    std::vector<Timer*>& list;
    Timer* timer;
    ~Listed() { std::erase(list, timer); }
  } listed{waiters_, &timer};
  waiters_.push_back(&timer);
  boost::system::error_code ec;
  co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  co_return notified_ != seen;
}

}  // namespace toolbridge::base
