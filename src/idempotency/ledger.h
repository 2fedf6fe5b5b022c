#pragma once
// The keyed calls an idempotency stage has seen: per (trajectory, key), the tool and canonical
// arguments of the first call, and its result once it finished, kept for a TTL from then.
// Bounded in keys and bytes: past either, the least recently finished entries go first; calls
// still running are never dropped (a new key is refused while every entry is running).
#include <chrono>
#include <cstddef>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "call/call.h"

namespace toolbridge::idempotency {

class Ledger {
 public:
  using Clock = base::Clock;
  struct Limits {
    Clock::duration ttl = std::chrono::minutes(10);  // gateway.idempotency_ttl
    std::size_t max_bytes = 64u << 20;               // gateway.idempotency_max_bytes
    std::size_t max_keys = 65'536;
  };

  struct Entry {
    std::string tool;       // the exposed tool name of the first call
    std::string arguments;  // its canonical arguments
    bool done = false;
    std::optional<call::Result> result;     // set when done
    Clock::time_point expires{};            // when done: finished + ttl
    std::size_t bytes = 0;
    // The calls waiting for it (timers cancelled when it finishes).
    std::vector<std::weak_ptr<base::Timer>> waiting;
  };

  enum class Claim {
    kStarted,   // a new key: the caller runs the call and finish()es it
    kRunning,   // the first call is still running: wait for it
    kDone,      // the first call's result is kept: answer with it
    kMismatch,  // the key was used with another tool or other arguments
    kFull,      // max_keys entries, every one still running
  };
  struct Found {
    Claim claim;
    std::shared_ptr<Entry> entry;  // null for kFull
  };

  explicit Ledger(Limits limits) : limits_(limits) {}

  // The entry of `scope` (trajectory and key), made for `tool` and `arguments` if new.
  Found claim(const std::string& scope, std::string_view tool, std::string_view arguments,
              Clock::time_point now);
  // The first call of `scope` ended: its waiters wake up; the result is kept for a retry unless
  // the call surely never reached a server (then the key is free again). `entry` is the one
  // claim() made (a stale one, replaced meanwhile, is only woken).
  void finish(const std::string& scope, const std::shared_ptr<Entry>& entry, call::Result result,
              Clock::time_point now);

  std::size_t keys() const { return entries_.size(); }
  std::size_t bytes() const { return bytes_; }

  // Whether a call that ended with `fault` may have run on a server (its result is then kept).
  static bool may_have_run(call::Fault fault);

 private:
  struct Slot {
    std::shared_ptr<Entry> entry;
    std::list<std::string>::iterator finished;  // its place in finished_ once done
  };
  // Drops expired entries, then the least recently finished past the bounds.
  void trim(Clock::time_point now);
  void erase(std::unordered_map<std::string, Slot>::iterator it);

  Limits limits_;
  std::size_t bytes_ = 0;
  std::unordered_map<std::string, Slot> entries_;
  std::list<std::string> finished_;  // scopes of finished entries, oldest first (TTL order too)
};

}  // namespace toolbridge::idempotency
