#pragma once
// Trace and span ids: a caller's W3C traceparent read into ids, the trace id of a trajectory
// (deterministic, so every call of one trajectory lands in one trace, whichever gateway serves
// it), and random ids for the rest.
#include <cstdint>
#include <optional>
#include <string_view>

#include "otel/span.h"

namespace toolbridge::otel {

struct TraceParent {
  TraceId trace_id{};
  SpanId parent_id{};
  std::uint8_t flags = 0;  // bit 0: sampled
};
// A version-00 traceparent; nullopt if malformed or an id is all zero.
std::optional<TraceParent> parse_traceparent(std::string_view value);

// The first 16 bytes of SHA-256 over the trajectory id's bytes (docs/tracing.md).
TraceId trajectory_trace_id(std::string_view trajectory);

// Random, never all zero (a per-thread generator seeded from the OS).
TraceId random_trace_id();
SpanId random_span_id();

// Whether a trace is kept at `ratio` (0..1): the trace id's last 8 bytes read as a big-endian
// number below ratio * 2^64, as OpenTelemetry's TraceIdRatioBased sampler decides, so every
// span of a trace (and every gateway) makes the same choice.
bool sampled_at(const TraceId& id, double ratio);

}  // namespace toolbridge::otel
