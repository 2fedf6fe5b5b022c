#include "base/memory.h"

#include <malloc.h>

namespace toolbridge::base {

void map_large_blocks_apart() {
  constexpr int kThreshold = 256 * 1024;
  // Setting either value fixes both: no dynamic adjustment after large frees.
  mallopt(M_MMAP_THRESHOLD, kThreshold);
  mallopt(M_TRIM_THRESHOLD, kThreshold);
}

}  // namespace toolbridge::base
