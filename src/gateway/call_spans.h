#pragma once
// A finished call as OpenTelemetry spans (docs/tracing.md): the call's own span, named as the
// MCP and GenAI semantic conventions say ("tools/call TOOL", "chat MODEL"), with a child for the
// time it waited in the gateway (admission queue, instance start) and one for its execution on
// the server or worker. The spans are written straight into the exporter's encoding (no span
// objects on the call path). The trace is the caller's (W3C traceparent) or the trajectory's.
#include <cstdint>
#include <optional>

#include "call/call.h"
#include "otel/span_writer.h"
#include "telemetry/call_log.h"

namespace toolbridge::gateway {

// Where the call's spans go: its trace, the parent of its span (zero: a root), and whether the
// trace is exported at all.
struct SpanContext {
  otel::TraceId trace_id{};
  otel::SpanId parent_id{};
  bool sampled = true;
};
// From the call's traceparent (its sampled flag decides), else the trajectory's trace id (a
// request-scoped key is no trajectory: a random id); `ratio` samples the traces the gateway
// starts.
SpanContext span_context(const call::Call& call, double ratio);

// A call that waited less than this in the gateway has no toolbridge.queue span (the gap between
// its span's start and its execution span's still shows the wait).
inline constexpr double kMinQueueSpanSeconds = 0.001;

// Times are nanoseconds since the Unix epoch. Writes the spans with `out`, the call's own first.
void call_spans(const call::Call& call, const call::Result& result,
                const telemetry::CallRecord& record, const SpanContext& context,
                std::uint64_t start_ns, std::uint64_t end_ns, otel::SpanWriter& out);

}  // namespace toolbridge::gateway
