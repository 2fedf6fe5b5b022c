#include "peer_process.h"

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "mcp_http.h"

namespace toolbridge::bench {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

unsigned short free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  unsigned short port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

void PeerProcess::drain(int out, int err) {
  int fds[2] = {out, err};
  std::string partial[2];
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[8192];
      const ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
        continue;
      }
      partial[i].append(buf, static_cast<std::size_t>(n));
      std::size_t nl;
      while ((nl = partial[i].find('\n')) != std::string::npos) {
        std::lock_guard lock(mu_);
        tail_.push_back(partial[i].substr(0, std::min<std::size_t>(nl, 400)));
        if (tail_.size() > 20) tail_.pop_front();
        partial[i].erase(0, nl + 1);
      }
      if (partial[i].size() > 65536) partial[i].clear();  // a peer that logs without newlines
    }
  }
}

std::string PeerProcess::output_tail() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& l : tail_) out += "  | " + l + "\n";
  return out;
}

std::string PeerProcess::start(const std::vector<std::string>& argv, unsigned short port,
                               std::chrono::seconds ready_timeout) {
  process::Spec spec;
  spec.argv = argv;
  spec.env = process::build_env({}, {});
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) return "cannot start " + argv.front() + ": " + spawned.error();
  child_ = std::move(*spawned);
  stopped_ = false;
  stdin_ = child_.release_stdin();  // held open: supergateway exits when its stdin closes
  reader_ = std::thread(
      [this, out = child_.release_stdout(), err = child_.release_stderr()] { drain(out, err); });
  const auto deadline = Clock::now() + ready_timeout;
  std::string last;
  while (Clock::now() < deadline) {
    if (std::string dead = exited(); !dead.empty()) return dead;
    HttpResult res = http_get("127.0.0.1", port, "/", 2s);
    if (res.error.empty()) return {};  // any HTTP answer: it is listening
    last = res.error;
    std::this_thread::sleep_for(50ms);
  }
  return "not listening on port " + std::to_string(port) + " after " +
         std::to_string(ready_timeout.count()) + " s (" + last + ")\n" + output_tail();
}

std::string PeerProcess::exited() {
  if (stopped_ || child_.pid() <= 0) return {};
  if (!child_.try_reap()) return {};
  std::this_thread::sleep_for(100ms);  // let the reader catch the last words
  return "exited: " + process::describe_status(child_.wait_status()) + "\n" + output_tail();
}

std::string PeerProcess::stop(std::chrono::milliseconds grace) {
  std::string outcome;
  if (!stopped_ && child_.pid() > 0) {
    if (!child_.reaped()) child_.signal_group(SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (!child_.try_reap() && Clock::now() < deadline) {
      pollfd p{child_.pidfd(), POLLIN, 0};
      ::poll(&p, 1, 20);
    }
    if (!child_.reaped()) {
      outcome =
          "did not exit within " + std::to_string(grace.count()) + " ms of SIGTERM; SIGKILL sent";
    } else {
      outcome = process::describe_status(child_.wait_status());
    }
    child_.signal_group(SIGKILL);
    while (!child_.try_reap()) {
      pollfd p{child_.pidfd(), POLLIN, 0};
      ::poll(&p, 1, 20);
    }
    // Whatever the peer left in its group (servers it spawned) goes too; the group id stays
    // reserved while any member lives, so this cannot reach an unrelated process.
    ::kill(-child_.pid(), SIGKILL);
  }
  stopped_ = true;
  if (stdin_ >= 0) ::close(stdin_);
  stdin_ = -1;
  if (reader_.joinable()) reader_.join();
  child_ = process::Child();
  return outcome;
}

}  // namespace toolbridge::bench
