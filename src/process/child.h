#pragma once
// Child processes for stdio MCP servers: spawned from an argv without a shell, in their own
// process group, with a parent-death signal, a minimal environment, and always reaped.
#include <sys/types.h>

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/expected.h"

namespace toolbridge::process {

struct Spec {
  std::vector<std::string> argv;           // argv[0] without '/' is looked up on the env's PATH
  std::map<std::string, std::string> env;  // the complete environment of the child
  std::string cwd;                         // empty: inherit
};

// The environment a server gets: a small allowlist of the gateway's own variables (PATH, HOME,
// locale, TMPDIR, ...) plus `extra_names` passed through, then `configured` on top. Secrets in
// the gateway's environment therefore do not reach every server.
std::map<std::string, std::string> build_env(const std::map<std::string, std::string>& configured,
                                             const std::vector<std::string>& extra_names);

// The file argv[0] of `spec` runs: a path as given (relative to spec.cwd when it has a '/'),
// or the first executable match on the PATH of spec.env; when there is none, why (not found on
// PATH, not executable): Child::spawn reports the same message.
base::Expected<std::string> find_executable(const Spec& spec);

// A running child. Owns its pipes, its pid and its cgroup; destruction kills the whole group
// and cgroup and reaps, so no path leaves a process behind, not even one that called setsid().
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  ~Child();

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_; }  // readable once the child has exited
  // Ownership of the pipe ends passes to the caller (an Asio descriptor, say).
  int release_stdin() { return std::exchange(stdin_, -1); }
  int release_stdout() { return std::exchange(stdout_, -1); }
  int release_stderr() { return std::exchange(stderr_, -1); }
  int release_pidfd() { return std::exchange(pidfd_, -1); }

  void close_stdin();
  // `sig` to the child's process group and to every other descendant: its cgroup's members,
  // or (without cgroups) the processes below it in /proc.
  void signal_group(int sig) const;
  // Non-blocking reap; true once the child has been reaped. `status` is the waitpid status.
  bool try_reap();
  bool reaped() const { return reaped_; }
  int wait_status() const { return status_; }

  // Spawns; on failure, a message naming the cause.
  static base::Expected<Child> spawn(const Spec& spec);

 private:
  void reset() noexcept;
  void kill_descendants(int sig) const;
  pid_t pid_ = -1;
  std::string cgroup_;  // the instance's own cgroup v2 directory; empty without cgroups
  int pidfd_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  int stderr_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// "exited with code 3" / "killed by signal 9 (SIGKILL)".
std::string describe_status(int wait_status);

// Resident memory of one process in bytes (from /proc/PID/statm), 0 if it is gone.
std::size_t resident_bytes(pid_t pid);

// A watchdog process forked at start-up. The gateway tells it each child's process group; if
// the gateway dies (even by SIGKILL), the watchdog sees its pipe close and kills every group
// still registered, then the gateway's cgroup tree (cgroups::root(), so call cgroups::enable
// first). Parent-death signals alone miss grandchildren (npx -> node).
class GroupReaper {
 public:
  // Must be called before any thread starts. Returns false (and logs) if it cannot fork.
  static bool start();
  // Orderly exit: the watchdog kills whatever is still registered, exits, and is reaped.
  static void stop();
  static void add(pid_t pgid);
  static void remove(pid_t pgid);
};

}  // namespace toolbridge::process
