#include "upstream/instance.h"

#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/spawn.h"
#include "json/parse.h"
#include "json/utf8.h"
#include "upstream/remote.h"
#include "upstream/stdio_transport.h"

namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace bj = boost::json;

int jsonrpc_code(Failure f) {
  switch (f) {
    case Failure::kUnavailable:
      return json::kUpstreamUnavailable;
    case Failure::kOverloaded:
      return json::kOverloaded;
    case Failure::kTimeout:
      return json::kRequestTimeout;
    case Failure::kCrashed:
      return json::kUpstreamFailed;
    case Failure::kNotSent:
      return json::kNotSent;
  }
  return json::kInternalError;
}

using namespace std::chrono_literals;

Instance::Instance(asio::io_context& io, config::Server server, std::uint64_t number,
                   const base::Clock& clock)
    : io_(io),
      clock_(clock),
      server_(std::move(server)),
      number_(number),
      invalid_log_(clock_, server_.log_garbage_lines, server_.log_interval),
      repaired_log_(clock_, server_.log_garbage_lines, server_.log_interval) {}

Instance::~Instance() {
  // The transport's readers hold it, not us: without this a child nobody stopped would live
  // until it exits on its own.
  if (transport_) transport_->abort();
}

Transport::Handlers Instance::transport_handlers() {
  Transport::Handlers handlers;
  handlers.on_message = [weak = weak_from_this()](std::string_view message) {
    if (auto self = weak.lock()) self->on_line(message);
  };
  handlers.on_sent = [weak = weak_from_this()](std::uint64_t call_id) {
    auto self = weak.lock();
    if (!self) return;
    if (auto it = self->pending_.find(call_id); it != self->pending_.end()) it->second.sent = true;
  };
  handlers.on_failure = [weak = weak_from_this()](const std::string& reason) {
    if (auto self = weak.lock()) self->fail(reason);
  };
  handlers.on_lost_answer = [weak = weak_from_this()](std::string_view id,
                                                      const std::string& reason) {
    if (auto self = weak.lock()) self->on_lost_answer(id, reason);
  };
  return handlers;
}

asio::awaitable<base::Status> Instance::start() {
  // A url means HTTP; a command, a child process on stdio.
  if (server_.remote()) {
    transport_ = std::make_shared<Remote>(io_, clock_, server_, transport_handlers());
  } else {
    transport_ =
        std::make_shared<StdioTransport>(io_, clock_, server_, number_, transport_handlers());
  }
  base::Status opened = transport_->open();
  if (!opened) {
    state_ = State::kExited;
    co_return opened;
  }
  if (server_.remote())
    spdlog::debug("[{}] started remote instance {} ({})", server_.name, number_, server_.url);
  std::string failure = co_await initialize();
  if (!failure.empty()) co_return base::fail(std::move(failure));
  co_return base::Status();
}

void Instance::call(std::string_view method, std::string params, std::string caller_id,
                    std::string progress_token, std::shared_ptr<CallSink> sink,
                    std::chrono::milliseconds timeout, const std::string& display_name) {
  if (state_ != State::kReady) {
    sink->on_failure(Failure::kUnavailable, caller_id,
                     "server '" + server_.name + "' is not running" +
                         (exit_reason_.empty() ? "" : ": " + exit_reason_));
    return;
  }
  if (in_flight() >= server_.max_in_flight) {
    // Backpressure instead of an unbounded pile-up on one process.
    sink->on_failure(
        Failure::kOverloaded, caller_id,
        fmt::format("server '{}' already has {} requests in flight (max_in_flight); retry after "
                    "one finishes",
                    server_.name, in_flight()));
    return;
  }
  if (const base::Status sendable = transport_->congestion(); !sendable) {
    sink->on_failure(Failure::kOverloaded, caller_id,
                     fmt::format("server '{}' {}; retry later", server_.name, sendable.error()));
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
  entry.expires = clock_.now() + timeout;
  const auto expires = entry.expires;
  if (stateless_) {
    entry.method = std::string(method);
    entry.params = params;
  }
  if (method == "tasks/result") {
    boost::system::error_code ec;
    const bj::value p = json::parse(params, ec);
    const bj::value* task = !ec && p.is_object() ? p.as_object().if_contains("taskId") : nullptr;
    if (task && task->is_string()) entry.task_id = std::string(task->as_string());
  }
  pending_.emplace(id, std::move(entry));
  arm_deadline(expires);
  last_call_id_ = id;
  write(json::make_request(id_text, method, params), id);
}

void Instance::arm_deadline(Clock::time_point at) {
  if (at >= deadline_armed_) return;  // the timer fires sooner and re-arms for what is left
  deadline_armed_ = at;
  if (!deadline_timer_) deadline_timer_ = std::make_unique<base::Timer>(io_, clock_);
  deadline_timer_->expires_at(at);  // cancels a later wait, whose handler then does nothing
  deadline_timer_->async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->deadline_armed_ = Clock::time_point::max();
    self->expire_due();
  });
}

