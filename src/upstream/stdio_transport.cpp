#include "upstream/stdio_transport.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "base/held_bytes.h"
#include "base/spawn.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;

namespace {
constexpr std::size_t kStderrTailLines = 5;

std::string tail_text(const std::deque<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) {
    if (!out.empty()) out += " | ";
    out += l;
  }
  return out;
}
}  // namespace

StdioTransport::StdioTransport(asio::io_context& io, const base::Clock& clock,
                               const config::Server& server, std::uint64_t number,
                               Handlers handlers)
    : io_(io),
      clock_(clock),
      server_(server),
      number_(number),
      handlers_(std::move(handlers)),
      stdin_(io),
      stdout_(io),
      stderr_(io),
      pidfd_(io),
      framer_(server_.max_line_bytes),
      exited_(io, clock),
      stderr_log_(clock, server_.log_stderr_lines, server_.log_interval),
      dropped_log_(clock, server_.log_garbage_lines, server_.log_interval) {}

// Descriptors close with their owners; Child's destructor kills and reaps if stop() never ran.
StdioTransport::~StdioTransport() = default;

base::Status StdioTransport::open() {
  process::Spec spec;
  spec.argv.push_back(server_.command);
  spec.argv.insert(spec.argv.end(), server_.args.begin(), server_.args.end());
  spec.env = process::build_env(server_.env, server_.inherit_env);
  spec.cwd = server_.cwd;
  base::Expected<process::Child> spawned = process::Child::spawn(spec);
  if (!spawned) return base::Unexpected{spawned.error()};
  child_ = std::move(*spawned);
  stdin_.assign(child_.release_stdin());
  stdout_.assign(child_.release_stdout());
  stderr_.assign(child_.release_stderr());
  pidfd_.assign(child_.release_pidfd());
  spdlog::debug("[{}] started instance {} (pid {})", server_.name, number_, child_.pid());
  auto self = shared_from_this();
  asio::co_spawn(
      io_, [self]() { return self->read_stdout(); }, base::log_failure("stdio read of stdout"));
  asio::co_spawn(
      io_, [self]() { return self->read_stderr(); }, base::log_failure("stdio read of stderr"));
  asio::co_spawn(
      io_, [self]() { return self->watch_exit(); }, base::log_failure("stdio exit watch"));
  return {};
}

base::Status StdioTransport::congestion() const {
  if (queued_bytes_ < server_.max_write_queue_bytes) return {};
  // A server that does not read its stdin must not grow our memory: refuse, do not queue.
  return base::fail(
      fmt::format("is not reading its input: {} bytes already wait for it (max_write_queue_bytes)",
                  queued_bytes_));
}

void StdioTransport::send(std::string message, std::uint64_t call_id) {
  if (!stdin_.is_open()) return;
  if (!call_id && queued_bytes_ >= server_.max_write_queue_bytes) {
    // Replies and notifications to a server that does not read are dropped; its calls are
    // refused (congestion()), and the instance's own requests time out.
    const NoiseLog::Verdict v = dropped_log_.record();
    if (v.log || v.suppressed) {
      spdlog::warn(
          "[{}#{}] not reading its input ({} bytes queued, max_write_queue_bytes): "
          "dropped {} message(s)",
          server_.name, number_, queued_bytes_, v.suppressed + 1);
    }
    return;
  }
  message.push_back('\n');
  queued_bytes_ += message.size();
  write_queue_.push_back(std::move(message));
  if (call_id) queued_calls_.push_back(call_id);
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()]() { return self->write_loop(); }, base::log_failure("stdio write loop"));
}

asio::awaitable<void> StdioTransport::write_loop() {
  // Everything queued while a write was in progress goes out in one write: one wake-up of the
  // child for many requests.
  std::string batch;
  std::vector<std::uint64_t> calls;
  while (!write_queue_.empty() && stdin_.is_open()) {
    batch.clear();
    if (write_queue_.size() == 1) {
      batch.swap(write_queue_.front());
    } else {
      for (auto& l : write_queue_) batch += l;
    }
    write_queue_.clear();
    calls.swap(queued_calls_);
    queued_calls_.clear();
    boost::system::error_code ec;
    co_await asio::async_write(stdin_, asio::buffer(batch),
                               asio::redirect_error(asio::use_awaitable, ec));
    queued_bytes_ -= std::min(queued_bytes_, batch.size());
    // After a failed write some of the batch may have reached the child: count it as sent.
    for (std::uint64_t id : calls) {
      if (handlers_.on_sent && !stopping_) handlers_.on_sent(id);
    }
    calls.clear();
    if (ec) {
      write_queue_.clear();
      queued_calls_.clear();
      queued_bytes_ = 0;
      boost::system::error_code ignored;
      stdin_.close(ignored);
      // A broken pipe usually means the process is exiting: give the exit watcher a moment so
      // the error names the exit code rather than the symptom.
      auto grace = std::make_shared<base::Timer>(io_, clock_, server_.stop_grace);
      grace->async_wait(
          [self = shared_from_this(), grace, why = ec.message()](boost::system::error_code) {
            self->fail("its stdin broke (" + why + ")");
          });
      break;
    }
  }
  writing_ = false;
}

