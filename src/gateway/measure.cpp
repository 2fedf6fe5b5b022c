#include "gateway/measure.h"

namespace toolbridge::gateway {

MeasureStage::MeasureStage(telemetry::Metrics& metrics) : metrics_(metrics) {
  metrics_.describe("toolbridge_calls_total", "counter",
                    "Requests forwarded to servers, by server, tool (or method) and outcome "
                    "(ok, tool_error, error, timeout, crashed, unavailable).");
  metrics_.describe("toolbridge_call_duration_seconds", "histogram",
                    "Gateway-observed latency of forwarded requests.");
}

boost::asio::awaitable<Result> MeasureStage::handle(Call& call, Next next) {
  Result result = co_await next(call);
  // A cancelled call has no outcome to count: nobody receives an answer.
  if (result.fault == Fault::kCancelled) co_return result;
  const double secs = std::chrono::duration<double>(Call::Clock::now() - call.started).count();
  metrics_.add("toolbridge_calls_total",
               telemetry::labels({{"server", call.route.server},
                                  {"tool", call.route.label},
                                  {"outcome", outcome_label(result.fault)}}));
  metrics_.observe("toolbridge_call_duration_seconds",
                   telemetry::labels({{"server", call.route.server}, {"tool", call.route.label}}),
                   secs);
  co_return result;
}

}  // namespace toolbridge::gateway
