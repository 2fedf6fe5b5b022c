#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <optional>

#include "base/jitter.h"
#include "base/spawn.h"
#include "json/parse.h"
#include "json/utf8.h"
#include "upstream/instance.h"

// What the server sends: each line classified, responses matched to pending requests,
// notifications routed (progress, logs, list_changed), requests from the server forwarded to the
// agent whose call is in flight, and garbage counted and logged sparingly.
namespace toolbridge::upstream {

namespace asio = boost::asio;
namespace bj = boost::json;

namespace {
// Reads a top-level member of a small JSON object given as text; null if absent or not JSON.
bj::value member(std::string_view object_text, std::string_view key) {
  boost::system::error_code ec;
  bj::value v = json::parse(object_text, ec);
  if (ec || !v.is_object()) return nullptr;
  if (const auto* m = v.as_object().if_contains(key)) return *m;
  return nullptr;
}
// The instance's own numeric request id written in `id_text`, or nullopt for an id it never
// writes (a string, a sign, nothing).
std::optional<std::uint64_t> own_id(std::string_view id_text) {
  if (id_text.empty()) return std::nullopt;
  std::uint64_t id = 0;
  for (char c : id_text) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return id;
}

}  // namespace

void Instance::on_line(std::string_view line) {
  json::Envelope env = json::parse_envelope(line);
  std::string repaired;
  if (env.needs_repair) {
    // What we pass on must be valid JSON: bytes that are not UTF-8 and lone surrogates become
    // U+FFFD.
    repaired = json::repair_strings(line);
    line = repaired;
    env = json::parse_envelope(line);
    const NoiseLog::Verdict v = repaired_log_.record();
    if (v.suppressed) {
      spdlog::warn(
          "[{}#{}] {} more messages with invalid UTF-8 or lone surrogates in the last {:g} s",
          server_.name, number_, v.suppressed, static_cast<double>(v.interval.count()) / 1000.0);
    }
    if (v.log) {
      spdlog::warn(
          "[{}#{}] a message held invalid UTF-8 or a lone surrogate; passed on with U+FFFD: "
          "{:.200}",
          server_.name, number_, line);
    }
  }
  switch (env.kind) {
    case json::Kind::kResponse:
      return on_response(line, env);
    case json::Kind::kNotification:
      return on_notification(line, env);
    case json::Kind::kRequest:
      return on_server_request(line, env);
    case json::Kind::kInvalid:
      return on_invalid(line, env);
  }
}

void Instance::on_invalid(std::string_view line, const json::Envelope& env) {
  ++garbage_lines_;
  if (on_invalid_line) on_invalid_line();
  const NoiseLog::Verdict v = invalid_log_.record();
  if (v.suppressed) {
    spdlog::warn("[{}#{}] {} more invalid lines in the last {:g} s", server_.name, number_,
                 v.suppressed, static_cast<double>(v.interval.count()) / 1000.0);
  }
  if (v.log) {
    spdlog::warn("[{}#{}] ignored a line that is not JSON-RPC ({}): {:.200}", server_.name, number_,
                 env.problem, line);
  }
  if (!env.too_deep || env.id.empty()) return;
  // A response we cannot pass on: the request it answers fails now rather than at its deadline.
  std::uint64_t id = 0;
  for (char c : env.id.in(line)) {
    if (c < '0' || c > '9') return;
    id = id * 10 + static_cast<std::uint64_t>(c - '0');
  }
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  const std::string why = "server '" + server_.name + "' answered with a message " + env.problem;
  if (p.internal) {
    json::Envelope none;
    p.internal(why, none);
    return;
  }
  p.sink->on_response(json::make_error(p.caller_id, json::kInternalError,
                                       p.display_name + ": " + why + "; the answer was dropped"));
  if (in_flight() == 0 && on_idle) on_idle();
}

void Instance::on_response(std::string_view line, const json::Envelope& env) {
  const auto id = own_id(env.id.in(line));
  if (!id) return;  // not one of ours
  auto it = pending_.find(*id);
  if (it == pending_.end()) return;  // late answer to a request that timed out or was cancelled
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.internal) {
    p.internal(line, env);
    return;
  }
  if (asks_for_input(line, env)) {
    ask_for_input(std::move(p), env.result.in(line));
    return;
  }
  const Scanned scanned{json::span_after_id(env.result, env.id, p.caller_id.size()),
                        json::span_after_id(env.error, env.id, p.caller_id.size()), env.is_error};
  p.sink->on_scanned_response(json::with_id(line, env.id, p.caller_id), scanned);
  if (in_flight() == 0 && on_idle) on_idle();
}

