#include "frontend/openai_proxy.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>
#include <charconv>
#include <optional>

#include "base/jitter.h"
#include "frontend/openai.h"
#include "frontend/router.h"
#include "llm/usage.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using call::Fault;
using call::Result;
using transport::Exchange;
using Clock = base::Clock;

namespace {

constexpr std::size_t kMaxErrorBody = 64u << 10;  // a worker's error answer kept to pass on

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::chrono::milliseconds retry_after(const transport::HttpExchange& hx,
                                      std::chrono::milliseconds cap) {
  const std::string v = hx.header("Retry-After");
  unsigned long s = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), s);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    return std::chrono::milliseconds{0};
  return std::min<std::chrono::milliseconds>(
      std::chrono::seconds(std::min<unsigned long>(s, 86'400)), cap);
}

}  // namespace

std::string openai_error_json(std::string_view message, std::string_view type,
                              std::string_view code) {
  bj::object err{{"message", message}, {"type", type}, {"param", nullptr}};
  if (code.empty()) {
    err["code"] = nullptr;
  } else {
    err["code"] = code;
  }
  return bj::serialize(bj::object{{"error", std::move(err)}});
}

asio::awaitable<Result> ProxyStage::handle(call::Call& call, call::Next) {
  const config::Model& cfg = model_.config();
  std::vector<bool> tried(model_.workers().size(), false);
  std::string why = "no attempt was made";
  std::chrono::milliseconds wait{0};
  bool out_of_time = false;  // the deadline cut the attempts short
  for (std::size_t attempt = 0; attempt <= cfg.max_retries; ++attempt) {
    if (state_->client_gone || call.cancelled()) co_return Result::failure(Fault::kCancelled, "");
    if (attempt > 0) {
      // Jittered exponential backoff (up to 1024 times retry_backoff), or the worker's
      // Retry-After when longer.
      const auto nominal = base::exponential_delay(cfg.retry_backoff, cfg.retry_backoff * 1024,
                                                   static_cast<int>(attempt));
      std::chrono::milliseconds delay = base::jittered(nominal, 0.5, base::process_random());
      delay = std::max(delay, wait);
      if (clock_.now() + delay >= call.deadline) {
        out_of_time = true;
        break;
      }
      ++model_.retries();
      if (delay.count() > 0) {
        base::Timer timer(exec_, clock_, delay);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (state_->client_gone) co_return Result::failure(Fault::kCancelled, "");
      }
    }
    if (call.sent == Clock::time_point{}) call.sent = clock_.now();  // queueing ends here
    auto choice = model_.pick(input_, tried);
    if (!choice) {
      status = http::status::service_unavailable;
      error_type = "unavailable";
      why = fmt::format("model '{}': no worker is available (every one failed recently); {}",
                        cfg.name, why);
      co_return Result::failure(Fault::kUnavailable, why);
    }
    const std::size_t i = choice->worker;
    tried[i] = true;
    llm::Worker& w = model_.workers()[i];
    model_.policy().routed(input_, i);
    const auto now = clock_.now();
    if (now >= call.deadline) {
      out_of_time = true;
      break;
    }
    // At least 1 ms: a zero limit would mean none to the HTTP client.
    const auto left =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(call.deadline - now),
                 std::chrono::milliseconds{1});

    transport::HttpRequest req;
    req.verb = http::verb::post;
    req.url = w.url;
    req.url.target += path_;
    req.headers.emplace_back("Content-Type", "application/json");
    if (auto accept = header(ex_.request(), "Accept"); !accept.empty())
      req.headers.emplace_back("Accept", std::string(accept));
    for (const auto& [k, v] : cfg.headers) req.headers.emplace_back(k, v);
    if (!call.traceparent.empty()) req.headers.emplace_back("traceparent", call.traceparent);
    req.body = ex_.request().body();
    req.write_timeout = left;
    req.header_timeout = left;
    req.body_timeout = std::min(left, cfg.stream_idle_timeout);

    model_.sent(i);
    const auto sent_at = clock_.now();
    sent_at_ = sent_at;
    state_->upstream = std::make_unique<transport::HttpExchange>();
    *state_->upstream = co_await model_.client().send(std::move(req));
    transport::HttpExchange& hx = *state_->upstream;
    bool ok = !hx.failed() && !state_->client_gone;
    if (ok) ok = co_await hx.read_header();
    if (!ok || state_->client_gone) {
      model_.ended(i);
      if (state_->client_gone) {
        model_.released(i);
        co_return Result::failure(Fault::kCancelled, "");
      }
      ++*w.requests_failed;
      model_.failed(i);
      why = fmt::format("worker {}: {}", w.config.name, hx.error().message);
      // Writing and waiting for the header are bounded by the deadline itself.
      const auto step = hx.error().step;
      if (hx.error().timed_out() &&
          (step == transport::HttpStep::kWrite || step == transport::HttpStep::kReadHeader ||
           clock_.now() >= call.deadline)) {
        status = http::status::gateway_timeout;
        error_type = "timeout";
        why = fmt::format("model '{}': no answer within the request timeout of {} ms ({})",
                          cfg.name, call.timeout.count(), why);
        co_return Result::failure(Fault::kTimeout, why);
      }
      status = http::status::bad_gateway;
      error_type = "upstream_error";
      error_body.clear();
      wait = std::chrono::milliseconds{0};
      continue;
    }
    const int code = hx.status();
    if (code >= 500 || code == 429) {
      // Not sent to the client yet: keep the worker's answer to pass on if no retry succeeds.
      std::string body;
      co_await hx.read_body(body, kMaxErrorBody);
      model_.ended(i);
      ++*w.requests_failed;
      if (code >= 500) {
        model_.failed(i);
      } else {
        model_.released(i);  // alive, only busy
      }
      wait = retry_after(hx, cfg.max_retry_after);
      why = fmt::format("worker {} answered HTTP {}", w.config.name, code);
      status = static_cast<http::status>(code);
      error_body = std::move(body);
      retry_hint = wait;
      continue;
    }
    model_.succeeded(i);
    const base::Status relayed = co_await relay(call, i, hx);
    model_.ended(i);
    w.latency->observe(seconds(clock_.now() - sent_at));
    if (relayed) {
      ++*w.requests_ok;
      co_return Result{};
    }
    ++*w.requests_failed;
    if (state_->replied || state_->client_gone)
      co_return Result::failure(Fault::kCrashed, relayed.error());
    // Failed before anything reached the client: another worker may still answer.
    model_.failed(i);
    why = relayed.error();
    status = http::status::bad_gateway;
    error_body.clear();
    wait = std::chrono::milliseconds{0};
  }
  // A worker's own error answer (a 429 whose Retry-After outlasts the deadline) is passed on.
  if ((out_of_time || clock_.now() >= call.deadline) && error_body.empty()) {
    status = http::status::gateway_timeout;
    error_type = "timeout";
    error_body.clear();
    why = fmt::format("model '{}': the request timeout of {} ms passed; last: {}", cfg.name,
                      call.timeout.count(), why);
    co_return Result::failure(Fault::kTimeout, why);
  }
  co_return Result::failure(
      Fault::kUnavailable,
      fmt::format("model '{}': {} attempts failed; last: {}", cfg.name, cfg.max_retries + 1, why));
}

