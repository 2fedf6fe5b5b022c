#include "helper_process.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "process/child.h"

namespace toolbridge::bench {

namespace {
using Clock = std::chrono::steady_clock;

std::string last_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  for (std::size_t i = 0; i <= n && pos > 0; ++i) {
    const auto nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) return text;
    if (i < n) pos = nl;
  }
  return text.substr(pos);
}
}  // namespace

HelperResult run_helper(const std::vector<std::string>& argv, const std::string& input,
                        std::chrono::milliseconds timeout) {
  HelperResult result;
  process::Spec spec;
  spec.argv = argv;
  spec.env = process::build_env({}, {});
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) {
    result.error = "cannot start " + argv.front() + ": " + spawned.error();
    return result;
  }
  process::Child child = std::move(*spawned);  // its destructor kills and reaps
  int in = child.release_stdin();
  int fds[2] = {child.release_stdout(), child.release_stderr()};
  std::string err_text;
  std::string_view pending_input = input;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  while (fds[0] >= 0 || fds[1] >= 0 || in >= 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[3] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}, {in, POLLOUT, 0}};
    const int r = ::poll(p, 3, static_cast<int>(left));
    if (r < 0 && errno != EINTR) {
      result.error = std::string("poll: ") + std::strerror(errno);
      break;
    }
    if (r <= 0) continue;
    if (in >= 0 && (p[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n =
          pending_input.empty() ? 0 : ::write(in, pending_input.data(), pending_input.size());
      if (n > 0) pending_input.remove_prefix(static_cast<std::size_t>(n));
      if (pending_input.empty() || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        ::close(in);  // EOF tells it the input is complete
        in = -1;
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      const ssize_t n = ::read(fds[i], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i]);
        fds[i] = -1;
        continue;
      }
      (i == 0 ? result.out : err_text).append(buf, static_cast<std::size_t>(n));
      if (err_text.size() > (1u << 20)) err_text.erase(0, err_text.size() - (64u << 10));
    }
  }
  if (in >= 0) ::close(in);
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  // Both pipes closed (or time is up): wait briefly for the exit, then kill the group.
  const auto exit_deadline = timed_out ? Clock::now() : Clock::now() + std::chrono::seconds(5);
  while (!child.try_reap() && Clock::now() < exit_deadline) {
    pollfd p{child.pidfd(), POLLIN, 0};
    ::poll(&p, 1, 20);
  }
  bool killed = false;
  if (!child.reaped()) {
    killed = true;
    child.signal_group(SIGKILL);
    while (!child.try_reap()) {
      pollfd p{child.pidfd(), POLLIN, 0};
      ::poll(&p, 1, 20);
    }
  }
  result.stderr_tail = last_lines(err_text, 12);
  const std::string& name =
      argv.size() > 1 ? argv[1] : argv[0];  // the script, when an interpreter runs one
  if (result.error.empty()) {
    if (timed_out) {
      result.error =
          name + " did not finish within " + std::to_string(timeout.count() / 1000) + " s; killed";
    } else if (killed) {
      result.error = name + " did not exit after closing its output; killed";
    } else if (const std::string how = process::describe_status(child.wait_status());
               how != "exited with code 0") {
      result.error = name + " " + how;
    }
  }
  return result;
}

}  // namespace toolbridge::bench
