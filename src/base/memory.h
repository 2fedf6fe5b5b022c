#pragma once
// How the gateway uses glibc's allocator. Memory it frees after a burst (a 20 MB answer to a
// client that went away) goes back to the system instead of staying in the heap for the rest of
// the process's life; and the small blocks every call allocates and frees (coroutine frames,
// strings) come from the thread's cache rather than from the heap's bins.

namespace toolbridge::base {

// At start: blocks of 256 KiB and more are mapped on their own (glibc would otherwise raise that
// threshold after the first large free and keep later large answers in the heap).
void map_large_blocks_apart();

// Called first thing in main for `serve`. glibc's per-thread cache keeps 7 freed blocks of each
// size; at 64 calls in flight the gateway frees and reallocates dozens of same-sized blocks per
// turn of its event loop, and every block past the 7th takes the heap's slow path (about a
// sixth of the gateway's CPU per call). The cache's depth can only be set before the process
// starts (GLIBC_TUNABLES), so the gateway executes itself once more with
// glibc.malloc.tcache_count raised, unless the environment already sets GLIBC_TUNABLES (the
// operator's own tuning wins; `GLIBC_TUNABLES=` turns this off). In the re-executed process
// the variables are removed again, so servers it starts never inherit them. A failed exec
// changes nothing.
void tune_allocator(char** argv);

}  // namespace toolbridge::base
