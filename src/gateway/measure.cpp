#include "gateway/measure.h"

namespace toolbridge::gateway {

MeasureStage::MeasureStage(telemetry::Metrics& metrics) : metrics_(metrics) {
  metrics_.describe("toolbridge_calls_total", "counter",
                    "Requests forwarded to servers, by server, tool (or method) and outcome "
                    "(ok, tool_error, error, timeout, crashed, unavailable).");
  metrics_.describe("toolbridge_call_duration_seconds", "histogram",
                    "Gateway-observed latency of forwarded requests.");
}

MeasureStage::Series& MeasureStage::series(const Call& call) {
  auto [it, fresh] = series_.try_emplace(call.route.display_name);
  if (fresh) {
    it->second.duration = &metrics_.histogram_cell(
        "toolbridge_call_duration_seconds",
        telemetry::labels({{"server", call.route.server}, {"tool", call.route.label}}));
  }
  return it->second;
}

boost::asio::awaitable<Result> MeasureStage::handle(Call& call, Next next) {
  Result result = co_await next(call);
  // A cancelled call has no outcome to count: nobody receives an answer.
  if (result.fault == Fault::kCancelled) co_return result;
  Series& s = series(call);
  std::uint64_t*& calls = s.calls[static_cast<std::size_t>(result.fault)];
  if (!calls) {
    calls = &metrics_.counter_cell("toolbridge_calls_total",
                                   telemetry::labels({{"server", call.route.server},
                                                      {"tool", call.route.label},
                                                      {"outcome", outcome_label(result.fault)}}));
  }
  ++*calls;
  s.duration->observe(std::chrono::duration<double>(Call::Clock::now() - call.started).count());
  co_return result;
}

}  // namespace toolbridge::gateway
