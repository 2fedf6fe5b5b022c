#include "policy/retry.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/jitter.h"
#include "policy/retry_attempts.h"
#include "upstream/upstream.h"

namespace toolbridge::policy {

namespace asio = boost::asio;
using call::Fault;

namespace {

// 50-150 ms from the one random source.
std::chrono::milliseconds jittered_pause() {
  return base::jittered(std::chrono::milliseconds(100), 0.5, base::process_random());
}

}  // namespace

RetryStage::RetryStage(asio::io_context& io, const base::Clock& clock, const bool& stopping,
                       std::function<std::chrono::milliseconds()> pause)
    : io_(io),
      clock_(clock),
      stopping_(stopping),
      pause_(pause ? std::move(pause) : jittered_pause) {}

bool RetryStage::applies(const call::Call& call) const {
  const auto& cfg = call.route.upstream->config();
  return cfg.max_retries > 0 && cfg.policy != config::Policy::kPerSession;
}

bool RetryStage::retryable(const call::Call& call, const call::Result& result) {
  if (call.task_augmented) return false;  // a second send would make a second task
  if (result.fault == Fault::kNotSent) return true;
  if (result.fault != Fault::kCrashed || call.route.tool.empty()) return false;
  const auto& tools = call.route.upstream->config().idempotent_tools;
  return std::any_of(tools.begin(), tools.end(),
                     [&](const std::string& t) { return t == "*" || t == call.route.tool; });
}

asio::awaitable<call::Result> RetryStage::handle(call::Call& call, call::Next next) {
  const std::size_t max_retries = call.route.upstream->config().max_retries;
  call::Result result = co_await next(call);
  call::Result first_failure;
  while (retryable(call, result) && !stopping_ && !call.cancelled() &&
         static_cast<std::size_t>(call.attempts) < max_retries && clock_.now() < call.deadline) {
    ++call.attempts;
    spdlog::info("[{}] retrying {} (attempt {}): {}", call.route.server, call.route.display_name,
                 call.attempts + 1, result.why);
    if (first_failure.why.empty()) first_failure = result;
    // Kept for the call's attempt spans; only a retried call makes the slot.
    RetryAttempts::Retry& retry = call.slots.get<RetryAttempts>().retries.emplace_back();
    retry.failed_at = clock_.now();
    retry.fault = result.fault;
    retry.backoff = pause_();
    base::Timer pause(io_, clock_, retry.backoff);
    boost::system::error_code ec;
    co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (call.cancelled()) co_return call::Result::failure(Fault::kCancelled, "cancelled");
    // Found again: no reference into the call is kept across a suspension.
    call.slots.get<RetryAttempts>().retries.back().resumed_at = clock_.now();
    const int sends = call.sends;
    result = co_await next(call);
    if (call.sends == sends &&
        (result.fault == Fault::kUnavailable || result.fault == Fault::kTimeout)) {
      // The restart did not come in time: report the failure that started it.
      co_return call::Result::failure(
          Fault::kCrashed, first_failure.why + "; retried " + std::to_string(call.attempts) +
                               " time(s) but no instance was ready before the deadline");
    }
  }
  co_return result;
}

}  // namespace toolbridge::policy
