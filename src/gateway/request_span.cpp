#include "gateway/request_span.h"

#include <fmt/format.h>

#include "otel/ids.h"

namespace toolbridge::gateway {

namespace {
std::uint64_t wall_ns(const base::Clock& clock) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock.wall_now().time_since_epoch())
          .count());
}
}  // namespace

std::optional<RequestSpan> RequestSpan::begin(otel::Exporter* exporter, const base::Clock& clock,
                                              std::string name, const std::string& traceparent,
                                              const std::string& trajectory) {
  if (!exporter) return std::nullopt;
  call::Call probe;  // span_context() reads only these three
  probe.traceparent = traceparent;
  probe.trajectory = trajectory;
  probe.request_scoped_key = trajectory.empty();
  const SpanContext context = span_context(probe, exporter->options().sample_ratio);
  if (!context.sampled) return std::nullopt;
  RequestSpan r(*exporter, clock);
  r.span_.trace_id = context.trace_id;
  r.span_.parent_id = context.parent_id;
  r.span_.span_id = otel::random_span_id();
  r.span_.name = std::move(name);
  r.span_.kind = otel::SpanKind::kServer;
  r.span_.start_ns = wall_ns(clock);
  if (!trajectory.empty()) r.span_.add("toolbridge.trajectory", trajectory);
  return r;
}

std::string RequestSpan::child_traceparent() const {
  return fmt::format("00-{}-{}-01", otel::hex(span_.trace_id), otel::hex(span_.span_id));
}

void RequestSpan::end(std::size_t calls, bool failed, std::string_view why) {
  span_.end_ns = std::max(span_.start_ns, wall_ns(*clock_));
  span_.add("toolbridge.calls", static_cast<std::int64_t>(calls));
  span_.status = failed ? otel::StatusCode::kError : otel::StatusCode::kOk;
  if (failed) span_.status_message = std::string(why.substr(0, 256));
  std::vector<otel::Span> one;
  one.push_back(std::move(span_));
  exporter_->submit(one);
}

otel::Span RequestSpan::child(std::string name, otel::SpanKind kind) const {
  otel::Span c;
  c.trace_id = span_.trace_id;
  c.parent_id = span_.span_id;
  c.span_id = otel::random_span_id();
  c.name = std::move(name);
  c.kind = kind;
  c.start_ns = wall_ns(*clock_);
  return c;
}

void RequestSpan::end_child(otel::Span child) const {
  child.end_ns = std::max(child.start_ns, wall_ns(*clock_));
  std::vector<otel::Span> one;
  one.push_back(std::move(child));
  exporter_->submit(one);
}

}  // namespace toolbridge::gateway
