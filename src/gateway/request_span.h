#pragma once
// The span of an HTTP request that holds calls (POST /v1/batch, /v1/parse, a parse stream): begun
// when the request's scope is known, it becomes the parent of its calls (their traceparent, which
// their servers receive too), and is exported when the request (or stream) ends.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "gateway/call_spans.h"
#include "otel/exporter.h"

namespace toolbridge::gateway {

class RequestSpan {
 public:
  // Nothing (no span) when export is off or the trace is not sampled. `traceparent` is the
  // caller's (validated, may be empty); `trajectory` empty for a request that names none.
  static std::optional<RequestSpan> begin(otel::Exporter* exporter, const base::Clock& clock,
                                          std::string name, const std::string& traceparent,
                                          const std::string& trajectory);
  // The traceparent its calls carry: this span as their parent.
  std::string child_traceparent() const;
  otel::Span& span() { return span_; }
  // Ends the span now with `calls` calls and exports it; `why` is the status message of a
  // failed one.
  void end(std::size_t calls, bool failed, std::string_view why = {});
  // A span that is this one's child (a parse stream's chunk), begun now: add its attributes,
  // then end_child() exports it.
  otel::Span child(std::string name, otel::SpanKind kind) const;
  void end_child(otel::Span child) const;

 private:
  RequestSpan(otel::Exporter& exporter, const base::Clock& clock)
      : exporter_(&exporter), clock_(&clock) {}
  otel::Exporter* exporter_;
  const base::Clock* clock_;
  otel::Span span_;
};

}  // namespace toolbridge::gateway
