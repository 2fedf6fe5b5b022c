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
using gateway::Call;
using transport::Exchange;

namespace {

constexpr std::string_view kStreamPrefix = "/v1/parse/streams/";
// Named, not a temporary inside a co_await expression (GCC 12 miscompiles those).
const transport::Headers kNoHeaders;

double ms_since(Call::Clock::time_point from) {
  return std::chrono::duration<double, std::milli>(Call::Clock::now() - from).count();
}

}  // namespace

Parse::Parse(gateway::Gateway& gateway, ParseStreamLimits limits)
    : gateway_(gateway), limits_(limits) {
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

std::unique_ptr<Turn> Parse::begin(Exchange& ex, bool stream, BatchRefusal& refusal) {
  const auto arrived = Call::Clock::now();
  if (encoding_of(header(ex.request(), "Content-Type")) != Encoding::kJson) {
    refusal = {415, "unsupported_media_type", "POST /v1/parse takes Content-Type application/json"};
    return nullptr;
  }
  std::string problem;
  const bj::value body = decode_body(Encoding::kJson, ex.request().body(), problem);
  if (!problem.empty()) {
    refusal = {400, "invalid_body", std::move(problem)};
    return nullptr;
  }
  ParseOptions options;
  if (refusal = read_parse_options(body, options); !refusal.empty()) return nullptr;
  if (!stream && !options.has_text) {
    refusal = {400, "invalid_request", "text is missing: {\"text\": MODEL_OUTPUT, ...}"};
    return nullptr;
  }
  if (stream && options.sequential) {
    refusal = {400, "invalid_request",
               "sequential is not available on a stream: its calls start as they complete"};
    return nullptr;
  }
  CallScope scope;
  scope.arrived = arrived;
  if (options.execute) {
    refusal = call_scope(ex, gateway_, options.trajectory, options.tenant, "parse", next_ephemeral_,
                         scope);
    if (!refusal.empty()) return nullptr;
  }
  return std::make_unique<Turn>(std::move(options), std::move(scope));
}

asio::awaitable<void> Parse::post(Exchange& ex) {
  BatchRefusal refusal;
  std::unique_ptr<Turn> turn = begin(ex, false, refusal);
  if (!turn) {
    co_await refuse(ex, refusal);
    co_return;
  }
  if (!gateway_.settled()) co_await gateway_.until_settled();
  turn->extractor().feed(turn->options().text);
  turn->extractor().finish();
  const auto& config = gateway_.config();
  turn->settle(index_.get(gateway_.catalog(), config), next_call_id_, false);
  if (turn->options().execute) {
    if (turn->calls() > config.gateway.batch_max_calls) {
      if (turn->scope().ephemeral) gateway_.release_session(turn->scope().key);
      const BatchRefusal r{413, "too_many_calls",
                           fmt::format("the output has {} calls; a turn runs at most {} "
                                       "(gateway.batch_max_calls)",
                                       turn->calls(), config.gateway.batch_max_calls)};
      co_await refuse(ex, r);
      co_return;
    }
    const auto& o = turn->options();
    turn->run() = std::make_shared<CallRun>(gateway_.io(), gateway_.pipeline(), o.fail_fast,
                                            o.sequential, config.gateway.batch_max_result_bytes);
    ex.on_peer_closed([weak = std::weak_ptr<CallRun>(turn->run())] {
      if (auto r = weak.lock()) r->abandon("the client disconnected");
    });
    turn->start_all();
  }
  co_await finish(ex, *turn);
}

asio::awaitable<void> Parse::finish(Exchange& ex, Turn& turn) {
  *calls_ += turn.calls();
  *unparsed_ += turn.unparsed();
  if (const auto run = turn.run()) {
    co_await run->wait();
    if (turn.scope().ephemeral) gateway_.release_session(turn.scope().key);
    if (run->all_shed()) {
      const BatchRefusal r{429, "overloaded", run->results.front()->why};
      co_await refuse(ex, r);
      co_return;
    }
  }
  ++*parsed_;
  std::string body = turn.final_json(ms_since(turn.scope().arrived));
  co_await ex.reply(http::status::ok, "application/json", std::move(body), kNoHeaders);
}

void Parse::drop(const std::string& id, const std::string& why) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Turn& turn = *it->second->turn;
  if (turn.run()) turn.run()->abandon(why);
  if (turn.scope().ephemeral) gateway_.release_session(turn.scope().key);
  streams_.erase(it);
}

