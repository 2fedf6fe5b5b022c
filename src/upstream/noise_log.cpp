#include "upstream/noise_log.h"

namespace toolbridge::upstream {

NoiseLog::Verdict NoiseLog::record() {
  ++total_;
  Verdict v;
  v.interval = interval_;
  const auto now = clock_.now();
  if (!started_ || now - window_start_ >= interval_) {
    v.suppressed = suppressed_;
    started_ = true;
    window_start_ = now;
    logged_ = 0;
    suppressed_ = 0;
  }
  if (logged_ < burst_) {
    ++logged_;
    v.log = true;
  } else {
    ++suppressed_;
  }
  return v;
}

}  // namespace toolbridge::upstream
