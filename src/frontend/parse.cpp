#include "frontend/parse.h"

#include <fmt/format.h>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "frontend/batch_codec.h"
#include "frontend/client_identity.h"
#include "frontend/router.h"
#include "policy/admission_stage.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using call::Call;
using transport::Exchange;

namespace {

constexpr std::string_view kStreamPrefix = "/v1/parse/streams/";
// Named, not a temporary inside a co_await expression (GCC 12 miscompiles those).
const transport::Headers kNoHeaders;

double ms_since(const base::Clock& clock, Call::Clock::time_point from) {
  return std::chrono::duration<double, std::milli>(clock.now() - from).count();
}

}  // namespace

Parse::Parse(gateway::Gateway& gateway) : gateway_(gateway), sweep_(gateway.io(), gateway.clock()) {
  auto& m = gateway_.metrics();
  m.describe("toolbridge_parse_requests_total", "counter",
             "POST /v1/parse requests and stream appends by result: answered, refused (4xx/5xx).");
  parsed_ = &m.counter_cell("toolbridge_parse_requests_total",
                            telemetry::labels({{"result", "answered"}}));
  refused_ = &m.counter_cell("toolbridge_parse_requests_total",
                             telemetry::labels({{"result", "refused"}}));
  m.describe("toolbridge_parse_calls_total", "counter",
             "Tool calls found in model output by /v1/parse: parsed, or unparsed (malformed or "
             "cut off; reported with the reason).");
  calls_ =
      &m.counter_cell("toolbridge_parse_calls_total", telemetry::labels({{"outcome", "parsed"}}));
  unparsed_ =
      &m.counter_cell("toolbridge_parse_calls_total", telemetry::labels({{"outcome", "unparsed"}}));
  m.describe("toolbridge_parse_streams_expired_total", "counter",
             "Parse streams dropped by the sweep after gateway.parse_stream_idle without a "
             "request (their calls cancelled).");
  expired_ = &m.counter_cell("toolbridge_parse_streams_expired_total", "");
  m.gauge("toolbridge_parse_streams", "Parse streams open.",
          [this](auto& out) { out.emplace_back("", static_cast<double>(streams_.size())); });
  m.gauge("toolbridge_parse_index_builds",
          "Times the parse tool index was built: once per "
          "catalog version that a parse request met, never per request.",
          [this](auto& out) { out.emplace_back("", static_cast<double>(index_.builds())); });
}

asio::awaitable<void> Parse::refuse(Exchange& ex, const BatchRefusal& refusal) {
  ++*refused_;
  const std::string body = bj::serialize(
      bj::object{{"error", bj::object{{"code", refusal.code}, {"message", refusal.message}}}});
  const auto status = static_cast<http::status>(refusal.status);
  transport::Headers headers;
  if (refusal.status == 429 || refusal.status == 503) headers.emplace_back("Retry-After", "1");
  co_await ex.reply(status, "application/json", body, headers);
}

std::unique_ptr<Turn> Parse::begin(Exchange& ex, const bj::value& body, bool stream,
                                   BatchRefusal& refusal) {
  const auto arrived = gateway_.clock().now();
  ParseOptions options;
  if (refusal = read_parse_options(body, options); !refusal.empty()) return nullptr;
  if (!stream && !options.has_text) {
    refusal = {400, "invalid_request", "text is missing: {\"text\": MODEL_OUTPUT, ...}"};
    return nullptr;
  }
  return begin(std::move(options), ex, stream, arrived, refusal);
}

