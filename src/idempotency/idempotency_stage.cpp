#include "idempotency/idempotency_stage.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "cache/canonical.h"
#include "call/shared_result.h"
#include "idempotency/key_meta.h"
#include "json/envelope.h"
#include "upstream/upstream.h"

namespace toolbridge::idempotency {

namespace asio = boost::asio;
using call::Call;
using call::Fault;
using call::Result;

namespace {

constexpr std::string_view kCallsMetric = "toolbridge_idempotent_calls_total";
// A waiter outlives its own deadline by this much, so that the first call's own timeout (at
// the same deadline when it is the waiter's own call) is what it reports.
constexpr auto kWaitGrace = std::chrono::seconds(1);
constexpr std::size_t kArgumentsShown = 200;

// The first call's result under this caller's id.
Result for_caller(const Result& first, const Call& call) {
  Result r = call::under_own_id(first, call);
  r.result_at = {};
  return r;
}

std::string shown(std::string_view arguments) {
  if (arguments.size() <= kArgumentsShown) return std::string(arguments);
  return std::string(arguments.substr(0, kArgumentsShown)) + "...";
}

std::string mismatch_message(const Call& call, const Ledger::Entry& first,
                             std::string_view arguments) {
  const std::string what =
      first.tool != call.route.label
          ? fmt::format("tool '{}' (this call: '{}')", first.tool, call.route.label)
          : fmt::format("other arguments {} (this call: {})", shown(first.arguments),
                        shown(arguments));
  return fmt::format(
      "_meta[\"{}\"] '{}' was first used in this trajectory with {}: a retry must repeat the "
      "same tool and arguments, and a different call needs a new key",
      kKeyMeta, key_of(call), what);
}

}  // namespace

IdempotencyStage::IdempotencyStage(asio::io_context& io, const config::Gateway& config,
                                   telemetry::Metrics& metrics, const base::Clock& clock)
    : io_(io),
      metrics_(metrics),
      clock_(clock),
      ledger_(Ledger::Limits{
          std::chrono::duration_cast<base::Clock::duration>(config.idempotency_ttl),
          config.idempotency_max_bytes, Ledger::Limits{}.max_keys}) {
  metrics_.describe(std::string(kCallsMetric), "counter",
                    "Tool calls with an idempotency key, by result (executed: the first call "
                    "ran; replayed: answered with a finished first call's result; joined: "
                    "waited for the first call still running; conflict: same key, other "
                    "arguments; full: refused, every kept key still running).");
}

void IdempotencyStage::count(std::string_view result) {
  metrics_.add(std::string(kCallsMetric), telemetry::labels({{"result", result}}));
}

asio::awaitable<Result> IdempotencyStage::handle(Call& call, call::Next next) {
  const std::string_view raw = call.member("arguments");
  const std::string arguments =
      cache::canonical_json(raw.empty() ? std::string_view("{}") : raw).value_or(std::string(raw));
  std::string scope = call.trajectory + '\n' + std::string(key_of(call));
  Ledger::Found found = ledger_.claim(scope, call.route.label, arguments, clock_.now());
  switch (found.claim) {
    case Ledger::Claim::kMismatch:
      count("conflict");
      co_return Result::failure(Fault::kInvalidParams,
                                mismatch_message(call, *found.entry, arguments));
    case Ledger::Claim::kFull:
      count("full");
      co_return Result::failure(
          Fault::kOverloaded,
          fmt::format("{} keyed calls are running, the most the gateway keeps; retry in a few "
                      "seconds",
                      ledger_.keys()));
    case Ledger::Claim::kDone:
      count("replayed");
      co_return for_caller(*found.entry->result, call);
    case Ledger::Claim::kStarted:
      count("executed");
      start(call, next, std::move(scope), found.entry);
      break;
    case Ledger::Claim::kRunning:
      count("joined");
      break;
  }
  Result r = co_await wait(call, found.entry);
  co_return r;
}

void IdempotencyStage::start(const Call& call, call::Next next, std::string scope,
                             std::shared_ptr<Ledger::Entry> entry) {
  // The stage's own copy: a cancel of the caller's call (a disconnect) does not reach it.
  auto own = std::make_shared<Call>(call);
  own->set_in_flight({});
  asio::co_spawn(io_, run(own, next),
                 [this, scope = std::move(scope), entry = std::move(entry), own](
                     std::exception_ptr failure, Result result) {
                   if (failure) {
                     spdlog::error("tools/call {} (idempotency key '{}'): the pipeline failed",
                                   own->id, key_of(*own));
                     result = Result::failure(Fault::kUnavailable,
                                              "internal error while running the call");
                   }
                   ledger_.finish(scope, entry, std::move(result), clock_.now());
                 });
}

asio::awaitable<Result> IdempotencyStage::run(std::shared_ptr<Call> call, call::Next next) {
  Result r = co_await next(*call);
  co_return r;
}

asio::awaitable<Result> IdempotencyStage::wait(Call& call, std::shared_ptr<Ledger::Entry> entry) {
  if (!entry->done) {
    auto timer = std::make_shared<base::Timer>(io_, clock_, call.deadline + kWaitGrace);
    auto waiting = std::make_shared<call::TimerWait>(timer);
    call.set_in_flight(waiting);
    entry->waiting.push_back(timer);
    boost::system::error_code ec;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (waiting->abandoned) co_return Result::failure(Fault::kCancelled, waiting->why);
  }
  if (entry->done) co_return for_caller(*entry->result, call);
  co_return Result::failure(
      Fault::kTimeout,
      fmt::format("{} timed out after {:g} s waiting for the call with idempotency key '{}' "
                  "already running",
                  call.route.display_name, static_cast<double>(call.timeout.count()) / 1000.0,
                  key_of(call)));
}

}  // namespace toolbridge::idempotency