void Parse::expire_streams() {
  const auto now = std::chrono::steady_clock::now();
  const auto ttl = limits_.idle_ttl;
  std::vector<std::string> expired;
  for (const auto& [id, s] : streams_) {
    if (!s->finishing && now - s->last_used > ttl) expired.push_back(id);
  }
  for (const auto& id : expired) {
    drop(id,
         fmt::format("the parse stream expired (idle for {} s)", limits_.idle_ttl.count() / 1000));
  }
}

asio::awaitable<void> Parse::open(Exchange& ex) {
  expire_streams();
  const auto& limits = gateway_.config().gateway;
  if (streams_.size() >= limits_.max_streams) {
    const BatchRefusal r{503, "too_many_streams",
                         fmt::format("{} parse streams are open (the most there may be); "
                                     "finish or DELETE one, or retry in a second",
                                     streams_.size())};
    co_await refuse(ex, r);
    co_return;
  }
  BatchRefusal refusal;
  std::unique_ptr<Turn> turn = begin(ex, true, refusal);
  std::string owner;
  if (turn) owner = owner_of(ex, refusal.message);
  if (!turn || !refusal.empty()) {
    if (refusal.code.empty()) refusal = {400, "invalid_request", refusal.message};
    co_await refuse(ex, refusal);
    co_return;
  }
  const auto& o = turn->options();
  if (o.text.size() > limits_.max_stream_bytes) {
    if (turn->scope().ephemeral) gateway_.release_session(turn->scope().key);
    const BatchRefusal r{
        413, "too_large",
        fmt::format("a parse stream holds at most {} bytes", limits_.max_stream_bytes)};
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
  s->last_used = std::chrono::steady_clock::now();
  std::string progress = turn->progress_json(0, 0);
  s->turn = std::move(turn);
  streams_.emplace(id, std::move(s));
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
  expire_streams();
  auto it = streams_.find(id);
  std::string problem;
  const std::string owner = owner_of(ex, problem);
  if (it == streams_.end() || it->second->owner != owner) {
    const BatchRefusal r{404, "no_stream",
                         fmt::format("no parse stream '{}' (finished, dropped, or idle for "
                                     "longer than {} s)",
                                     id, limits_.idle_ttl.count() / 1000)};
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
  std::string problem;
  const bj::value body = decode_body(Encoding::kJson, ex.request().body(), problem);
  std::string text;
  bool done = false;
  BatchRefusal refusal{400, "invalid_body", problem};
  if (problem.empty()) refusal = read_append(body, text, done);
  if (refusal.empty() && s->finishing) {
    refusal = {409, "finishing", "the stream is already done; its answer is on its way"};
  }
  const std::size_t max_bytes = limits_.max_stream_bytes;
  if (refusal.empty() && s->turn->extractor().bytes() + text.size() > max_bytes) {
    refusal = {413, "too_large",
               fmt::format("the stream's text would pass {} bytes, the most a parse stream holds",
                           max_bytes)};
  }
  if (!refusal.empty()) {
    co_await refuse(ex, refusal);
    co_return;
  }
  Turn& turn = *s->turn;
  s->last_used = std::chrono::steady_clock::now();
  const std::size_t calls_before = turn.calls(), unparsed_before = turn.unparsed();
  turn.extractor().feed(text);
  if (done) turn.extractor().finish();
  const bool execute = turn.options().execute;
  turn.settle(index_.get(gateway_.catalog(), gateway_.config()), next_call_id_, execute);
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
