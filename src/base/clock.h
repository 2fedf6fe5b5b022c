#pragma once
// Time as a seam: policy code (breaker, backoff, recycling, idle expiry, deadlines) reads the
// time from a Clock, so unit tests drive it with a ManualClock instead of sleeping.
#include <chrono>

namespace toolbridge::base {

class Clock {
 public:
  using duration = std::chrono::steady_clock::duration;
  using time_point = std::chrono::steady_clock::time_point;
  virtual ~Clock() = default;
  virtual time_point now() const = 0;
};

// The process's monotonic clock; one instance serves everyone.
class SteadyClock final : public Clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
};
const Clock& steady_clock();

// A clock that moves only when told (unit tests).
class ManualClock final : public Clock {
 public:
  explicit ManualClock(time_point start = time_point{} + std::chrono::hours(1)) : now_(start) {}
  time_point now() const override { return now_; }
  void advance(duration d) { now_ += d; }
  void set(time_point t) { now_ = t; }

 private:
  time_point now_;
};

}  // namespace toolbridge::base
