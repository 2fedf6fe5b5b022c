#include "gateway_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "mcp_http.h"

namespace toolbridge::bench {

namespace bj = boost::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// The CPU time of every live thread of `pid` (the first field of /proc/PID/task/TID/schedstat,
// in ns), or nullopt when the kernel does not keep it. Threads that have exited are not counted:
// the processes measured here keep theirs for their life.
std::optional<double> schedstat_ns(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  double total = 0;
  bool any = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    std::ifstream in(entry.path() / "schedstat");
    unsigned long long ns = 0;
    if (!(in >> ns)) continue;
    total += static_cast<double>(ns);
    any = true;
  }
  if (ec || !any) return std::nullopt;
  return total;
}

}  // namespace

ProcSample sample_process(pid_t pid) {
  ProcSample s;
  if (pid <= 0) return s;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may contain spaces) start at ") ". utime and stime are
  // fields 14 and 15 of the whole line, i.e. the 12th and 13th after the state field.
  const auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size()) return s;
  if (text[close + 2] == 'Z' || text[close + 2] == 'X') return s;  // exited: nothing to measure
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  s.cpu_us = static_cast<double>(utime + stime) * 1e6 / ticks;
  // The same time in nanoseconds where the kernel keeps it (schedstat, per thread): the 10-ms
  // ticks of `stat` make a 1-s window of a process using 5 % of a core ±20 %.
  if (const std::optional<double> ns = schedstat_ns(pid)) s.cpu_us = *ns / 1e3;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_mib = std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  }
  s.ok = true;
  return s;
}

GatewayProcess::~GatewayProcess() { stop(2'000ms); }

void GatewayProcess::drain_stderr(int fd) {
  std::string pending;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::lock_guard lock(mu_);
      // spdlog pattern "%Y-%m-%dT%H:%M:%S.%e %l %v": the level is the second word.
      const auto sp = line.find(' ');
      const std::string level = sp == std::string::npos ? "" : line.substr(sp + 1, line.find(' ', sp + 1) - sp - 1);
      if ((level == "warning" || level == "warn" || level == "error" || level == "critical") &&
          warnings_.size() < 200) {
        warnings_.push_back(line);
      }
      tail_.push_back(std::move(line));
      if (tail_.size() > 30) tail_.pop_front();
    }
  }
  ::close(fd);
}

std::vector<std::string> GatewayProcess::warnings() const {
  std::lock_guard lock(mu_);
  return warnings_;
}

std::string GatewayProcess::stderr_tail() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& l : tail_) out += "  | " + l + "\n";
  return out;
}

std::string GatewayProcess::start(const std::string& toolbridge_bin, const std::string& config_yaml,
                                  std::chrono::seconds ready_timeout) {
  char path[] = "/tmp/toolbridge-bench-XXXXXX.yaml";
  const int cfd = ::mkstemps(path, 5);
  if (cfd < 0) return std::string("cannot create a temporary config file: ") + std::strerror(errno);
  config_path_ = path;
  const bool written = ::write(cfd, config_yaml.data(), config_yaml.size()) == static_cast<ssize_t>(config_yaml.size());
  ::close(cfd);
  if (!written) return "cannot write " + config_path_;

  process::Spec spec;
  spec.argv = {toolbridge_bin, "serve", "--listen", "127.0.0.1:0", "--config", config_path_};
  spec.env = process::build_env({}, {});
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) return "cannot start the gateway: " + spawned.error();
  child_ = std::move(*spawned);
  stopped_ = false;
  ::close(child_.release_stdin());
  stdout_fd_ = child_.release_stdout();
  stderr_thread_ = std::thread([this, fd = child_.release_stderr()] { drain_stderr(fd); });

  // First stdout line: "listening on http://HOST:PORT".
  const auto deadline = Clock::now() + ready_timeout;
  std::string first;
  while (first.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return "the gateway did not print 'listening on ...' in time\n" + stderr_tail();
    pollfd p{stdout_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::this_thread::sleep_for(100ms);  // let the stderr thread catch the last words
      return "the gateway exited before listening\n" + stderr_tail();
    }
    first.append(buf, static_cast<std::size_t>(n));
  }
  first.resize(first.find('\n'));
  // "listening on http://HOST:PORT" (HOST may be "[v6]").
  const std::string prefix = "listening on http://";
  const auto colon = first.rfind(':');
  const std::string port_text = colon == std::string::npos ? "" : first.substr(colon + 1);
  if (first.rfind(prefix, 0) != 0 || colon < prefix.size() || port_text.empty() ||
      port_text.find_first_not_of("0123456789") != std::string::npos || port_text.size() > 5) {
    return "unexpected first stdout line from the gateway: '" + first + "'";
  }
  host_ = first.substr(prefix.size(), colon - prefix.size());
  port_ = static_cast<unsigned short>(std::stoi(port_text));

  // Servers start in the background; /healthz says "ok" once every server is ready.
  std::string last;
  while (Clock::now() < deadline) {
    HttpResult res = http_get(host_, port_, "/healthz", 5s);
    if (res.error.empty() && res.status == 200) {
      boost::system::error_code ec;
      bj::value v = bj::parse(res.body, ec);
      if (!ec && v.is_object() && v.as_object().contains("status") && v.as_object().at("status") == "ok") return "";
      last = res.body;
    } else {
      last = res.error.empty() ? "HTTP " + std::to_string(res.status) : res.error;
    }
    std::this_thread::sleep_for(50ms);
  }
  return "the gateway's /healthz did not report ok in time; last answer: " + last + "\n" + stderr_tail();
}

std::string GatewayProcess::exited() {
  if (stopped_ || child_.pid() <= 0) return "not running";
  if (!child_.try_reap()) return {};
  std::this_thread::sleep_for(100ms);  // let the stderr thread catch the last words
  return "the gateway " + process::describe_status(child_.wait_status()) + "\n" + stderr_tail();
}

std::string GatewayProcess::stop(std::chrono::milliseconds grace) {
  if (stopped_ || child_.pid() <= 0) {
    stopped_ = true;
    if (stderr_thread_.joinable()) stderr_thread_.join();
    if (!config_path_.empty()) ::unlink(config_path_.c_str());
    config_path_.clear();
    return {};
  }
  stopped_ = true;
  std::string outcome;
  // The gateway itself first (not its group): it stops its servers in order.
  if (!child_.reaped()) ::kill(child_.pid(), SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (!child_.try_reap() && Clock::now() < deadline) {
    pollfd p{child_.pidfd(), POLLIN, 0};
    ::poll(&p, 1, 20);
  }
  if (!child_.reaped()) {
    child_.signal_group(SIGKILL);
    while (!child_.try_reap()) {
      pollfd p{child_.pidfd(), POLLIN, 0};
      ::poll(&p, 1, 20);
    }
    outcome = "the gateway did not exit within " + std::to_string(grace.count()) + " ms of SIGTERM; killed";
  } else {
    outcome = process::describe_status(child_.wait_status());
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  stdout_fd_ = -1;
  if (stderr_thread_.joinable()) stderr_thread_.join();
  child_ = process::Child();
  if (!config_path_.empty()) ::unlink(config_path_.c_str());
  config_path_.clear();
  return outcome;
}

}  // namespace toolbridge::bench
