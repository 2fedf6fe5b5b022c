#pragma once
// When the next start of a server may be tried after failures: the wait doubles with each
// consecutive failure, from `initial` up to `max`, with +-20% jitter so servers that failed
// together do not retry in lockstep. Decisions take `now`; nothing here reads a clock.
#include <chrono>

#include "base/clock.h"
#include "base/jitter.h"

namespace toolbridge::upstream {

class Backoff {
 public:
  using time_point = base::Clock::time_point;
  static constexpr double kJitter = 0.2;

  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max,
          base::RandomSource& random)
      : initial_(initial), max_(max), random_(random) {}

  // The wait after `failures` consecutive failures, before jitter: 0, initial, 2x, 4x ... max.
  std::chrono::milliseconds nominal_delay(int failures) const;

  // A start failed, or an instance died soon after it became ready.
  void failed(time_point now);
  // An instance that had run stably died: restart at once, and count failures from zero.
  void stable_exit(time_point now);

  bool waiting(time_point now) const { return now < retry_at_; }
  // Whether waiting() can be true at all: false until the first failure (so a caller with no
  // failure behind it need not read a clock).
  bool ever_scheduled() const { return retry_at_ != time_point{}; }
  time_point retry_at() const { return retry_at_; }
  int consecutive_failures() const { return failures_; }

 private:
  void schedule(time_point now);

  std::chrono::milliseconds initial_;
  std::chrono::milliseconds max_;
  base::RandomSource& random_;
  int failures_ = 0;
  time_point retry_at_{};
};

}  // namespace toolbridge::upstream
