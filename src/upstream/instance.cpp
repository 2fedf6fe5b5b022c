#include "upstream/instance.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "json/parse.h"
#include "json/utf8.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace bj = boost::json;
using namespace std::chrono_literals;

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

Instance::Instance(asio::io_context& io, config::Server server, std::uint64_t number)
    : io_(io),
      server_(std::move(server)),
      number_(number),
      stdin_(io),
      stdout_(io),
      stderr_(io),
      pidfd_(io),
      framer_(server_.max_line_bytes),
      exited_(io, asio::steady_timer::time_point::max()),
      invalid_log_(base::steady_clock(), server_.log_garbage_lines, server_.log_interval),
      repaired_log_(base::steady_clock(), server_.log_garbage_lines, server_.log_interval),
      stderr_log_(base::steady_clock(), server_.log_stderr_lines, server_.log_interval),
      dropped_log_(base::steady_clock(), server_.log_garbage_lines, server_.log_interval) {}

Instance::~Instance() {
  // Descriptors close with their owners; Child's destructor kills and reaps if stop() never ran.
}

asio::awaitable<std::string> Instance::start() {
  if (server_.remote()) {
    Remote::Handlers handlers;
    handlers.on_message = [weak = weak_from_this()](std::string_view message) {
      if (auto self = weak.lock()) self->on_line(message);
    };
    handlers.on_sent = [weak = weak_from_this()](std::uint64_t call_id) {
      auto self = weak.lock();
      if (!self) return;
      if (auto it = self->pending_.find(call_id); it != self->pending_.end())
        it->second.sent = true;
    };
    handlers.on_failure = [weak = weak_from_this()](const std::string& reason) {
      if (auto self = weak.lock()) self->fail(reason);
    };
    remote_ = std::make_shared<Remote>(io_, server_, std::move(handlers));
    std::string error = remote_->open();
    if (!error.empty()) {
      state_ = State::kExited;
      co_return error;
    }
    spdlog::debug("[{}] started remote instance {} ({})", server_.name, number_, server_.url);
    std::string result = co_await initialize();
    co_return result;
  }
  process::Spec spec;
  spec.argv.push_back(server_.command);
  spec.argv.insert(spec.argv.end(), server_.args.begin(), server_.args.end());
  spec.env = process::build_env(server_.env, server_.inherit_env);
  spec.cwd = server_.cwd;
  std::string error;
  child_ = process::Child::spawn(spec, error);
  if (!error.empty()) {
    state_ = State::kExited;
    co_return error;
  }
  stdin_.assign(child_.release_stdin());
  stdout_.assign(child_.release_stdout());
  stderr_.assign(child_.release_stderr());
  pidfd_.assign(child_.release_pidfd());
  spdlog::debug("[{}] started instance {} (pid {})", server_.name, number_, child_.pid());

  auto self = shared_from_this();
  asio::co_spawn(
      io_, [self]() { return self->read_stdout(); }, asio::detached);
  asio::co_spawn(
      io_, [self]() { return self->read_stderr(); }, asio::detached);
  asio::co_spawn(
      io_, [self]() { return self->watch_exit(); }, asio::detached);
  std::string result = co_await initialize();
  co_return result;
}

