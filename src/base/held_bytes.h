#pragma once
// Answer bytes the gateway holds for its clients (writes in progress on the HTTP front end), in
// all, and a gate on them: while they are over their bound, readers of upstream answers wait
// before reading more (backpressure), so clients that do not read cannot make the gateway hold
// more than the bound plus what is being read, however many answers the servers send at once.
#include <boost/asio/awaitable.hpp>
#include <cstddef>

#include "base/event.h"

namespace toolbridge::base {

class HeldBytes {
 public:
  // 0: no bound (nobody waits).
  void set_limit(std::size_t limit);
  std::size_t limit() const { return limit_; }
  std::size_t held() const { return held_; }
  bool over() const { return limit_ > 0 && held_ > limit_; }
  // Times a reader waited at the gate, since start.
  std::size_t waits() const { return waits_; }

  void add(std::size_t n) { held_ += n; }
  // May open the gate: the waiters resume once the bytes are back under the bound.
  void remove(std::size_t n);

  // Returns at once if the gate is open, else once it opens (a coroutine destroyed while it
  // waits unregisters itself).
  boost::asio::awaitable<void> until_under();

 private:
  void open();

  std::size_t limit_ = 0;
  std::size_t held_ = 0;
  std::size_t waits_ = 0;
  Event opened_;  // notified when the bytes fall back under the bound
};

// The process's one count: the HTTP front ends add to it, the upstream readers wait on it.
HeldBytes& held_answer_bytes();

}  // namespace toolbridge::base
