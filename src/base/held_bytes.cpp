#include "base/held_bytes.h"

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace toolbridge::base {

namespace asio = boost::asio;

// One waiting coroutine: a timer that only the gate's opening ends, registered for as long as
// the coroutine's frame lives.
struct HeldBytes::Waker {
  Waker(HeldBytes& gate, const asio::any_io_executor& executor)
      : gate(gate), timer(executor, asio::steady_timer::time_point::max()) {
    gate.waiters_.push_back(this);
  }
  ~Waker() { std::erase(gate.waiters_, this); }
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  HeldBytes& gate;
  asio::steady_timer timer;
};

void HeldBytes::set_limit(std::size_t limit) {
  limit_ = limit;
  if (!over()) open();
}

void HeldBytes::remove(std::size_t n) {
  held_ -= std::min(n, held_);
  if (!waiters_.empty() && !over()) open();
}

void HeldBytes::open() {
  for (Waker* w : waiters_) w->timer.cancel();
}

asio::awaitable<void> HeldBytes::until_under() {
  if (!over()) co_return;
  ++waits_;
  Waker waker(*this, co_await asio::this_coro::executor);
  boost::system::error_code ignored;  // operation_aborted: the gate opened
  co_await waker.timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

HeldBytes& held_answer_bytes() {
  static HeldBytes bytes;
  return bytes;
}

}  // namespace toolbridge::base
