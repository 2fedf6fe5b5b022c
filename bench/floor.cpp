#include "floor.h"

#include <arpa/inet.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

namespace toolbridge::bench {

namespace {

using Clock = std::chrono::steady_clock;

bool read_byte(int fd) {
  char c;
  for (;;) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

bool write_byte(int fd) {
  const char c = 'x';
  for (;;) {
    const ssize_t n = ::write(fd, &c, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;
  }
}

// Forks a child that echoes every byte from `in` to `out` until EOF. Only async-signal-safe
// calls after fork.
pid_t fork_echo(int in, int out, const std::vector<int>& close_in_child, int child_cpu) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (child_cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(child_cpu, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    for (int fd : close_in_child) ::close(fd);
    while (read_byte(in) && write_byte(out)) {
    }
    ::_exit(0);
  }
  return pid;
}

void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

// Median round trip in µs of `samples` ping-pongs after a short warm-up; 0 on failure.
double ping_pong(int write_fd, int read_fd, int samples) {
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(samples));
  const int warmup = std::max(20, samples / 10);
  for (int i = 0; i < warmup + samples; ++i) {
    const auto t0 = Clock::now();
    if (!write_byte(write_fd) || !read_byte(read_fd)) return 0;
    const auto t1 = Clock::now();
    if (i >= warmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + static_cast<std::ptrdiff_t>(us.size() / 2), us.end());
  return us[us.size() / 2];
}

std::string pipe_floor(int samples, int child_cpu, double& out) {
  int to_child[2], from_child[2];
  if (::pipe(to_child) != 0) return std::string("pipe: ") + std::strerror(errno);
  if (::pipe(from_child) != 0) {
    ::close(to_child[0]);
    ::close(to_child[1]);
    return std::string("pipe: ") + std::strerror(errno);
  }
  const pid_t pid = fork_echo(to_child[0], from_child[1], {to_child[1], from_child[0]}, child_cpu);
  ::close(to_child[0]);
  ::close(from_child[1]);
  if (pid < 0) {
    ::close(to_child[1]);
    ::close(from_child[0]);
    return std::string("fork: ") + std::strerror(errno);
  }
  out = ping_pong(to_child[1], from_child[0], samples);
  ::close(to_child[1]);  // EOF: the child exits
  ::close(from_child[0]);
  reap(pid);
  return out > 0 ? "" : "pipe ping-pong failed";
}

std::string tcp_floor(int samples, int child_cpu, double& out) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return std::string("socket: ") + std::strerror(errno);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string e = std::strerror(errno);
    ::close(listener);
    return "bind/listen on 127.0.0.1:0: " + e;
  }
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (client < 0 || ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string e = std::strerror(errno);
    if (client >= 0) ::close(client);
    ::close(listener);
    return "connect to 127.0.0.1: " + e;
  }
  const int server = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  ::close(listener);
  if (server < 0) {
    ::close(client);
    return std::string("accept: ") + std::strerror(errno);
  }
  const int one = 1;
  ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ::setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const pid_t pid = fork_echo(server, server, {client}, child_cpu);
  ::close(server);
  if (pid < 0) {
    ::close(client);
    return std::string("fork: ") + std::strerror(errno);
  }
  out = ping_pong(client, client, samples);
  ::close(client);
  reap(pid);
  return out > 0 ? "" : "TCP ping-pong failed";
}

}  // namespace

std::string measure_floor(int samples, Floor& out) {
  out.samples = samples;
  cpu_set_t original;
  CPU_ZERO(&original);
  if (::sched_getaffinity(0, sizeof original, &original) != 0) return std::string("sched_getaffinity: ") + std::strerror(errno);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &original)) cpus.push_back(c);
  }
  out.cpus = static_cast<int>(cpus.size());
  const int a = cpus.empty() ? 0 : cpus[0];
  const int b = cpus.size() > 1 ? cpus[1] : a;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  CPU_SET(a, &mine);
  ::sched_setaffinity(0, sizeof mine, &mine);
  std::string err = pipe_floor(samples, a, out.pipe_same_cpu_us);
  if (err.empty()) err = tcp_floor(samples, a, out.tcp_same_cpu_us);
  if (err.empty()) err = pipe_floor(samples, b, out.pipe_rtt_us);
  if (err.empty()) err = tcp_floor(samples, b, out.tcp_rtt_us);
  ::sched_setaffinity(0, sizeof original, &original);
  return err;
}

}  // namespace toolbridge::bench
