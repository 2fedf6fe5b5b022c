// POST /v1/parse with {"turns": [...]}: every turn of a rollout step in one round trip. The
// turns are parsed in order, their calls (with execute) all started before any is awaited, and
// the answers written in the turns' order; a turn that cannot run gets an error in its place.
#include <fmt/format.h>

#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include "frontend/parse.h"

namespace toolbridge::frontend {

namespace asio = boost::asio;
namespace bj = boost::json;
namespace http = boost::beast::http;
using call::Call;
using transport::Exchange;

namespace {

// Named, not a temporary inside a co_await expression (GCC 12 miscompiles those).
const transport::Headers kNoHeaders;

std::string error_json(const BatchRefusal& r) {
  return bj::serialize(bj::object{
      {"error", bj::object{{"status", r.status}, {"code", r.code}, {"message", r.message}}}});
}

}  // namespace

asio::awaitable<void> Parse::post_turns(Exchange& ex, const bj::value& body) {
  const auto arrived = gateway_.clock().now();
  std::vector<ParseOptions> options;
  const BatchRefusal refusal =
      read_parse_turns(body, options, gateway_.config().gateway.parse_max_turns);
  if (!refusal.empty()) {
    co_await refuse(ex, refusal);
    co_return;
  }
  if (!gateway_.settled()) co_await gateway_.until_settled();
  const std::size_t n = options.size();
  std::vector<std::unique_ptr<Turn>> turns(n);
  std::vector<BatchRefusal> refusals(n);
  std::vector<std::weak_ptr<CallRun>> runs;
  for (std::size_t i = 0; i < n; ++i) {
    turns[i] = begin(std::move(options[i]), ex, false, arrived, refusals[i]);
    if (turns[i]) refusals[i] = run_turn(*turns[i]);
    if (turns[i] && turns[i]->run()) runs.push_back(turns[i]->run());
  }
  if (!runs.empty()) {
    ex.on_peer_closed([runs] {
      for (const auto& weak : runs) {
        if (auto r = weak.lock()) r->abandon("the client disconnected");
      }
    });
  }
  std::string out = R"({"turns":[)";
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ',';
    Turn* turn = refusals[i].empty() ? turns[i].get() : nullptr;
    if (turn) {
      *calls_ += turn->calls();
      *unparsed_ += turn->unparsed();
    }
    if (const auto run = turn ? turn->run() : nullptr) {
      co_await run->wait();
      if (turn->scope().ephemeral) gateway_.release_session(turn->scope().key);
      if (run->all_shed()) refusals[i] = {429, "overloaded", run->results.front()->why};
    }
    if (!refusals[i].empty()) {
      out += error_json(refusals[i]);
      continue;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(gateway_.clock().now() - arrived).count();
    out += turn->final_json(ms);
  }
  out += fmt::format(
      R"(],"timing":{{"total_ms":{:.3f}}}}})",
      std::chrono::duration<double, std::milli>(gateway_.clock().now() - arrived).count());
  ++*parsed_;
  co_await ex.reply(http::status::ok, "application/json", std::move(out), kNoHeaders);
}

}  // namespace toolbridge::frontend