std::unique_ptr<Turn> Parse::begin(ParseOptions options, Exchange& ex, bool stream,
                                   Call::Clock::time_point arrived, BatchRefusal& refusal) {
  if (stream && options.sequential) {
    refusal = {400, "invalid_request",
               "sequential is not available on a stream: its calls start as they complete"};
    return nullptr;
  }
  CallScope scope;
  scope.arrived = arrived;
  if (options.execute) {
    refusal = call_scope(ex, gateway_, options.trajectory, options.tenant, "parse", next_ephemeral_,
                         scope, options.surface);
  } else {
    // Only resolved: the surface (and the API key's right to it) still decides the names.
    refusal = surface_scope(ex, gateway_, options.surface, scope);
  }
  if (!refusal.empty()) return nullptr;
  // With span export on, the request is a span and the parent of its calls' spans.
  // A stream's span lasts from its opening to its end (done, dropped or expired).
  std::optional<gateway::RequestSpan> span;
  const std::string_view path = stream ? "/v1/parse/streams" : "/v1/parse";
  if (options.execute) {
    span = gateway::RequestSpan::begin(gateway_.otel(), gateway_.clock(),
                                       fmt::format("POST {}", path), scope.traceparent,
                                       scope.ephemeral ? std::string() : scope.key);
  }
  if (span) {
    span->span().add("http.request.method", "POST");
    span->span().add("url.path", path);
    scope.traceparent = span->child_traceparent();
  }
  auto turn = std::make_unique<Turn>(std::move(options), std::move(scope));
  // Repair within a surface follows each server's repair setting, as in the catalog.
  turn->set_repair_modes([&config = gateway_.config()](const surfaces::Tool& t) {
    for (const config::Server& server : config.servers) {
      if (server.name == t.server) return server.repair_for(t.original).repair;
    }
    return config::RepairMode::kOff;
  });
  turn->request_span() = std::move(span);
  return turn;
}

BatchRefusal Parse::run_turn(Turn& turn) {
  turn.extractor().feed(turn.options().text);
  turn.extractor().finish();
  const auto& config = gateway_.config();
  turn.settle(index_.get(gateway_.catalog(), config), next_call_id_, false);
  if (!turn.options().execute) return {};
  if (turn.calls() > config.gateway.batch_max_calls) {
    if (turn.scope().ephemeral) gateway_.release_session(turn.scope().key);
    return {413, "too_many_calls",
            fmt::format("the output has {} calls; a turn runs at most {} "
                        "(gateway.batch_max_calls)",
                        turn.calls(), config.gateway.batch_max_calls)};
  }
  const auto& o = turn.options();
  turn.run() = std::make_shared<CallRun>(gateway_.io(), gateway_.pipeline(), o.fail_fast,
                                         o.sequential, config.gateway.batch_max_result_bytes);
  turn.start_all();
  return {};
}

asio::awaitable<void> Parse::post(Exchange& ex) {
  BatchRefusal refusal;
  bj::value body;
  if (encoding_of(header(ex.request(), "Content-Type")) != Encoding::kJson) {
    refusal = {415, "unsupported_media_type", "POST /v1/parse takes Content-Type application/json"};
  } else {
    if (base::Expected<bj::value> decoded = decode_body(Encoding::kJson, ex.request().body()))
      body = std::move(*decoded);
    else
      refusal = {400, "invalid_body", decoded.error()};
  }
  if (refusal.empty() && body.is_object() && body.as_object().contains("turns")) {
    co_await post_turns(ex, body);
    co_return;
  }
  std::unique_ptr<Turn> turn = refusal.empty() ? begin(ex, body, false, refusal) : nullptr;
  if (!turn) {
    co_await refuse(ex, refusal);
    co_return;
  }
  if (!gateway_.settled()) co_await gateway_.until_settled();
  if (refusal = run_turn(*turn); !refusal.empty()) {
    co_await refuse(ex, refusal);
    co_return;
  }
  if (turn->run()) {
    ex.on_peer_closed([weak = std::weak_ptr<CallRun>(turn->run())] {
      if (auto r = weak.lock()) r->abandon("the client disconnected");
    });
  }
  co_await finish(ex, *turn);
}

asio::awaitable<void> Parse::finish(Exchange& ex, Turn& turn) {
  *calls_ += turn.calls();
  *unparsed_ += turn.unparsed();
  if (const auto run = turn.run()) {
    co_await run->wait();
    if (turn.scope().ephemeral) gateway_.release_session(turn.scope().key);
    if (auto& span = turn.request_span()) {
      span->end(turn.calls(), run->all_shed());
      span.reset();
    }
    if (run->all_shed()) {
      const BatchRefusal r{429, "overloaded", run->results.front()->why};
      co_await refuse(ex, r);
      co_return;
    }
  }
  ++*parsed_;
  std::string body = turn.final_json(ms_since(gateway_.clock(), turn.scope().arrived));
  co_await ex.reply(http::status::ok, "application/json", std::move(body), kNoHeaders);
}

void Parse::drop(const std::string& id, const std::string& why) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Turn& turn = *it->second->turn;
  if (turn.run()) turn.run()->abandon(why);
  if (turn.scope().ephemeral) gateway_.release_session(turn.scope().key);
  if (auto& span = turn.request_span()) {
    span->span().add("toolbridge.parse.chunks", static_cast<std::int64_t>(it->second->chunks));
    span->end(turn.calls(), true, why);
    span.reset();
  }
  streams_.erase(it);
}

