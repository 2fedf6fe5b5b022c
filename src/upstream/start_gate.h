#pragma once
// Caps how many instances initialise at once (start-up storms hurt every server on a 2-core box,
// and a burst of 500 new sessions must not fork 500 processes at once).
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <deque>
#include <memory>

#include "base/event.h"

namespace toolbridge::upstream {

class StartGate {
 public:
  explicit StartGate(std::size_t limit) : free_(limit ? limit : 1) {}
  boost::asio::awaitable<void> acquire();
  void release();

 private:
  std::size_t free_;
  std::deque<std::shared_ptr<base::Event>> waiters_;  // in order of arrival, each woken in turn
};

}  // namespace toolbridge::upstream
