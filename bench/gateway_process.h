#pragma once
// A `toolbridge serve` process under test: started on port 0 with a generated config, ready once
// /healthz says so, sampled from /proc, and always stopped (SIGTERM, bounded wait, SIGKILL) and
// reaped — by stop() or, on every other path, by the destructor.
#include <sys/types.h>

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "process/child.h"

namespace toolbridge::bench {

// CPU time (user + system) and resident memory of one process, read from /proc.
struct ProcSample {
  double cpu_us = 0;
  double rss_mib = 0;
  bool ok = false;
};
ProcSample sample_process(pid_t pid);

class GatewayProcess {
 public:
  GatewayProcess() = default;
  GatewayProcess(const GatewayProcess&) = delete;
  GatewayProcess& operator=(const GatewayProcess&) = delete;
  ~GatewayProcess();

  // Writes `config_yaml` to a temporary file, runs `toolbridge serve --listen 127.0.0.1:0`, waits
  // for "listening on http://HOST:PORT" and for /healthz to report status "ok". Returns an empty
  // string on success, else what went wrong (with the gateway's last stderr lines).
  std::string start(const std::string& toolbridge_bin, const std::string& config_yaml,
                    std::chrono::seconds ready_timeout);

  const std::string& host() const { return host_; }
  unsigned short port() const { return port_; }
  pid_t pid() const { return child_.pid(); }
  ProcSample sample() const { return sample_process(child_.pid()); }
  // Non-empty once the gateway has exited on its own: how it ended, with its last stderr lines.
  std::string exited();

  // SIGTERM, wait up to `grace`, then SIGKILL to the group; reaps. Returns how it ended
  // ("exited with code 0"), or a complaint when it had to be killed.
  std::string stop(std::chrono::milliseconds grace = std::chrono::milliseconds(10'000));

  // stderr lines at level warn or above seen so far (the gateway logs at info by default).
  std::vector<std::string> warnings() const;
  std::string stderr_tail() const;

 private:
  void drain_stderr(int fd);

  process::Child child_;
  int stdout_fd_ = -1;
  std::string config_path_;
  std::string host_;
  unsigned short port_ = 0;
  std::thread stderr_thread_;
  mutable std::mutex mu_;
  std::deque<std::string> tail_;
  std::vector<std::string> warnings_;
  bool stopped_ = false;
};

}  // namespace toolbridge::bench
