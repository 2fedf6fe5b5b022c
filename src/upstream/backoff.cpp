#include "upstream/backoff.h"

#include <algorithm>

namespace toolbridge::upstream {

std::chrono::milliseconds Backoff::nominal_delay(int failures) const {
  if (failures <= 0) return std::chrono::milliseconds(0);
  auto delay = initial_;
  for (int i = 1; i < failures && delay < max_; ++i) delay *= 2;
  return std::min(delay, max_);
}

void Backoff::failed(time_point now) {
  ++failures_;
  schedule(now);
}

void Backoff::stable_exit(time_point now) {
  failures_ = 0;
  schedule(now);
}

void Backoff::schedule(time_point now) {
  const auto delay = nominal_delay(failures_);
  retry_at_ = now + (delay.count() > 0 ? base::jittered(delay, kJitter, random_) : delay);
}

}  // namespace toolbridge::upstream
