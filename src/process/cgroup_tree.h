#pragma once
// One cgroup v2 per server instance, under <gateway's own cgroup>/toolbridge-PID/. A process
// cannot leave its cgroup the way it leaves a process group (setsid), so killing the cgroup
// kills every descendant of the instance. Without a writable cgroup v2 hierarchy (a non-root
// user without delegation, a container with /sys/fs/cgroup read-only) everything here is a
// no-op and the caller falls back to process groups plus a walk of /proc.
#include <sys/types.h>

#include <string>
#include <vector>

#include "base/expected.h"

namespace toolbridge::process::cgroups {

// At start-up, before any thread: finds the gateway's cgroup v2 directory, kills and removes
// what gateways killed by SIGKILL left there (toolbridge-PID whose PID is gone), and makes this
// gateway's root. Fails (saying why) when containment falls back to process groups.
base::Status enable();
// Empty when disabled.
const std::string& root();
// A new, empty cgroup for one child; empty when disabled or when it cannot be made.
std::string make_leaf();
// Every process in `dir` and below, read from the cgroup.procs files.
std::vector<pid_t> members(const std::string& dir);
// Sends `sig` to every process in `dir` and below (SIGKILL uses cgroup.kill where the kernel has
// it, 5.14+, so a process forking in a loop cannot outrun it).
void signal_all(const std::string& dir, int sig);
// Kills `dir` and removes it; a directory whose processes are still exiting is removed by a
// later call (or at exit).
void remove_leaf(const std::string& dir);
// Kills everything under `dir`, waits up to `wait_ms` for it to empty, and removes the tree.
void destroy_tree(const std::string& dir, int wait_ms);
// Orderly exit: destroys the root (the watchdog does the same if the gateway dies).
void disable();

}  // namespace toolbridge::process::cgroups
