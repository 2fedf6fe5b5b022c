#include "upstream/backoff.h"

namespace toolbridge::upstream {

std::chrono::milliseconds Backoff::nominal_delay(int failures) const {
  return base::exponential_delay(initial_, max_, failures);
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