void Instance::expire_due() {
  const auto now = clock_.now();
  auto next = Clock::time_point::max();
  std::vector<std::uint64_t> due;
  for (const auto& [id, p] : pending_) {
    if (p.expires <= now) {
      due.push_back(id);
    } else {
      next = std::min(next, p.expires);
    }
  }
  for (const std::uint64_t id : due) {
    auto it = pending_.find(id);
    if (it == pending_.end()) continue;  // settled by an earlier one's callbacks
    Pending p = std::move(it->second);
    pending_.erase(it);
    time_out(id, std::move(p));
  }
  // Calls forwarded by the callbacks above armed the timer themselves.
  if (next != Clock::time_point::max()) arm_deadline(next);
}

void Instance::time_out(std::uint64_t id, Pending p) {
  if (!p.awaiting_input) {  // else no request of the call is out
    write(json::make_notification(
        "notifications/cancelled",
        R"({"requestId":)" + std::to_string(id) + R"(,"reason":"deadline exceeded"})"));
    check_responsive(p.display_name + " passed its deadline");
  }
  const auto secs = static_cast<double>(p.timeout.count()) / 1000.0;
  p.sink->on_failure(
      Failure::kTimeout, p.caller_id,
      fmt::format("{} timed out after {:g} s; the request was cancelled", p.display_name, secs));
  if (in_flight() == 0 && on_idle) on_idle();
}

void Instance::check_responsive(const std::string& after) {
  if (checking_ || state_ != State::kReady) return;
  checking_ = true;
  asio::co_spawn(
      io_,
      [self = shared_from_this(), after]() -> asio::awaitable<void> {
        // An error answer is an answer: a server that refuses ping (a 2026-07-28 host that does
        // not serve it) is still responding.
        bj::value refused;
        const base::Expected<bj::value> pong =
            co_await self->request("ping", "{}", self->server_.ping_timeout, &refused);
        self->checking_ = false;
        if (!pong && refused.is_null() && self->state_ == State::kReady) {
          // Hung: a server that cannot even answer ping will not finish its other calls either.
          self->fail(
              fmt::format("it stopped responding ({}; {}); recycling it", after, pong.error()));
        }
      },
      base::log_failure("instance ping"));
}

void Instance::cancel(const std::shared_ptr<CallSink>& sink, std::string_view caller_id,
                      const std::string& reason) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->second.sink != sink || it->second.caller_id != caller_id) continue;
    if (!it->second.awaiting_input) {  // else no request of the call is out
      write(json::make_notification("notifications/cancelled",
                                    R"({"requestId":)" + std::to_string(it->first) +
                                        R"(,"reason":)" + json::quote(reason) + "}"));
    }
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
  if (transport_ && state_ != State::kExited && state_ != State::kStopping)
    transport_->send(std::move(line), call_id);
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
  if (relist_wait_) relist_wait_->cancel();
  spdlog::warn("[{}#{}] {}", server_.name, number_, exit_reason_);
  fail_pending(Failure::kCrashed, exit_reason_ + "; the request may or may not have run");
  if (transport_) transport_->abort();
  if (!was_stopping && on_exit) on_exit(exit_reason_);
}

void Instance::fail_pending(Failure failure, const std::string& message) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    if (p.internal) {
      json::Envelope none;
      p.internal(message, none);
    } else if (p.sink && failure == Failure::kCrashed && !p.sent) {
      p.sink->on_failure(
          Failure::kNotSent, p.caller_id,
          p.display_name + ": " + exit_reason_ + " before the request was sent to it");
    } else if (p.sink) {
      p.sink->on_failure(failure, p.caller_id, p.display_name + ": " + message);
    }
  }
}

asio::awaitable<void> Instance::stop() {
  if (state_ == State::kStopping) co_return;
  auto self = shared_from_this();
  state_ = State::kStopping;
  if (relist_wait_) relist_wait_->cancel();
  fail_pending(Failure::kUnavailable, "server '" + server_.name + "' is shutting down");
  if (transport_) co_await transport_->stop();
  state_ = State::kExited;
}

}  // namespace toolbridge::upstream