void Instance::call(std::string_view method, std::string params, std::string caller_id,
                    std::string progress_token, std::shared_ptr<CallSink> sink,
                    std::chrono::milliseconds timeout, const std::string& display_name) {
  if (state_ != State::kReady) {
    sink->on_response(json::make_error(caller_id, json::kUpstreamUnavailable,
                                       "server '" + server_.name + "' is not running" +
                                           (exit_reason_.empty() ? "" : ": " + exit_reason_)));
    return;
  }
  if (in_flight() >= server_.max_in_flight) {
    // Backpressure instead of an unbounded pile-up on one process.
    sink->on_response(json::make_error(
        caller_id, json::kOverloaded,
        fmt::format("server '{}' already has {} requests in flight (max_in_flight); retry after "
                    "one finishes",
                    server_.name, in_flight())));
    return;
  }
  if (!remote_ && queued_bytes_ >= server_.max_write_queue_bytes) {
    // A server that does not read its stdin must not grow our memory: refuse, do not queue.
    sink->on_response(json::make_error(
        caller_id, json::kOverloaded,
        fmt::format("server '{}' is not reading its input: {} bytes already wait for it "
                    "(max_write_queue_bytes); retry later",
                    server_.name, queued_bytes_)));
    return;
  }
  const std::uint64_t id = next_id_++;
  const std::string id_text = std::to_string(id);
  if (!progress_token.empty()) {
    // The server sees our token (the upstream id, unique on this instance); progress maps back.
    boost::system::error_code ec;
    bj::value p = json::parse(params, ec);
    if (ec || !p.is_object()) {
      sink->on_response(json::make_error(caller_id, json::kInvalidParams,
                                         "params could not be read: " + ec.message()));
      return;
    }
    auto& meta = p.as_object()["_meta"];
    if (!meta.is_object()) meta = bj::object{};
    meta.as_object()["progressToken"] = id;
    params = bj::serialize(p);
  }
  Pending entry;
  entry.caller_id = std::move(caller_id);
  entry.progress_token = std::move(progress_token);
  entry.sink = std::move(sink);
  entry.display_name = display_name;
  entry.timeout = timeout;
  entry.deadline = std::make_unique<asio::steady_timer>(io_, timeout);
  entry.deadline->async_wait([weak = weak_from_this(), id](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    auto it = self->pending_.find(id);
    if (it == self->pending_.end()) return;
    Pending p = std::move(it->second);
    self->pending_.erase(it);
    self->write(json::make_notification(
        "notifications/cancelled",
        R"({"requestId":)" + std::to_string(id) + R"(,"reason":"deadline exceeded"})"));
    self->check_responsive(p.display_name + " passed its deadline");
    const auto secs = static_cast<double>(p.timeout.count()) / 1000.0;
    p.sink->on_response(json::make_error(
        p.caller_id, json::kRequestTimeout,
        fmt::format("{} timed out after {:g} s; the request was cancelled", p.display_name, secs)));
    if (self->in_flight() == 0 && self->on_idle) self->on_idle();
  });
  pending_.emplace(id, std::move(entry));
  last_call_id_ = id;
  write(json::make_request(id_text, method, params), id);
}

void Instance::check_responsive(const std::string& after) {
  if (checking_ || state_ != State::kReady) return;
  checking_ = true;
  asio::co_spawn(
      io_,
      [self = shared_from_this(), after]() -> asio::awaitable<void> {
        std::string error;
        co_await self->request("ping", "{}", error, self->server_.ping_timeout);
        self->checking_ = false;
        if (!error.empty() && self->state_ == State::kReady) {
          // Hung: a server that cannot even answer ping will not finish its other calls either.
          self->fail(fmt::format("it stopped responding ({}; {}); recycling it", after, error));
        }
      },
      asio::detached);
}

void Instance::cancel(const std::shared_ptr<CallSink>& sink, std::string_view caller_id,
                      const std::string& reason) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.sink != sink || it->second.caller_id != caller_id) continue;
    write(json::make_notification("notifications/cancelled",
                                  R"({"requestId":)" + std::to_string(it->first) + R"(,"reason":)" +
                                      json::quote(reason) + "}"));
    // The spec says a cancelled request gets no response; the caller has moved on.
    pending_.erase(it);
    if (in_flight() == 0 && on_idle) on_idle();
    return;
  }
}

void Instance::notify(std::string_view method, std::string params) {
  if (state_ == State::kReady) write(json::make_notification(method, params));
}

void Instance::write(std::string line, std::uint64_t call_id) {
  if (remote_) {
    if (state_ != State::kExited && state_ != State::kStopping)
      remote_->send(std::move(line), call_id);
    return;
  }
  if (!stdin_.is_open()) return;
  if (!call_id && queued_bytes_ >= server_.max_write_queue_bytes) {
    // Replies and notifications to a server that does not read are dropped; its calls are
    // refused in call(), and our own requests time out.
    const NoiseLog::Verdict v = dropped_log_.record();
    if (v.log || v.suppressed) {
      spdlog::warn(
          "[{}#{}] not reading its input ({} bytes queued, max_write_queue_bytes): "
          "dropped {} message(s)",
          server_.name, number_, queued_bytes_, v.suppressed + 1);
    }
    return;
  }
  line.push_back('\n');
  queued_bytes_ += line.size();
  write_queue_.push_back(std::move(line));
  if (call_id) queued_calls_.push_back(call_id);
  if (writing_) return;
  writing_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()]() { return self->write_loop(); }, asio::detached);
}