asio::awaitable<void> StdioTransport::read_stdout() {
  auto self = shared_from_this();
  std::vector<char> buf(256 * 1024);
  base::HeldBytes& held = base::held_answer_bytes();
  for (;;) {
    // Clients hold too many answers unread: the server's next answers wait in its pipe.
    while (held.over()) co_await held.until_under();
    boost::system::error_code ec;
    const std::size_t n = co_await stdout_.async_read_some(
        asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    std::string failure;
    const bool fits = framer_.feed(std::string_view(buf.data(), n), [&](std::string_view l) {
      // Last line of defence: a message we cannot handle fails the instance, never the reader.
      try {
        if (failure.empty() && !stopping_ && handlers_.on_message) handlers_.on_message(l);
      } catch (const std::exception& e) {
        failure = std::string("handling one of its messages failed (") + e.what() + ")";
      }
    });
    if (!failure.empty()) {
      fail(failure);
      break;
    }
    if (!fits) {
      fail("it sent a message longer than max_line_bytes (" +
           std::to_string(server_.max_line_bytes) + ")");
      break;
    }
  }
}

asio::awaitable<void> StdioTransport::read_stderr() {
  auto self = shared_from_this();
  transport::LineFramer lines(64 * 1024);
  std::vector<char> buf(16 * 1024);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n = co_await stderr_.async_read_some(
        asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    const bool ok = lines.feed(std::string_view(buf.data(), n), [this](std::string_view l) {
      const NoiseLog::Verdict v = stderr_log_.record();
      if (v.suppressed) {
        spdlog::info("[{}#{}] {} more stderr lines in the last {:g} s", server_.name, number_,
                     v.suppressed, static_cast<double>(v.interval.count()) / 1000.0);
      }
      if (v.log) spdlog::info("[{}#{}] {}", server_.name, number_, l);
      stderr_tail_.emplace_back(l.substr(0, 300));
      if (stderr_tail_.size() > kStderrTailLines) stderr_tail_.pop_front();
    });
    if (!ok) lines = transport::LineFramer(64 * 1024);  // an endless stderr line is not fatal
  }
}

asio::awaitable<void> StdioTransport::watch_exit() {
  auto self = shared_from_this();
  boost::system::error_code ec;
  co_await pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                             asio::redirect_error(asio::use_awaitable, ec));
  child_.try_reap();
  std::string reason =
      "server '" + server_.name + "' " +
      (child_.reaped() ? process::describe_status(child_.wait_status()) : std::string("exited"));
  if (!stderr_tail_.empty()) reason += " (stderr: " + tail_text(stderr_tail_) + ")";
  fail(reason);
  exited_.cancel();
}

void StdioTransport::fail(const std::string& reason) {
  if (stopping_) return;
  auto on_failure = handlers_.on_failure;
  abort();
  if (on_failure) on_failure(reason);
}

void StdioTransport::abort() {
  stopping_ = true;
  if (!child_.reaped()) child_.signal_group(SIGKILL);
  boost::system::error_code ignored;
  stdin_.close(ignored);
}

asio::awaitable<void> StdioTransport::stop() {
  auto self = shared_from_this();
  const bool running = pidfd_.is_open() && !child_.reaped();
  stopping_ = true;
  boost::system::error_code ec;
  stdin_.close(ec);
  if (running) {
    // Each rung waits up to stop_grace for the exit watcher to reap the child.
    for (int sig : {0, SIGTERM, SIGKILL}) {
      if (child_.reaped()) break;
      if (sig) child_.signal_group(sig);
      exited_.expires_after(server_.stop_grace);
      co_await exited_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      child_.try_reap();
    }
  }
  stdout_.close(ec);
  stderr_.close(ec);
  pidfd_.close(ec);
  child_ = process::Child();  // kills and reaps whatever is left
}

}  // namespace toolbridge::upstream
