#pragma once
// Adaptive concurrency of one server, in the spirit of Envoy's adaptive-concurrency filter and
// Netflix's Gradient2: latency is averaged over a window; the limit is multiplied by the gradient
// of the minimum latency (the server unloaded) against that average, after a headroom of
// sqrt(limit) is added. When the server slows down under its own load the gradient drops below 1
// and the limit comes down; when it speeds up the limit grows again. Every probe_interval the limit
// is pinned to min_limit for two windows (the first lets the calls in flight drain) and the minimum
// is measured again, so a server that got slower for good is not held to an old minimum.
#include <chrono>
#include <cstddef>

#include "base/clock.h"
#include "config/config.h"

namespace toolbridge::policy {

class AdaptiveLimit {
 public:
  AdaptiveLimit(const config::AdaptiveLimit& options, base::Clock::time_point now);

  // The latency of one call that ended at `now`. Returns true if the limit changed.
  bool sample(base::Clock::duration latency, base::Clock::time_point now);
  std::size_t limit() const;
  // The sampled minimum latency in seconds (0 before the first window ends).
  double min_latency() const { return min_latency_; }
  bool probing() const { return probe_windows_left_ > 0; }

  // Below this share of the minimum latency (10 % slack) the limit grows.
  static constexpr double kTolerance = 1.1;

 private:
  bool end_window(base::Clock::time_point now);

  config::AdaptiveLimit options_;
  double limit_;
  double min_latency_ = 0;
  double window_sum_ = 0;
  std::size_t window_count_ = 0;
  base::Clock::time_point window_end_;
  base::Clock::time_point next_probe_;
  int probe_windows_left_ = 0;
  double limit_before_probe_ = 0;
};

}  // namespace toolbridge::policy