asio::awaitable<void> Instance::write_loop() {
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
      if (auto it = pending_.find(id); it != pending_.end()) it->second.sent = true;
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
      auto grace = std::make_shared<asio::steady_timer>(io_, server_.stop_grace);
      grace->async_wait(
          [self = shared_from_this(), grace, why = ec.message()](boost::system::error_code) {
            self->fail("its stdin broke (" + why + ")");
          });
      break;
    }
  }
  writing_ = false;
}

asio::awaitable<void> Instance::read_stdout() {
  auto self = shared_from_this();
  std::vector<char> buf(256 * 1024);
  for (;;) {
    boost::system::error_code ec;
    const std::size_t n = co_await stdout_.async_read_some(
        asio::buffer(buf), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    std::string failure;
    const bool fits = framer_.feed(std::string_view(buf.data(), n), [&](std::string_view l) {
      // Last line of defence: a message we cannot handle fails the instance, never the reader.
      try {
        if (failure.empty()) on_line(l);
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

asio::awaitable<void> Instance::read_stderr() {
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

asio::awaitable<void> Instance::watch_exit() {
  auto self = shared_from_this();
  boost::system::error_code ec;
  co_await pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                             asio::redirect_error(asio::use_awaitable, ec));
  child_.try_reap();
  std::string reason =
      "server '" + server_.name + "' " +
      (child_.reaped() ? process::describe_status(child_.wait_status()) : std::string("exited"));
  if (!stderr_tail_.empty()) reason += " (stderr: " + tail_text(stderr_tail_) + ")";
  if (state_ != State::kStopping)
    fail(reason);
  else
    exit_reason_ = reason;
  exited_.cancel();
}

void Instance::fail(const std::string& reason) {
  if (state_ == State::kExited) return;
  const bool was_stopping = state_ == State::kStopping;
  if (exit_reason_.empty()) {
    exit_reason_ = reason.rfind("server '", 0) == 0
                       ? reason
                       : "server '" + server_.name + "' failed: " + reason;
  }
  state_ = State::kExited;
  spdlog::warn("[{}#{}] {}", server_.name, number_, exit_reason_);
  fail_pending(json::kUpstreamFailed, exit_reason_ + "; the request may or may not have run");
  if (!child_.reaped()) child_.signal_group(SIGKILL);
  if (remote_) remote_->close();
  boost::system::error_code ignored;
  stdin_.close(ignored);
  if (!was_stopping && on_exit) on_exit(exit_reason_);
}

void Instance::fail_pending(int code, const std::string& message) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    if (p.internal) {
      json::Envelope none;
      p.internal(message, none);
    } else if (p.sink && code == json::kUpstreamFailed && !p.sent) {
      p.sink->on_response(json::make_error(
          p.caller_id, json::kNotSent,
          p.display_name + ": " + exit_reason_ + " before the request was sent to it"));
    } else if (p.sink) {
      p.sink->on_response(json::make_error(p.caller_id, code, p.display_name + ": " + message));
    }
  }
}

asio::awaitable<void> Instance::stop() {
  if (state_ == State::kStopping) co_return;
  auto self = shared_from_this();
  const bool running = pidfd_.is_open() && !child_.reaped();
  state_ = State::kStopping;
  fail_pending(json::kUpstreamUnavailable, "server '" + server_.name + "' is shutting down");
  if (remote_) {
    co_await remote_->end_session(server_.stop_grace);
    remote_->close();
    // Let the aborted reads and writes finish their coroutines (bounded by stop_grace).
    boost::system::error_code ec;
    for (auto waited = 0ms; remote_->running() > 0 && waited < server_.stop_grace; waited += 5ms) {
      asio::steady_timer tick(io_, 5ms);
      co_await tick.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    state_ = State::kExited;
    co_return;
  }
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
  state_ = State::kExited;
  stdout_.close(ec);
  stderr_.close(ec);
  pidfd_.close(ec);
  child_ = process::Child();  // kills and reaps whatever is left
}

}  // namespace toolbridge::upstream