void Instance::on_lost_answer(std::string_view id, const std::string& reason) {
  const auto own = own_id(id);
  if (!own) return;
  auto it = pending_.find(*own);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (p.internal) {
    // The instance's own requests read it as the error answer it stands for.
    const std::string line = json::make_error(id, json::kUpstreamFailed, reason);
    p.internal(line, json::parse_envelope(line));
    return;
  }
  p.sink->on_failure(Failure::kCrashed, p.caller_id, reason);
  if (in_flight() == 0 && on_idle) on_idle();
}

void Instance::on_notification(std::string_view line, const json::Envelope& env) {
  const std::string& m = env.method;
  if (m == "notifications/progress") {
    // Our tokens are the positive integer ids we issued; anything else is not ours to route.
    const bj::value token = member(env.params.in(line), "progressToken");
    std::uint64_t id = 0;
    if (token.is_int64() && token.as_int64() > 0) id = static_cast<std::uint64_t>(token.as_int64());
    if (token.is_uint64()) id = token.as_uint64();
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.progress_token.empty() || !it->second.sink) return;
    boost::system::error_code ec;
    bj::value params = json::parse(env.params.in(line), ec);
    if (ec || !params.is_object()) return;
    bj::value token_value = json::parse(it->second.progress_token, ec);
    if (ec) return;
    params.as_object()["progressToken"] = std::move(token_value);
    it->second.sink->on_notification(
        json::make_notification("notifications/progress", bj::serialize(params)));
    return;
  }
  if (m == "notifications/tools/list_changed" || m == "notifications/resources/list_changed" ||
      m == "notifications/prompts/list_changed") {
    if (on_list_changed) {
      on_list_changed();
    } else {
      relist();
    }
    return;
  }
  if (m == "notifications/message") {
    if (auto target = route_target()) {
      target->on_notification(std::string(line));
    } else {
      spdlog::info("[{}#{}] log: {:.500}", server_.name, number_, env.params.in(line));
    }
    return;
  }
  if (m == "notifications/tasks/status") {
    // A server's own task (2025-11-25): to whoever waits for its result.
    const bj::value task = member(env.params.in(line), "taskId");
    if (auto target = task.is_string() ? task_target(task.as_string()) : nullptr) {
      target->on_notification(std::string(line));
    }
    return;
  }
  // notifications/cancelled from the server, resources/updated, ...: nothing to route yet.
  spdlog::debug("[{}#{}] notification {} not routed", server_.name, number_, m);
}

void Instance::relist() {
  // A flood of list_changed (thousands a second) costs one re-read plus one more at most.
  if (state_ != State::kReady) return;
  if (relisting_) {
    relist_again_ = true;
    return;
  }
  relisting_ = true;
  asio::co_spawn(
      io_, [self = shared_from_this()]() { return self->relist_loop(); }, base::log_failure("tool list refresh"));
}

asio::awaitable<void> Instance::relist_loop() {
  do {
    relist_again_ = false;
    // Each request of the re-read is bounded: a server that announces but never lists
    // cannot pile up requests. The lists served meanwhile are the last good ones.
    const std::string err = co_await fetch_catalog(server_.startup_timeout);
    if (state_ != State::kReady) break;
    if (err.empty()) {
      if (!list_error_.empty()) spdlog::info("[{}] re-listing works again", server_.name);
      list_error_.clear();
      list_failures_ = 0;
      if (on_catalog_changed) on_catalog_changed();
      continue;
    }
    // Retried with jittered backoff (restart_backoff), for as long as the instance runs.
    list_error_ = err;
    ++list_failures_;
    const auto nominal = base::exponential_delay(server_.restart_backoff_initial,
                                                 server_.restart_backoff_max, list_failures_);
    const auto delay = base::jittered(nominal, 0.2, base::process_random());
    spdlog::warn(
        "[{}] re-listing failed ({} in a row; the last good lists are served): {}; "
        "retrying in {} ms",
        server_.name, list_failures_, err, delay.count());
    if (!relist_again_) {
      relist_wait_ = std::make_shared<base::Timer>(io_, clock_, delay);
      auto wait = relist_wait_;
      boost::system::error_code ec;
      co_await wait->async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (state_ != State::kReady) break;
    }
    relist_again_ = true;
  } while (relist_again_);
  relist_wait_.reset();
  relisting_ = false;
  relist_again_ = false;
}

