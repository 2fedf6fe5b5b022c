#include "base/jitter.h"

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

}  // namespace toolbridge::base
