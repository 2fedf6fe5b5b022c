#include "policy/admission_adaptive.h"

#include <algorithm>
#include <cmath>

namespace toolbridge::policy {

AdaptiveLimit::AdaptiveLimit(const config::AdaptiveLimit& options, base::Clock::time_point now)
    : options_(options),
      // Start low and grow: a fresh gateway does not know what the server can take.
      limit_(static_cast<double>(
          std::clamp<std::size_t>(std::size_t{4}, options.min_limit, options.max_limit))),
      window_end_(now + options.window),
      next_probe_(now + options.probe_interval) {}

std::size_t AdaptiveLimit::limit() const {
  if (probing()) return options_.min_limit;
  return std::clamp(static_cast<std::size_t>(limit_), options_.min_limit, options_.max_limit);
}

bool AdaptiveLimit::sample(base::Clock::duration latency, base::Clock::time_point now) {
  bool changed = false;
  if (now >= window_end_) changed = end_window(now);
  window_sum_ += std::chrono::duration<double>(latency).count();
  ++window_count_;
  return changed;
}

bool AdaptiveLimit::end_window(base::Clock::time_point now) {
  const std::size_t before = limit();
  window_end_ = now + options_.window;
  if (window_count_ == 0) return false;
  const double latency = window_sum_ / static_cast<double>(window_count_);
  window_sum_ = 0;
  window_count_ = 0;
  if (probe_windows_left_ > 0) {
    // The first window of a probe drains the calls admitted under the old limit; the second
    // measures the server nearly unloaded.
    if (--probe_windows_left_ == 0) {
      min_latency_ = latency;
      limit_ = limit_before_probe_;
      next_probe_ = now + options_.probe_interval;
    }
    return limit() != before;
  }
  if (now >= next_probe_ && min_latency_ > 0) {
    probe_windows_left_ = 2;
    limit_before_probe_ = limit_;
    return limit() != before;
  }
  if (min_latency_ == 0 || latency < min_latency_) min_latency_ = latency;
  const double gradient = std::clamp(kTolerance * min_latency_ / latency, 0.5, 2.0);
  // The headroom sqrt(limit) lets the limit find room above the current one; scaled by the
  // gradient, so that a slow enough server still brings the limit down to 1.
  const double next = gradient * (limit_ + std::sqrt(limit_));
  limit_ = std::clamp(next, static_cast<double>(options_.min_limit),
                      static_cast<double>(options_.max_limit));
  return limit() != before;
}

}  // namespace toolbridge::policy
