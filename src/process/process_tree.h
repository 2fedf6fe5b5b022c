#pragma once
// The fallback containment when no cgroup v2 is available: a child's descendants found by
// walking parent links in /proc, so those that left its process group with setsid() can be
// killed while they are still below it. (A daemon whose parent already exited is reparented
// out of reach: only a cgroup keeps it.)
#include <sys/types.h>

#include <vector>

namespace toolbridge::process {

// Every live process below `pid` (not `pid` itself), from /proc/*/stat.
std::vector<pid_t> descendants_of(pid_t pid);

}  // namespace toolbridge::process
