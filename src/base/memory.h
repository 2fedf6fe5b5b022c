#pragma once
// Memory the gateway frees after a burst (a 20 MB answer to a client that went away) goes back
// to the system instead of staying in the heap for the rest of the process's life.

namespace toolbridge::base {

// At start: blocks of 256 KiB and more are mapped on their own (glibc would otherwise raise that
// threshold after the first large free and keep later large answers in the heap).
void map_large_blocks_apart();

}  // namespace toolbridge::base
