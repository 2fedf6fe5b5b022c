#pragma once
// For a call that waits for another call's result instead of running (a coalesced cache
// follower, an idempotent retry): its wait, which Call::cancel ends, and the other call's
// result under its own JSON-RPC id.
#include <memory>
#include <string>

#include "base/clock.h"
#include "call/call.h"

namespace toolbridge::call {

// A wait on `timer` (set to the waiter's deadline), abandoned by Call::cancel: the timer is
// cancelled and `abandoned`/`why` say so.
class TimerWait final : public Abandonable {
 public:
  explicit TimerWait(std::shared_ptr<base::Timer> timer) : timer_(std::move(timer)) {}
  void abandon(const std::string& reason) override {
    abandoned = true;
    why = reason;
    timer_->cancel();
  }
  bool abandoned = false;
  std::string why;

 private:
  std::shared_ptr<base::Timer> timer_;
};

// `shared`, another call's result, with its response's id replaced by `call`'s.
Result under_own_id(const Result& shared, const Call& call);

}  // namespace toolbridge::call
