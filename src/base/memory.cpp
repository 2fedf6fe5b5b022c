#include "base/memory.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace toolbridge::base {

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TOOLBRIDGE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TOOLBRIDGE_ASAN 1
#endif

namespace {
[[maybe_unused]] constexpr const char* kTunables = "glibc.malloc.tcache_count=256";
// Set beside GLIBC_TUNABLES for the re-executed process: it removes both.
[[maybe_unused]] constexpr const char* kMarker = "TOOLBRIDGE_ALLOCATOR_TUNED";
}  // namespace

void map_large_blocks_apart() {
  constexpr int kThreshold = 256 * 1024;
  // Setting either value fixes both: no dynamic adjustment after large frees.
  mallopt(M_MMAP_THRESHOLD, kThreshold);
  mallopt(M_TRIM_THRESHOLD, kThreshold);
}

void tune_allocator(char** argv) {
#if defined(TOOLBRIDGE_ASAN)
  (void)argv;  // the sanitizer's allocator replaces glibc's
#else
  if (std::getenv(kMarker)) {
    // The re-executed process: glibc has read its tunables; nothing it starts inherits them.
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strcmp(tunables, kTunables) == 0) ::unsetenv("GLIBC_TUNABLES");
    ::unsetenv(kMarker);
    return;
  }
  if (std::getenv("GLIBC_TUNABLES")) return;
  // The binary's own path rather than /proc/self/exe, so the process keeps its name (ps, top).
  // A binary replaced since it started reads "... (deleted)" and fails to execute: no harm.
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = '\0';
  if (::setenv("GLIBC_TUNABLES", kTunables, 1) != 0 || ::setenv(kMarker, "1", 1) != 0) return;
  ::execv(exe, argv);
  ::unsetenv("GLIBC_TUNABLES");  // not re-executed: carry on as started
  ::unsetenv(kMarker);
#endif
}

}  // namespace toolbridge::base
