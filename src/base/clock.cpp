#include "base/clock.h"

namespace toolbridge::base {

const Clock& steady_clock() {
  static const SteadyClock clock;
  return clock;
}

}  // namespace toolbridge::base
