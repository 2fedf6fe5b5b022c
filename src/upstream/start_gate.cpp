#include "upstream/start_gate.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace toolbridge::upstream {

namespace asio = boost::asio;

asio::awaitable<void> StartGate::acquire() {
  if (free_ > 0) {
    --free_;
    co_return;
  }
  auto t = std::make_shared<base::Timer>(io_, base::steady_clock());
  waiters_.push_back(t);
  boost::system::error_code ec;
  co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void StartGate::release() {
  if (waiters_.empty()) {
    ++free_;
    return;
  }
  waiters_.front()->cancel();  // hands the permit straight to the next waiter
  waiters_.pop_front();
}

}  // namespace toolbridge::upstream
