#include "upstream/start_gate.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;

asio::awaitable<void> StartGate::acquire() {
  if (free_ > 0) {
    --free_;
    co_return;
  }
  auto turn = std::make_shared<base::Event>();
  waiters_.push_back(turn);
  co_await turn->wait();
}

void StartGate::release() {
  if (waiters_.empty()) {
    ++free_;
    return;
  }
  waiters_.front()->notify_all();  // hands the permit straight to the next waiter
  waiters_.pop_front();
}

}  // namespace toolbridge::upstream
