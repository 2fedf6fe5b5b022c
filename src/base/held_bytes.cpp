#include "base/held_bytes.h"

#include <algorithm>
#include <utility>

namespace toolbridge::base {

namespace asio = boost::asio;

void HeldBytes::set_limit(std::size_t limit) {
  limit_ = limit;
  if (!over()) open();
}

void HeldBytes::remove(std::size_t n) {
  held_ -= std::min(n, held_);
  if (opened_.waiting() > 0 && !over()) open();
}

void HeldBytes::open() {
  opened_.notify_all();
}

asio::awaitable<void> HeldBytes::until_under() {
  if (!over()) co_return;
  ++waits_;
  co_await opened_.wait();
}

HeldBytes& held_answer_bytes() {
  static HeldBytes bytes;
  return bytes;
}

}  // namespace toolbridge::base
