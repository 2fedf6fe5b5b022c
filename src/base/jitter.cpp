#include "base/jitter.h"

#include <algorithm>
#include <cmath>

namespace toolbridge::base {

RandomSource& process_random() {
  thread_local SeededRandom random{std::random_device{}()};
  return random;
}

std::chrono::milliseconds jittered(std::chrono::milliseconds d, double spread,
                                   RandomSource& random) {
  const double factor = 1.0 - spread + 2.0 * spread * random.uniform();
  return std::chrono::milliseconds(std::llround(static_cast<double>(d.count()) * factor));
}

std::chrono::milliseconds exponential_delay(std::chrono::milliseconds initial,
                                            std::chrono::milliseconds max, int n) {
  if (n <= 0) return std::chrono::milliseconds(0);
  auto delay = initial;
  for (int i = 1; i < n && delay < max; ++i) delay *= 2;
  return std::min(delay, max);
}

}  // namespace toolbridge::base
