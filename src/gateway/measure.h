#pragma once
// The measure stage: every routed call is counted once, by server, tool (or method) and outcome,
// with its latency as the gateway saw it split into queueing and execution — whatever front end
// it came from. It also lists the call among the active ones while it runs (the trajectory view,
// the dashboard) and writes its trace line when the call trace is on.
#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "call/stage.h"
#include "telemetry/call_log.h"
#include "telemetry/call_trace.h"
#include "telemetry/metrics.h"

namespace toolbridge::otel {
class Exporter;
}

namespace toolbridge::gateway {

class MeasureStage final : public call::Stage {
 public:
  // `trace` and `otel` may be null (no call trace, no span export configured).
  MeasureStage(telemetry::Metrics& metrics, telemetry::CallLog& log, telemetry::CallTrace* trace,
               const base::Clock& clock, otel::Exporter* otel = nullptr);
  std::string_view name() const override { return "measure"; }
  boost::asio::awaitable<call::Result> handle(call::Call& call, call::Next next) override;

 private:
  // The series of one (server, tool) pair, looked up once: a call bumps cells, it builds no
  // label strings.
  struct Series {
    telemetry::Histogram* duration = nullptr;
    telemetry::Histogram* queue = nullptr;
    telemetry::Histogram* execution = nullptr;
    std::array<std::uint64_t*, call::kFaultCount> calls{};        // by fault, created on first use
    std::array<std::uint64_t*, call::kFaultClassCount> faults{};  // by class (not ok), on first use
  };
  Series& series(const call::Call& call);
  // toolbridge_call_faults_total{server, tool, fault} for a call that failed.
  void count_fault(Series& s, const call::Call& call, call::FaultClass c);
  // Fills `r` (a reused record: every field is set) with what the call did.
  void fill(telemetry::CallRecord& r, const call::Call& call, const call::Result& result,
            std::uint64_t seq, call::Call::Clock::time_point now);
  // The wall-clock time of `t`, from the monotonic clock and an offset read again every second
  // (one wall clock read a second instead of one a call).
  base::Clock::wall_time_point wall_time(call::Call::Clock::time_point t,
                                         call::Call::Clock::time_point now);
  // The call's spans to the exporter (if its trace is sampled).
  void export_spans(const call::Call& call, const call::Result& result,
                    const telemetry::CallRecord& r, call::Call::Clock::time_point now);

  telemetry::Metrics& metrics_;
  telemetry::CallLog& log_;
  telemetry::CallTrace* trace_;
  otel::Exporter* otel_;
  const base::Clock& clock_;
  std::unordered_map<std::string, Series> series_;  // by display name (unique per pair)
  base::Clock::wall_time_point::duration wall_offset_{};
  std::string span_bytes_;  // a call's spans as written for the exporter, reused call after call
  call::Call::Clock::time_point offset_read_{};
};

}  // namespace toolbridge::gateway
