#include "gateway/measure.h"

#include "gateway/call_spans.h"
#include "otel/exporter.h"
#include "surfaces/surface_stage.h"

namespace toolbridge::gateway {

namespace {
// The call log's name for calls that belong to no trajectory (a model request without one):
// never a trajectory name, which starts with a letter, a digit or '_'.
const std::string kNoTrajectory = "-";
double seconds(call::Call::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
const std::string& logged_trajectory(const call::Call& call) {
  return call.trajectory.empty() || call.request_scoped_key ? kNoTrajectory : call.trajectory;
}
}  // namespace

MeasureStage::MeasureStage(telemetry::Metrics& metrics, telemetry::CallLog& log,
                           telemetry::CallTrace* trace, const base::Clock& clock,
                           otel::Exporter* otel)
    : metrics_(metrics), log_(log), trace_(trace), otel_(otel), clock_(clock) {
  metrics_.describe("toolbridge_calls_total", "counter",
                    "Requests forwarded to servers, by server, tool (or method) and outcome "
                    "(ok, tool_error, error, timeout, crashed, unavailable, shed).");
  metrics_.describe("toolbridge_call_faults_total", "counter",
                    "Failed requests by server, tool and fault class (agent, tool, infra; "
                    "docs/faults.md): infra failures are the gateway's or the server process's.");
  metrics_.describe("toolbridge_call_duration_seconds", "histogram",
                    "Gateway-observed latency of forwarded requests.");
  metrics_.describe("toolbridge_call_queue_seconds", "histogram",
                    "Time a request waited in the gateway before an instance got it (admission "
                    "queue, instance start-up); the whole latency if it never reached one.");
  metrics_.describe("toolbridge_call_execution_seconds", "histogram",
                    "Time from handing a request to an instance to its answer.");
}

MeasureStage::Series& MeasureStage::series(const call::Call& call) {
  auto [it, fresh] = series_.try_emplace(call.route.display_name);
  if (fresh) {
    const std::string labels =
        telemetry::labels({{"server", call.route.server}, {"tool", call.route.label}});
    it->second.duration = &metrics_.histogram_cell("toolbridge_call_duration_seconds", labels);
    it->second.queue = &metrics_.histogram_cell("toolbridge_call_queue_seconds", labels);
    it->second.execution = &metrics_.histogram_cell("toolbridge_call_execution_seconds", labels);
  }
  return it->second;
}

base::Clock::wall_time_point MeasureStage::wall_time(call::Call::Clock::time_point t,
                                                     call::Call::Clock::time_point now) {
  using Wall = base::Clock::wall_time_point;
  if (offset_read_ == call::Call::Clock::time_point{} ||
      now - offset_read_ > std::chrono::seconds(1)) {
    wall_offset_ = clock_.wall_now().time_since_epoch() -
                   std::chrono::duration_cast<Wall::duration>(now.time_since_epoch());
    offset_read_ = now;
  }
  return Wall(std::chrono::duration_cast<Wall::duration>(t.time_since_epoch()) + wall_offset_);
}

void MeasureStage::fill(telemetry::CallRecord& r, const call::Call& call,
                        const call::Result& result, std::uint64_t seq,
                        call::Call::Clock::time_point now) {
  r.seq = seq;
  r.total_s = seconds(now - call.started);
  const bool sent = call.sent != call::Call::Clock::time_point{};
  r.queue_s = sent ? seconds(call.sent - call.started) : r.total_s;
  r.execution_s = sent ? seconds(now - call.sent) : 0;
  const auto wall = wall_time(call.started, now);
  r.time_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(wall.time_since_epoch()).count();
  r.trajectory = logged_trajectory(call);
  r.tenant = call.tenant;
  r.server = call.route.server;
  r.tool = call.route.label;
  r.pid = call.instance_pid;
  r.argument_bytes = call.is_tool_call() ? call.member("arguments").size() : call.params.size();
  r.result_bytes = result.answered_by_server() ? result.response.size() : result.why.size();
  r.outcome = call::outcome_label(result.fault);
  r.fault = to_string(call::fault_class(result.fault));
  r.repairs = call.repairs.size();
  r.cached = call.cached;
  r.traceparent = call.traceparent;
  // A run records the surface it saw (a record may be a reused one: always written).
  const surfaces::View* view = surfaces::surface_of(call);
  r.surface = view ? view->name() : std::string();
  r.surface_fingerprint = view ? view->fingerprint() : std::string();
}

void MeasureStage::count_fault(Series& s, const call::Call& call, call::FaultClass c) {
  if (c == call::FaultClass::kOk) return;
  std::uint64_t*& cell = s.faults[static_cast<std::size_t>(c)];
  if (!cell) {
    cell = &metrics_.counter_cell(
        "toolbridge_call_faults_total",
        telemetry::labels(
            {{"server", call.route.server}, {"tool", call.route.label}, {"fault", to_string(c)}}));
  }
  ++*cell;
}

void MeasureStage::export_spans(const call::Call& call, const call::Result& result,
                                const telemetry::CallRecord& r, call::Call::Clock::time_point now) {
  const SpanContext context = span_context(call, otel_->options().sample_ratio);
  if (!context.sampled) return;
  const auto ns = [](base::Clock::wall_time_point t) {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count());
  };
  span_bytes_.clear();
  otel::SpanWriter writer(span_bytes_, otel_->encoding());
  call_spans(call, result, r, context, ns(wall_time(call.started, now)), ns(wall_time(now, now)),
             writer);
  otel_->submit(span_bytes_, writer.ends());
}

boost::asio::awaitable<call::Result> MeasureStage::handle(call::Call& call, call::Next next) {
  const telemetry::CallLog::Handle handle =
      log_.begin(logged_trajectory(call), call.route.server, call.route.label, call.started);
  call::Result result = co_await next(call);
  // The first stage after resolve to see the answer: the call stops holding its server here.
  call.answered();
  const auto now = clock_.now();
  // Filled in place, then ended with no suspension in between (CallLog::slot).
  telemetry::CallRecord& r = log_.slot(handle);
  fill(r, call, result, handle.seq, now);
  // A cancelled call has no outcome to count: nobody receives an answer. It still leaves the
  // trajectory's calls in flight.
  if (result.fault != call::Fault::kCancelled) {
    Series& s = series(call);
    std::uint64_t*& calls = s.calls[static_cast<std::size_t>(result.fault)];
    if (!calls) {
      calls = &metrics_.counter_cell(
          "toolbridge_calls_total",
          telemetry::labels({{"server", call.route.server},
                             {"tool", call.route.label},
                             {"outcome", call::outcome_label(result.fault)}}));
    }
    ++*calls;
    count_fault(s, call, call::fault_class(result.fault));
    s.duration->observe(r.total_s);
    s.queue->observe(r.queue_s);
    if (r.execution_s > 0) s.execution->observe(r.execution_s);
  }
  if (trace_) trace_->write_with([&r](std::string& out) { r.append_json(out); });
  if (otel_ && result.fault != call::Fault::kCancelled) export_spans(call, result, r, now);
  log_.end(handle, now);
  co_return result;
}

}  // namespace toolbridge::gateway