void Parse::expire_streams() {
  const auto now = gateway_.clock().now();
  const auto idle = gateway_.config().gateway.parse_stream_idle;
  std::vector<std::string> expired;
  for (const auto& [id, s] : streams_) {
    if (!s->finishing && now - s->last_used > idle) expired.push_back(id);
  }
  const std::string why =
      fmt::format("the parse stream expired (idle for longer than {} ms)", idle.count());
  for (const auto& id : expired) drop(id, why);
  *expired_ += expired.size();
}

void Parse::arm_sweep() {
  if (sweep_armed_ || stopped_ || streams_.empty()) return;
  // Often enough that a stream outlives its idle time by at most a quarter of it (and 5 s).
  using std::chrono::milliseconds;
  const milliseconds idle = gateway_.config().gateway.parse_stream_idle;
  sweep_armed_ = true;
  sweep_.expires_after(std::clamp<milliseconds>(idle / 4, milliseconds(25), milliseconds(5'000)));
  sweep_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // cancelled: stop(), or the timer went with this object
    sweep_armed_ = false;
    if (stopped_) return;
    expire_streams();
    arm_sweep();
  });
}

void Parse::stop() {
  stopped_ = true;
  sweep_.cancel();
  std::vector<std::string> ids;
  for (const auto& [id, s] : streams_) {
    if (!s->finishing) ids.push_back(id);
  }
  for (const auto& id : ids) drop(id, "the gateway is shutting down");
}

asio::awaitable<void> Parse::open(Exchange& ex) {
  const auto& limits = gateway_.config().gateway;
  // At the cap, streams already past their idle time (the sweep not yet come) make room.
  if (streams_.size() >= limits.parse_max_streams) expire_streams();
  if (streams_.size() >= limits.parse_max_streams) {
    const BatchRefusal r{503, "too_many_streams",
                         fmt::format("{} parse streams are open (the most there may be); "
                                     "finish or DELETE one, or retry in a second "
                                     "(gateway.parse_max_streams)",
                                     streams_.size())};
    co_await refuse(ex, r);
    co_return;
  }
  BatchRefusal refusal;
  std::unique_ptr<Turn> turn;
  if (encoding_of(header(ex.request(), "Content-Type")) != Encoding::kJson) {
    refusal = {415, "unsupported_media_type",
               "POST /v1/parse/streams takes Content-Type application/json"};
  } else {
    const base::Expected<bj::value> body = decode_body(Encoding::kJson, ex.request().body());
    if (!body) refusal = {400, "invalid_body", body.error()};
    if (body && body->is_object() && body->as_object().contains("turns")) {
      refusal = {400, "invalid_request", "a stream is one turn: turns go to POST /v1/parse"};
    }
    if (refusal.empty()) turn = begin(ex, *body, true, refusal);
  }
  std::string owner;
  if (turn) {
    if (base::Expected<std::string> from = owner_of(ex))
      owner = std::move(*from);
    else
      refusal.message = from.error();
  }
  if (!turn || !refusal.empty()) {
    if (refusal.code.empty()) refusal = {400, "invalid_request", refusal.message};
    co_await refuse(ex, refusal);
    co_return;
  }
  const auto& o = turn->options();
  if (o.text.size() > limits.parse_stream_max_bytes) {
    if (turn->scope().ephemeral) gateway_.release_session(turn->scope().key);
    const BatchRefusal r{413, "too_large",
                         fmt::format("a parse stream holds at most {} bytes "
                                     "(gateway.parse_stream_max_bytes)",
                                     limits.parse_stream_max_bytes)};
    co_await refuse(ex, r);
    co_return;
  }
  if (!gateway_.settled()) co_await gateway_.until_settled();
  if (o.execute) {
    turn->run() = std::make_shared<CallRun>(gateway_.io(), gateway_.pipeline(), o.fail_fast, false,
                                            limits.batch_max_result_bytes);
  }
  turn->extractor().feed(o.text);
  turn->settle(index_.get(gateway_.catalog(), gateway_.config()), next_call_id_, o.execute);
  const std::string id = fmt::format("ps-{}", ++next_stream_);
  auto s = std::make_shared<Stream>();
  s->owner = std::move(owner);
  s->last_used = gateway_.clock().now();
  std::string progress = turn->progress_json(0, 0);
  if (auto& span = turn->request_span()) span->span().add("toolbridge.parse.stream", id);
  s->turn = std::move(turn);
  streams_.emplace(id, std::move(s));
  arm_sweep();
  ++*parsed_;
  std::string body = R"({"stream":)" + json::quote(id) + "," + progress.substr(1);
  co_await ex.reply(http::status::created, "application/json", std::move(body), kNoHeaders);
}

asio::awaitable<void> Parse::stream(Exchange& ex, std::string_view path) {
  const std::string id(path.substr(kStreamPrefix.size()));
  const auto method = ex.request().method();
  if (method != http::verb::post && method != http::verb::delete_) {
    const BatchRefusal r{405, "method_not_allowed", "a parse stream takes POST or DELETE"};
    co_await refuse(ex, r);
    co_return;
  }
  auto it = streams_.find(id);
  const base::Expected<std::string> owner = owner_of(ex);
  if (it == streams_.end() || !owner || it->second->owner != *owner) {
    const BatchRefusal r{404, "no_stream",
                         fmt::format("no parse stream '{}' (finished, dropped, or idle for "
                                     "longer than {} ms)",
                                     id, gateway_.config().gateway.parse_stream_idle.count())};
    co_await refuse(ex, r);
    co_return;
  }
  if (method == http::verb::delete_) {
    drop(id, "the parse stream was dropped by its client");
    ++*parsed_;
    const std::string body = R"({"dropped":)" + json::quote(id) + "}";
    co_await ex.reply(http::status::ok, "application/json", body, kNoHeaders);
    co_return;
  }
  co_await append(ex, id);
}

asio::awaitable<void> Parse::append(Exchange& ex, const std::string& id) {
  const std::shared_ptr<Stream> s = streams_.find(id)->second;
  const base::Expected<bj::value> body = decode_body(Encoding::kJson, ex.request().body());
  std::string text;
  bool done = false;
  BatchRefusal refusal{400, "invalid_body", body.error()};
  if (body) refusal = read_append(*body, text, done);
  if (refusal.empty() && s->finishing) {
    refusal = {409, "finishing", "the stream is already done; its answer is on its way"};
  }
  const std::size_t max_bytes = gateway_.config().gateway.parse_stream_max_bytes;
  if (refusal.empty() && s->turn->extractor().bytes() + text.size() > max_bytes) {
    refusal = {413, "too_large",
               fmt::format("the stream's text would pass {} bytes, the most a parse stream holds "
                           "(gateway.parse_stream_max_bytes)",
                           max_bytes)};
  }
  if (!refusal.empty()) {
    co_await refuse(ex, refusal);
    co_return;
  }
  Turn& turn = *s->turn;
  s->last_used = gateway_.clock().now();
  ++s->chunks;
  std::optional<otel::Span> chunk;
  if (const auto& span = turn.request_span()) {
    chunk = span->child("toolbridge.parse.chunk", otel::SpanKind::kInternal);
  }
  const std::size_t calls_before = turn.calls(), unparsed_before = turn.unparsed();
  turn.extractor().feed(text);
  if (done) turn.extractor().finish();
  const bool execute = turn.options().execute;
  turn.settle(index_.get(gateway_.catalog(), gateway_.config()), next_call_id_, execute);
  if (chunk) {
    chunk->add("toolbridge.parse.chunk", static_cast<std::int64_t>(s->chunks));
    chunk->add("toolbridge.parse.chunk_bytes", static_cast<std::int64_t>(text.size()));
    chunk->add("toolbridge.calls", static_cast<std::int64_t>(turn.calls() - calls_before));
    if (done) chunk->add("toolbridge.parse.done", true);
    turn.request_span()->end_child(std::move(*chunk));
    if (done) {
      turn.request_span()->span().add("toolbridge.parse.chunks",
                                      static_cast<std::int64_t>(s->chunks));
    }
  }
  if (!done) {
    ++*parsed_;
    std::string progress = turn.progress_json(calls_before, unparsed_before);
    co_await ex.reply(http::status::ok, "application/json", std::move(progress), kNoHeaders);
    co_return;
  }
  s->finishing = true;
  if (turn.run()) {
    ex.on_peer_closed([weak = std::weak_ptr<CallRun>(turn.run())] {
      if (auto r = weak.lock()) r->abandon("the client disconnected");
    });
  }
  co_await finish(ex, turn);
  streams_.erase(id);
}

}  // namespace toolbridge::frontend