std::shared_ptr<CallSink> Instance::task_target(std::string_view task_id) const {
  if (task_id.empty()) return nullptr;
  for (const auto& [id, p] : pending_) {
    if (p.sink && p.task_id == task_id) return p.sink;
  }
  return nullptr;
}

std::shared_ptr<CallSink> Instance::route_target() const {
  // Stdio carries no link from a server request to the call that caused it. The most recent
  // in-flight call is the best guess; with one caller per instance it is exact.
  if (auto it = pending_.find(last_call_id_); it != pending_.end() && it->second.sink) {
    return it->second.sink;
  }
  std::uint64_t newest = 0;
  std::shared_ptr<CallSink> sink;
  for (const auto& [id, p] : pending_) {
    if (p.sink && id >= newest) {
      newest = id;
      sink = p.sink;
    }
  }
  return sink;
}

void Instance::on_server_request(std::string_view line, const json::Envelope& env) {
  const std::string id(env.id.in(line));
  if (env.method == "ping") {
    write(json::make_result(id, "{}"));
    return;
  }
  // A request about a server's own task goes to whoever waits for that task's result.
  std::shared_ptr<CallSink> target;
  const std::string_view params = env.params.in(line);
  const bool related = params.find("related-task") != std::string_view::npos;
  if (const bj::value meta = related ? member(params, "_meta") : nullptr; meta.is_object()) {
    const auto* related = meta.as_object().if_contains("io.modelcontextprotocol/related-task");
    const auto* task =
        related && related->is_object() ? related->as_object().if_contains("taskId") : nullptr;
    if (task && task->is_string()) target = task_target(task->as_string());
  }
  if (!target) target = route_target();
  if (!target) {
    if (env.method == "roots/list") {
      write(json::make_result(id, R"({"roots":[]})"));
    } else {
      write(json::make_error(id, json::kMethodNotFound,
                             env.method + ": no agent call is in progress to route it to"));
    }
    return;
  }
  if (server_requests_ >= server_.max_server_requests) {
    write(json::make_error(id, json::kOverloaded,
                           fmt::format("{}: {} requests to the agent already await answers "
                                       "(max_server_requests); retry after one is answered",
                                       env.method, server_requests_)));
    return;
  }
  ++server_requests_;
  // Settled once: by the agent's reply or by the timeout, whichever comes first.
  auto settled = std::make_shared<bool>(false);
  auto timer = std::make_shared<base::Timer>(io_, clock_, server_.server_request_timeout);
  timer->async_wait([weak = weak_from_this(), timer, settled, id,
                     method = env.method](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || *settled || !self) return;
    *settled = true;
    --self->server_requests_;
    const auto secs = static_cast<double>(self->server_.server_request_timeout.count()) / 1000.0;
    self->write(json::make_error(
        id, json::kRequestTimeout,
        fmt::format("{}: the agent did not answer within {:g} s (server_request_timeout)", method,
                    secs)));
  });
  target->on_server_request(
      env.method, std::string(env.params.in(line)),
      [weak = weak_from_this(), id, settled, timer](bool is_error, std::string raw) {
        if (*settled) return;  // timed out: the server already got its error
        *settled = true;
        timer->cancel();
        auto self = weak.lock();
        if (!self) return;
        --self->server_requests_;
        std::string out = R"({"jsonrpc":"2.0","id":)" + id +
                          (is_error ? R"(,"error":)" : R"(,"result":)") + raw + "}";
        self->write(std::move(out));
      });
}

}  // namespace toolbridge::upstream
