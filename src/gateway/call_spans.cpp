#include "gateway/call_spans.h"

#include <algorithm>
#include <chrono>

#include "llm/usage.h"
#include "otel/ids.h"
#include "policy/retry_attempts.h"

namespace toolbridge::gateway {

namespace {

// Caller-supplied text in an attribute is bounded (ids, reasons).
constexpr std::size_t kMaxText = 256;

std::string_view bounded(std::string_view s) {
  return s.substr(0, kMaxText);
}

bool is_model_request(const call::Call& call) {
  return call.method == "chat/completions" || call.method == "completions";
}

// The span name the conventions ask for: "{mcp.method.name} {target}" for MCP,
// "{gen_ai.operation.name} {gen_ai.request.model}" for a model request. Into `name`, a buffer of
// the caller's that keeps its capacity.
std::string_view span_name(const call::Call& call, std::string& name) {
  if (is_model_request(call)) {
    name = call.method == "completions" ? "text_completion " : "chat ";
    name += call.route.server;
    return name;
  }
  if (call.route.label.empty() || call.route.label == call.method) return call.method;
  name = call.method;
  name += ' ';
  name += call.route.label;
  return name;
}

void add_common(otel::SpanWriter& w, const call::Call& call, const telemetry::CallRecord& r) {
  if (!r.trajectory.empty() && r.trajectory != "-") w.add("toolbridge.trajectory", r.trajectory);
  if (!call.tenant.empty()) w.add("toolbridge.tenant", bounded(call.tenant));
  w.add("toolbridge.server", call.route.server);
}

// The worker that answered a model request and the tokens it reported (GenAI conventions).
void add_served(otel::SpanWriter& w, const call::Call& call) {
  const llm::Served* served = call.slots.find<llm::Served>();
  if (!served) return;
  w.add("toolbridge.worker", served->worker);
  if (served->input_tokens)
    w.add("gen_ai.usage.input_tokens", static_cast<std::int64_t>(*served->input_tokens));
  if (served->output_tokens)
    w.add("gen_ai.usage.output_tokens", static_cast<std::int64_t>(*served->output_tokens));
  if (served->cached_tokens)
    w.add("toolbridge.usage.cached_tokens", static_cast<std::int64_t>(*served->cached_tokens));
}

void add_call_attributes(otel::SpanWriter& w, const call::Call& call, const call::Result& result,
                         const telemetry::CallRecord& r) {
  if (is_model_request(call)) {
    w.add("gen_ai.operation.name", call.method == "completions" ? "text_completion" : "chat");
    w.add("gen_ai.request.model", call.route.server);
    add_served(w, call);
  } else {
    w.add("mcp.method.name", call.method);
    if (call.is_tool_call()) {
      w.add("gen_ai.operation.name", "execute_tool");
      w.add("gen_ai.tool.name", call.route.label);
    }
    if (!call.id.empty()) w.add("jsonrpc.request.id", bounded(call.id));
  }
  add_common(w, call, r);
  w.add("toolbridge.outcome", r.outcome);
  w.add("toolbridge.cached", r.cached);
  w.add("toolbridge.repairs", static_cast<std::int64_t>(r.repairs));
  w.add("toolbridge.argument_bytes", static_cast<std::int64_t>(r.argument_bytes));
  w.add("toolbridge.result_bytes", static_cast<std::int64_t>(r.result_bytes));
  if (call.sends > 1) w.add("toolbridge.sends", static_cast<std::int64_t>(call.sends));
  if (result.fault != call::Fault::kNone) {
    w.add("error.type", r.outcome);
    w.add("toolbridge.fault", r.fault);
  }
}

// Why a retried attempt failed, for its span's status (the retry stage retries only these).
std::string_view attempt_failure(call::Fault f) {
  return f == call::Fault::kNotSent ? "the request never reached the server"
                                    : "the instance died with the call sent";
}

// One toolbridge.attempt span per attempt of a retried call, children of `parent`: the first
// from `first_ns` (the execution's start) to its failure, each later one from the end of its
// pause to its failure or, the last, to the call's end.
void attempt_spans(const call::Call& call, const call::Result& result,
                   const telemetry::CallRecord& r, const policy::RetryAttempts& attempts,
                   const SpanContext& context, const otel::SpanId& parent, std::uint64_t first_ns,
                   std::uint64_t start_ns, std::uint64_t end_ns, otel::SpanWriter& out) {
  // A call's clock reading as an epoch time, within the call's span.
  const auto at = [&](call::Call::Clock::time_point t) {
    const auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(t - call.started);
    return std::clamp(start_ns + static_cast<std::uint64_t>(std::max<std::int64_t>(
                                     0, static_cast<std::int64_t>(since.count()))),
                      start_ns, end_ns);
  };
  const auto& retries = attempts.retries;
  std::uint64_t begin_ns = std::clamp(first_ns, start_ns, end_ns);
  for (std::size_t i = 0; i <= retries.size(); ++i) {
    const bool last = i == retries.size();
    const std::uint64_t attempt_end = last ? end_ns : std::max(begin_ns, at(retries[i].failed_at));
    out.begin({.trace_id = context.trace_id,
               .span_id = otel::random_span_id(),
               .parent_id = parent,
               .name = "toolbridge.attempt",
               .kind = otel::SpanKind::kInternal,
               .start_ns = begin_ns,
               .end_ns = attempt_end});
    out.add("toolbridge.attempt", static_cast<std::int64_t>(i + 1));
    out.add("toolbridge.server", call.route.server);
    if (i > 0) {
      out.add("toolbridge.retry.backoff_ms",
              static_cast<std::int64_t>(retries[i - 1].backoff.count()));
    }
    const call::Fault fault = last ? result.fault : retries[i].fault;
    if (fault != call::Fault::kNone) {
      out.add("error.type", last ? r.outcome : call::outcome_label(fault));
      out.add("toolbridge.fault", to_string(call::fault_class(fault)));
    }
    if (fault == call::Fault::kNone) {
      out.end(otel::StatusCode::kOk);
    } else {
      out.end(otel::StatusCode::kError, last ? bounded(result.why) : attempt_failure(fault));
    }
    if (!last) begin_ns = std::max(attempt_end, at(retries[i].resumed_at));
  }
}

}  // namespace

SpanContext span_context(const call::Call& call, double ratio) {
  SpanContext c;
  if (auto tp = otel::parse_traceparent(call.traceparent)) {
    c.trace_id = tp->trace_id;
    c.parent_id = tp->parent_id;
    c.sampled = (tp->flags & 1) != 0;
    return c;
  }
  const bool trajectory = !call.trajectory.empty() && !call.request_scoped_key;
  c.trace_id = trajectory ? otel::trajectory_trace_id(call.trajectory) : otel::random_trace_id();
  c.sampled = otel::sampled_at(c.trace_id, ratio);
  return c;
}

void call_spans(const call::Call& call, const call::Result& result, const telemetry::CallRecord& r,
                const SpanContext& context, std::uint64_t start_ns, std::uint64_t end_ns,
                otel::SpanWriter& out) {
  thread_local std::string name;
  end_ns = std::max(start_ns, end_ns);
  const otel::SpanId id = otel::random_span_id();
  out.begin({.trace_id = context.trace_id,
             .span_id = id,
             .parent_id = context.parent_id,
             .name = span_name(call, name),
             .kind = otel::SpanKind::kServer,
             .start_ns = start_ns,
             .end_ns = end_ns});
  add_call_attributes(out, call, result, r);
  if (result.fault == call::Fault::kNone) {
    out.end(otel::StatusCode::kOk);
  } else {
    out.end(otel::StatusCode::kError,
            bounded(result.fault == call::Fault::kToolError ? "the tool answered isError"
                                                            : result.why));
  }
  const auto queue_end = std::min(start_ns + static_cast<std::uint64_t>(r.queue_s * 1e9), end_ns);
  if (r.queue_s >= kMinQueueSpanSeconds) {
    out.begin({.trace_id = context.trace_id,
               .span_id = otel::random_span_id(),
               .parent_id = id,
               .name = "toolbridge.queue",
               .kind = otel::SpanKind::kInternal,
               .start_ns = start_ns,
               .end_ns = queue_end});
    out.add("toolbridge.server", call.route.server);
    out.end();
  }
  otel::SpanId execution_id = id;  // the attempts' parent: the execution span, if written
  if (r.execution_s > 0) {
    execution_id = otel::random_span_id();
    out.begin({.trace_id = context.trace_id,
               .span_id = execution_id,
               .parent_id = id,
               .name = "toolbridge.execution",
               .kind = otel::SpanKind::kClient,
               .start_ns = queue_end,
               .end_ns = end_ns});
    out.add("toolbridge.server", call.route.server);
    if (r.pid > 0) out.add("toolbridge.instance.pid", static_cast<std::int64_t>(r.pid));
    if (call.sends > 1) out.add("toolbridge.sends", static_cast<std::int64_t>(call.sends));
    out.end();
  }
  // A call sent once holds no slot: nothing more is written or made.
  if (call.attempts > 0) {
    if (const auto* attempts = call.slots.find<policy::RetryAttempts>()) {
      attempt_spans(call, result, r, *attempts, context, execution_id, queue_end, start_ns, end_ns,
                    out);
    }
  }
}

}  // namespace toolbridge::gateway
