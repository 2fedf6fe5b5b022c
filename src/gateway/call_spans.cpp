#include "gateway/call_spans.h"

#include "llm/usage.h"
#include "otel/ids.h"

namespace toolbridge::gateway {

namespace {

// Caller-supplied text in an attribute is bounded (ids, reasons).
constexpr std::size_t kMaxText = 256;

std::string bounded(std::string_view s) {
  return std::string(s.substr(0, kMaxText));
}

bool is_model_request(const Call& call) {
  return call.method == "chat/completions" || call.method == "completions";
}

// The span name the conventions ask for: "{mcp.method.name} {target}" for MCP,
// "{gen_ai.operation.name} {gen_ai.request.model}" for a model request.
std::string span_name(const Call& call) {
  if (is_model_request(call))
    return (call.method == "completions" ? "text_completion " : "chat ") + call.route.server;
  if (call.route.label.empty() || call.route.label == call.method) return call.method;
  return call.method + " " + call.route.label;
}

void add_common(otel::Span& s, const Call& call, const telemetry::CallRecord& r) {
  if (!r.trajectory.empty() && r.trajectory != "-") s.add("toolbridge.trajectory", r.trajectory);
  if (!call.tenant.empty()) s.add("toolbridge.tenant", bounded(call.tenant));
  s.add("toolbridge.server", call.route.server);
}

// The worker that answered a model request and the tokens it reported (GenAI conventions).
void add_served(otel::Span& s, const Call& call) {
  const llm::Served* served = call.slots.find<llm::Served>();
  if (!served) return;
  s.add("toolbridge.worker", served->worker);
  if (served->input_tokens)
    s.add("gen_ai.usage.input_tokens", static_cast<std::int64_t>(*served->input_tokens));
  if (served->output_tokens)
    s.add("gen_ai.usage.output_tokens", static_cast<std::int64_t>(*served->output_tokens));
  if (served->cached_tokens)
    s.add("toolbridge.usage.cached_tokens", static_cast<std::int64_t>(*served->cached_tokens));
}

void add_call_attributes(otel::Span& s, const Call& call, const Result& result,
                         const telemetry::CallRecord& r) {
  if (is_model_request(call)) {
    s.add("gen_ai.operation.name", call.method == "completions" ? "text_completion" : "chat");
    s.add("gen_ai.request.model", call.route.server);
    add_served(s, call);
  } else {
    s.add("mcp.method.name", call.method);
    if (call.is_tool_call()) {
      s.add("gen_ai.operation.name", "execute_tool");
      s.add("gen_ai.tool.name", call.route.label);
    }
    if (!call.id.empty()) s.add("jsonrpc.request.id", bounded(call.id));
  }
  add_common(s, call, r);
  s.add("toolbridge.outcome", r.outcome);
  s.add("toolbridge.cached", r.cached);
  s.add("toolbridge.repairs", static_cast<std::int64_t>(r.repairs));
  s.add("toolbridge.argument_bytes", static_cast<std::int64_t>(r.argument_bytes));
  s.add("toolbridge.result_bytes", static_cast<std::int64_t>(r.result_bytes));
  if (call.sends > 1) s.add("toolbridge.sends", static_cast<std::int64_t>(call.sends));
  if (result.fault == Fault::kNone) {
    s.status = otel::StatusCode::kOk;
  } else {
    s.add("error.type", r.outcome);
    s.add("toolbridge.fault", r.fault);
    s.status = otel::StatusCode::kError;
    s.status_message =
        bounded(result.fault == Fault::kToolError ? "the tool answered isError" : result.why);
  }
}

otel::Span child(const otel::Span& parent, std::string name, otel::SpanKind kind,
                 std::uint64_t start_ns, std::uint64_t end_ns) {
  otel::Span s;
  s.trace_id = parent.trace_id;
  s.span_id = otel::random_span_id();
  s.parent_id = parent.span_id;
  s.name = std::move(name);
  s.kind = kind;
  s.start_ns = start_ns;
  s.end_ns = std::max(start_ns, end_ns);
  s.attributes.reserve(3);
  return s;
}

}  // namespace

SpanContext span_context(const Call& call, double ratio) {
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

void call_spans(const Call& call, const Result& result, const telemetry::CallRecord& r,
                const SpanContext& context, std::uint64_t start_ns, std::uint64_t end_ns,
                std::vector<otel::Span>& out) {
  const std::size_t at = out.size();
  otel::Span& s = out.emplace_back();
  s.trace_id = context.trace_id;
  s.span_id = otel::random_span_id();
  s.parent_id = context.parent_id;
  s.name = span_name(call);
  s.kind = otel::SpanKind::kServer;
  s.start_ns = start_ns;
  s.end_ns = std::max(start_ns, end_ns);
  s.attributes.reserve(16);  // one allocation for every attribute of the call
  add_call_attributes(s, call, result, r);
  const auto queue_end = start_ns + static_cast<std::uint64_t>(r.queue_s * 1e9);
  if (r.queue_s > 0) {
    otel::Span q = child(out[at], "toolbridge.queue", otel::SpanKind::kInternal, start_ns,
                         std::min(queue_end, end_ns));
    q.add("toolbridge.server", call.route.server);
    out.push_back(std::move(q));
  }
  if (r.execution_s > 0) {
    otel::Span e =
        child(out[at], "toolbridge.execution", otel::SpanKind::kClient, queue_end, end_ns);
    e.add("toolbridge.server", call.route.server);
    if (r.pid > 0) e.add("toolbridge.instance.pid", static_cast<std::int64_t>(r.pid));
    if (call.sends > 1) e.add("toolbridge.sends", static_cast<std::int64_t>(call.sends));
    out.push_back(std::move(e));
  }
}

}  // namespace toolbridge::gateway
