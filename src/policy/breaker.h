#pragma once
// Circuit breaker for one server: after `threshold` calls in a row time out, calls are refused
// for a cooldown; then one probe call is let through (half-open) and its outcome closes the
// breaker or reopens it with twice the cooldown (at most 8x). Crashes do not count: a dead
// instance fails its calls at once and is restarted with backoff; the breaker is for a server
// that is up but not answering.
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace toolbridge::policy {

struct BreakerOptions {
  std::size_t threshold = 5;  // 0 disables the breaker
  std::chrono::milliseconds cooldown{10'000};
  // A probe that never reports (it found no instance, say) stops counting after this long.
  std::chrono::milliseconds probe_lost_after{30'000};
};

class Breaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  Breaker(std::string server, BreakerOptions options, const base::Clock& clock)
      : server_(std::move(server)),
        options_(options),
        clock_(&clock),
        cooldown_(options.cooldown) {}

  bool enabled() const { return options_.threshold > 0; }
  const BreakerOptions& options() const { return options_; }
  // Empty to admit a call; else why it is refused (an agent can act on the message).
  std::string admit();
  // The outcome of an admitted call: `fault` when it timed out; `why` is kept for refusals.
  void record(bool fault, std::string_view why);
  // The probe admitted while half-open never reached the server (its deadline passed before it
  // was sent): it says nothing of the server, so the next call is let through as the probe.
  void release_probe();
  State state() const { return state_; }
  std::string_view state_name() const;
  std::chrono::milliseconds cooldown() const { return cooldown_; }

  // Called each time the breaker opens (metrics).
  std::function<void()> on_open;

 private:
  std::string server_;
  BreakerOptions options_;
  const base::Clock* clock_;
  State state_ = State::kClosed;
  std::size_t consecutive_faults_ = 0;
  bool probe_in_flight_ = false;
  base::Clock::time_point probe_started_{};
  base::Clock::time_point open_until_{};
  std::chrono::milliseconds cooldown_;
  std::string last_fault_;
};

}  // namespace toolbridge::policy