asio::awaitable<base::Status> ProxyStage::relay(call::Call& call, std::size_t i,
                                                transport::HttpExchange& hx) {
  llm::Worker& w = model_.workers()[i];
  const auto started = clock_.now();
  const std::string content_type = hx.header("Content-Type");
  const transport::Headers out{{kWorkerHeader, w.config.name}};
  const auto status_code = static_cast<http::status>(hx.status());
  const bool stream = content_type.starts_with("text/event-stream");
  // The record reads the bytes as they pass; what the client gets is never rewritten.
  std::optional<llm::TokenScanner> scan;
  if (record.store) scan.emplace(stream, record.store->max_values());
  llm::UsageScanner usage;
  auto account = [&] {
    if (auto p = usage.prompt_tokens()) *w.prompt_tokens += *p;
    if (auto c = usage.cached_tokens()) *w.cached_tokens += *c;
    call.slots.get<llm::Served>() = {w.config.name, usage.prompt_tokens(), usage.cached_tokens(),
                                     usage.completion_tokens()};
  };
  if (!stream) {
    std::string body;
    const bool ok = co_await hx.read_body(body, model_.config().max_response_bytes);
    if (!ok) co_return base::fail(fmt::format("worker {}: {}", w.config.name, hx.error().message));
    const auto first_byte = clock_.now();
    w.ttft->observe(seconds(first_byte - started));
    usage.feed(body);
    account();
    if (scan) {
      scan->feed(body);
      keep_record(call, i, hx.status(), false, true, *scan, first_byte);
    }
    state_->replied = true;
    co_await ex_.reply(status_code, content_type, std::move(body), out);
    co_return base::Status();
  }
  // The first piece decides: a worker that fails before it is still retried elsewhere.
  std::string_view piece = co_await hx.read_some();
  if (piece.empty() && !hx.done())
    co_return base::fail(fmt::format("worker {}: {}", w.config.name, hx.error().message));
  const auto first_byte = clock_.now();
  w.ttft->observe(seconds(first_byte - started));
  state_->replied = true;
  if (!co_await ex_.begin_stream(status_code, content_type, out)) {
    hx.close();
    co_return base::fail("the client went away");
  }
  while (!piece.empty()) {
    usage.feed(piece);
    if (scan) scan->feed(piece);
    std::string chunk(piece);
    if (!co_await ex_.write_chunk(std::move(chunk))) {
      hx.close();  // the worker stops generating for nobody
      account();
      if (scan) keep_record(call, i, hx.status(), true, false, *scan, first_byte);
      co_return base::fail("the client went away");
    }
    piece = co_await hx.read_some();
  }
  account();
  if (scan) keep_record(call, i, hx.status(), true, hx.done(), *scan, first_byte);
  if (!hx.done()) {
    // Too late to retry: the client has part of the answer. Say so in the stream's own terms.
    std::string why =
        fmt::format("worker {} failed mid-stream: {}", w.config.name, hx.error().message);
    std::string event =
        "\n\ndata: " + openai_error_json(why, "upstream_error", "stream_interrupted") + "\n\n";
    co_await ex_.write_chunk(std::move(event));
    co_await ex_.end_stream();
    co_return base::fail(std::move(why));
  }
  co_await ex_.end_stream();
  co_return base::Status();
}

void ProxyStage::keep_record(const call::Call& call, std::size_t i, int status, bool stream,
                             bool complete, llm::TokenScanner& scan, Clock::time_point first_byte) {
  const auto now = clock_.now();
  llm::TokenRecord r;
  r.model = model_.name();
  r.worker = model_.workers()[i].config.name;
  r.endpoint = record.endpoint;
  r.messages_hash = record.messages_hash;
  r.stream = stream;
  r.status = status;
  r.time_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                  clock_.wall_time(call.started).time_since_epoch())
                  .count();
  const bool sent = call.sent != Clock::time_point{};
  r.queue_s = sent ? seconds(call.sent - call.started) : 0;
  r.ttft_s = seconds(first_byte - sent_at_);
  r.total_s = seconds(now - call.started);
  r.complete = complete;
  r.tokens = scan.finish();
  record.store->add(record.trajectory, std::move(r), now);
}

}  // namespace toolbridge::frontend
