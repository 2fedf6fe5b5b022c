#pragma once
// A count of things in flight (requests, calls) and a wait for it to reach zero: a drain wakes
// when the last one ends, or at its deadline, with no polling. One io_context thread.
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "base/clock.h"
#include "base/event.h"

namespace toolbridge::base {

class InFlight {
 public:
  explicit InFlight(const Clock& clock) : clock_(clock), zero_(clock) {}
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

  // One in flight while it lives: counted when made, done() when released or destroyed.
  // A copy counts one more; an empty (default or moved-from) token counts nothing.
  class Token {
   public:
    Token() = default;
    explicit Token(InFlight& counter) : counter_(&counter) { counter.add(); }
    Token(const Token& other) : counter_(other.counter_) {
      if (counter_) counter_->add();
    }
    Token& operator=(const Token& other) {
      if (this != &other) *this = Token(other);
      return *this;
    }
    Token(Token&& other) noexcept : counter_(std::exchange(other.counter_, nullptr)) {}
    Token& operator=(Token&& other) noexcept {
      if (this != &other) {
        release();
        counter_ = std::exchange(other.counter_, nullptr);
      }
      return *this;
    }
    ~Token() { release(); }
    void release() {
      if (counter_) std::exchange(counter_, nullptr)->done();
    }

   private:
    InFlight* counter_ = nullptr;
  };

  void add() { ++count_; }
  // One ended; at zero every waiter wakes.
  void done();
  std::size_t count() const { return count_; }

  // Returns true once the count is zero, false if `until` comes first.
  boost::asio::awaitable<bool> until_zero(Clock::time_point until);
  // Wakes every until_zero now (each returns whether the count is zero): a drain cut short.
  void wake_all();

 private:
  const Clock& clock_;
  std::size_t count_ = 0;
  Event zero_;               // notified when the count reaches zero, and by wake_all()
  std::uint64_t wakes_ = 0;  // wake_all() calls so far
};

}  // namespace toolbridge::base
