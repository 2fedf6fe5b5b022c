#include "spawn_call.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "json/envelope.h"
#include "mcp_http.h"
#include "process/child.h"
#include "transport/line_framer.h"

namespace toolbridge::bench {

namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads stdout (and drains stderr) until the response with `id` arrives. Error text or empty.
std::string await_response(int out, int err, transport::LineFramer& framer, std::string_view id,
                           Clock::time_point deadline, std::string& response) {
  char buf[65536];
  bool found = false;
  while (!found) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return "no response to request " + std::string(id) + " in time";
    pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
    const int r = ::poll(fds, err >= 0 ? 2 : 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return std::string("poll: ") + std::strerror(errno);
    if (r <= 0) continue;
    if (err >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      // stderr is drained so the server never blocks on it.
      if (::read(err, buf, sizeof buf) <= 0) err = -1;
    }
    if (fds[0].revents & (POLLIN | POLLHUP)) {
      const ssize_t n = ::read(out, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return "the server closed its stdout before answering request " + std::string(id);
      framer.feed(std::string_view(buf, static_cast<std::size_t>(n)), [&](std::string_view line) {
        const json::Envelope env = json::parse_envelope(line);
        if (!found && env.kind == json::Kind::kResponse && env.id.in(line) == id) {
          response.assign(line);
          found = true;
        }
      });
    }
  }
  return {};
}

}  // namespace

SpawnCallResult spawn_per_call(const std::vector<std::string>& argv, const std::string& tool,
                               const std::string& arguments_json, std::chrono::milliseconds timeout,
                               std::chrono::milliseconds exit_grace) {
  SpawnCallResult result;
  const auto t0 = Clock::now();
  const auto deadline = t0 + timeout;
  process::Spec spec;
  spec.argv = argv;
  spec.env = process::build_env({}, {});
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) {
    result.error = "spawn: " + spawned.error();
    return result;
  }
  process::Child child = std::move(*spawned);  // its destructor kills and reaps
  const int in = child.release_stdin();
  const int out = child.release_stdout();
  const int err = child.release_stderr();
  transport::LineFramer framer(256u << 20);
  std::string response;

  auto finish = [&](std::string e) {
    if (in >= 0) ::close(in);
    if (!e.empty()) result.error = std::move(e);
    // stdin is closed: wait for the exit while draining the pipes, then kill if it lingers.
    const auto exit_deadline = Clock::now() + exit_grace;
    char buf[65536];
    int drain[2] = {out, err};  // -1 once at EOF
    while (!child.try_reap()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(exit_deadline - Clock::now()).count();
      if (left <= 0) {
        result.killed = true;
        child.signal_group(SIGKILL);
        while (!child.try_reap()) {
          pollfd p{child.pidfd(), POLLIN, 0};
          ::poll(&p, 1, 10);
        }
        break;
      }
      pollfd fds[3] = {{child.pidfd(), POLLIN, 0}, {drain[0], POLLIN, 0}, {drain[1], POLLIN, 0}};
      ::poll(fds, 3, static_cast<int>(left));
      for (int i = 1; i < 3; ++i) {
        if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          if (::read(fds[i].fd, buf, sizeof buf) <= 0) drain[i - 1] = -1;
        }
      }
    }
    ::close(out);
    ::close(err);
    result.ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (result.error.empty() && result.killed) result.error = "did not exit after stdin closed";
  };

  const std::string init = json::make_request(
      "1", "initialize",
      R"({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"toolbridge-bench","version":"0.1.0"}})");
  if (!write_all(in, init + "\n")) {
    finish("writing initialize failed");
    return result;
  }
  if (std::string e = await_response(out, err, framer, "1", deadline, response); !e.empty()) {
    finish("initialize: " + e);
    return result;
  }
  const std::string params = "{\"name\":" + json::quote(tool) + ",\"arguments\":" + arguments_json + "}";
  const std::string rest = json::make_notification("notifications/initialized", {}) + "\n" +
                           json::make_request("2", "tools/call", params) + "\n";
  if (!write_all(in, rest)) {
    finish("writing tools/call failed");
    return result;
  }
  if (std::string e = await_response(out, err, framer, "2", deadline, response); !e.empty()) {
    finish("tools/call: " + e);
    return result;
  }
  finish(check_tool_response(response, "2", 0));
  return result;
}

}  // namespace toolbridge::bench
