#pragma once
// Another gateway under test (supergateway, mcp-proxy): started from an argv on a port chosen by
// the bench, ready once the port answers HTTP, and stopped with its whole process group (SIGTERM,
// then SIGKILL) and reaped on every path, the destructor included.
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "process/child.h"

namespace toolbridge::bench {

// A port on 127.0.0.1 that was free a moment ago (bound to 0, then closed); 0 on failure.
unsigned short free_port();

class PeerProcess {
 public:
  PeerProcess() = default;
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;
  ~PeerProcess() { stop(); }

  // Spawns `argv` and waits until 127.0.0.1:`port` answers an HTTP request. Error text or empty.
  std::string start(const std::vector<std::string>& argv, unsigned short port,
                    std::chrono::seconds ready_timeout);
  pid_t pid() const { return child_.pid(); }
  // Non-empty once it has exited on its own.
  std::string exited();
  // SIGTERM to the group, up to `grace`, then SIGKILL; reaps. How it ended.
  std::string stop(std::chrono::milliseconds grace = std::chrono::milliseconds(3000));
  std::string output_tail() const;

 private:
  void drain(int out, int err);
  process::Child child_;
  int stdin_ = -1;
  std::thread reader_;
  mutable std::mutex mu_;
  std::deque<std::string> tail_;
  bool stopped_ = true;
};

}  // namespace toolbridge::bench
