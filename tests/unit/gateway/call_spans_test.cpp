// A finished call as spans: names and attributes as the MCP and GenAI conventions say, the
// queue and execution children, and which trace the call belongs to.
#include "gateway/call_spans.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "../otel/proto_reader.h"
#include "otel/ids.h"
#include "policy/retry_attempts.h"

namespace toolbridge::gateway {
namespace {

const otel::Attribute* find(const otel::Span& s, std::string_view key) {
  for (const auto& a : s.attributes)
    if (a.key == key) return &a;
  return nullptr;
}
std::string text(const otel::Span& s, std::string_view key) {
  const auto* a = find(s, key);
  return a && std::holds_alternative<std::string>(a->value) ? std::get<std::string>(a->value)
                                                            : "<none>";
}

// The call's spans as the exporter gets them (protobuf), read back.
std::vector<otel::Span> spans_of(const call::Call& call, const call::Result& result,
                                 const telemetry::CallRecord& r, const SpanContext& ctx,
                                 std::uint64_t start_ns, std::uint64_t end_ns) {
  std::string bytes;
  otel::SpanWriter w(bytes, otel::Encoding::kProtobuf);
  call_spans(call, result, r, ctx, start_ns, end_ns, w);
  EXPECT_EQ(w.ends().size() ? w.ends().back() : 0, bytes.size());
  return otel::testing::read_spans(bytes);
}

call::Call tool_call() {
  call::Call c;
  c.method = "tools/call";
  c.id = "7";
  c.trajectory = "rollout-1";
  c.tenant = "team-a";
  c.route.server = "fixture";
  c.route.label = "fixture__echo";
  c.sends = 2;
  return c;
}

telemetry::CallRecord record(std::string_view outcome) {
  telemetry::CallRecord r;
  r.trajectory = "rollout-1";
  r.queue_s = 0.002;
  r.execution_s = 0.003;
  r.total_s = 0.005;
  r.outcome = outcome;
  r.pid = 42;
  r.result_bytes = 10;
  return r;
}

TEST(CallSpans, AToolCallIsASpanWithQueueAndExecutionChildren) {
  const call::Call call = tool_call();
  const SpanContext ctx = span_context(call, 1.0);
  const std::vector<otel::Span> out =
      spans_of(call, call::Result{}, record("ok"), ctx, 1'000'000'000, 1'005'000'000);
  ASSERT_EQ(out.size(), 3u);
  const otel::Span& s = out[0];
  EXPECT_EQ(s.name, "tools/call fixture__echo");
  EXPECT_EQ(s.kind, otel::SpanKind::kServer);
  EXPECT_TRUE(otel::is_zero(s.parent_id));  // no caller trace: a root in the trajectory's trace
  EXPECT_EQ(otel::hex(s.trace_id), otel::hex(otel::trajectory_trace_id("rollout-1")));
  EXPECT_EQ(text(s, "mcp.method.name"), "tools/call");
  EXPECT_EQ(text(s, "gen_ai.operation.name"), "execute_tool");
  EXPECT_EQ(text(s, "gen_ai.tool.name"), "fixture__echo");
  EXPECT_EQ(text(s, "jsonrpc.request.id"), "7");
  EXPECT_EQ(text(s, "toolbridge.trajectory"), "rollout-1");
  EXPECT_EQ(text(s, "toolbridge.tenant"), "team-a");
  EXPECT_EQ(text(s, "toolbridge.server"), "fixture");
  EXPECT_EQ(text(s, "toolbridge.outcome"), "ok");
  EXPECT_EQ(find(s, "error.type"), nullptr);
  EXPECT_EQ(s.status, otel::StatusCode::kOk);
  EXPECT_EQ(s.start_ns, 1'000'000'000u);
  EXPECT_EQ(s.end_ns, 1'005'000'000u);

  const otel::Span& queue = out[1];
  const otel::Span& exec = out[2];
  EXPECT_EQ(queue.name, "toolbridge.queue");
  EXPECT_EQ(exec.name, "toolbridge.execution");
  EXPECT_EQ(exec.kind, otel::SpanKind::kClient);
  for (const otel::Span* c : {&queue, &exec}) {
    EXPECT_EQ(c->trace_id, s.trace_id);
    EXPECT_EQ(c->parent_id, s.span_id);
    EXPECT_NE(c->span_id, s.span_id);
  }
  EXPECT_EQ(queue.start_ns, s.start_ns);
  EXPECT_EQ(queue.end_ns, 1'002'000'000u);
  EXPECT_EQ(exec.start_ns, queue.end_ns);
  EXPECT_EQ(exec.end_ns, s.end_ns);
  EXPECT_EQ(std::get<std::int64_t>(find(exec, "toolbridge.instance.pid")->value), 42);
  EXPECT_EQ(std::get<std::int64_t>(find(exec, "toolbridge.sends")->value), 2);
}

TEST(CallSpans, TheCallersTraceparentIsTheParent) {
  call::Call call = tool_call();
  call.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const SpanContext ctx = span_context(call, 0.0);  // the caller's sampled flag decides
  EXPECT_TRUE(ctx.sampled);
  const std::vector<otel::Span> out = spans_of(call, call::Result{}, record("ok"), ctx, 1, 2);
  EXPECT_EQ(otel::hex(out[0].trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(otel::hex(out[0].parent_id), "00f067aa0ba902b7");
  call.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
  EXPECT_FALSE(span_context(call, 1.0).sampled);
}

TEST(CallSpans, ARequestScopedKeyIsNoTrajectory) {
  call::Call call = tool_call();
  call.request_scoped_key = true;
  EXPECT_NE(span_context(call, 1.0).trace_id, span_context(call, 1.0).trace_id);
}

TEST(CallSpans, FailuresCarryErrorTypeAndStatus) {
  const call::Call call = tool_call();
  telemetry::CallRecord r = record("timeout");
  r.execution_s = 0;
  r.queue_s = 0.005;
  const std::vector<otel::Span> out =
      spans_of(call, call::Result::failure(call::Fault::kTimeout, "the deadline passed"), r,
               span_context(call, 1.0), 1, 5'000'001);
  ASSERT_EQ(out.size(), 2u);  // never reached a server: no execution span
  EXPECT_EQ(text(out[0], "error.type"), "timeout");
  EXPECT_EQ(out[0].status, otel::StatusCode::kError);
  EXPECT_EQ(out[0].status_message, "the deadline passed");
}

TEST(CallSpans, ACallThatDidNotWaitHasNoQueueSpan) {
  const call::Call call = tool_call();
  telemetry::CallRecord r = record("ok");
  r.queue_s = kMinQueueSpanSeconds / 2;
  const auto out =
      spans_of(call, call::Result{}, r, span_context(call, 1.0), 1'000'000'000, 1'005'000'000);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].name, "toolbridge.execution");
  EXPECT_EQ(out[1].start_ns, 1'000'500'000u);  // the gateway's half millisecond before it
}

TEST(CallSpans, JsonSpansAreTheSameSpans) {
  const call::Call call = tool_call();
  std::string bytes;
  otel::SpanWriter w(bytes, otel::Encoding::kJson);
  call_spans(call, call::Result{}, record("ok"), span_context(call, 1.0), 1, 2, w);
  ASSERT_EQ(w.ends().size(), 3u);
  ASSERT_EQ(bytes.back(), ',');  // each span is followed by ',' (the exporter's queue joins them)
  bytes.pop_back();
  const auto v = boost::json::parse("[" + bytes + "]").as_array();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].at("name"), "tools/call fixture__echo");
  EXPECT_EQ(v[1].at("parentSpanId"), v[0].at("spanId"));
  bool found = false;
  for (const auto& a : v[0].at("attributes").as_array()) {
    if (a.at("key") == "toolbridge.repairs") found = a.at("value").at("intValue") == "0";
  }
  EXPECT_TRUE(found);
}

TEST(CallSpans, AModelRequestFollowsTheGenAiConventions) {
  call::Call call;
  call.method = "chat/completions";
  call.route.server = "qwen";
  call.route.label = call.method;
  call.trajectory = "rollout-1";
  const std::vector<otel::Span> out =
      spans_of(call, call::Result{}, record("ok"), span_context(call, 1.0), 1, 2);
  EXPECT_EQ(out[0].name, "chat qwen");
  EXPECT_EQ(text(out[0], "gen_ai.operation.name"), "chat");
  EXPECT_EQ(text(out[0], "gen_ai.request.model"), "qwen");
  EXPECT_EQ(find(out[0], "mcp.method.name"), nullptr);
}

// A call the retry stage sent three times: one toolbridge.attempt span per attempt under the
// execution span, with the attempt's number, how the failed ones ended and the pause before it.
TEST(CallSpans, ARetriedCallHasAnAttemptSpanPerAttempt) {
  using std::chrono::milliseconds;
  call::Call call = tool_call();
  call.started = call::Call::Clock::time_point{} + std::chrono::seconds(100);
  call.attempts = 2;
  call.sends = 3;
  auto& retries = call.slots.get<policy::RetryAttempts>().retries;
  retries.push_back({.failed_at = call.started + milliseconds(3),
                     .fault = call::Fault::kCrashed,
                     .backoff = milliseconds(60),
                     .resumed_at = call.started + milliseconds(63)});
  retries.push_back({.failed_at = call.started + milliseconds(64),
                     .fault = call::Fault::kNotSent,
                     .backoff = milliseconds(110),
                     .resumed_at = call.started + milliseconds(174)});
  telemetry::CallRecord r = record("ok");
  r.queue_s = 0.002;
  r.execution_s = 0.178;
  const std::uint64_t t0 = 1'000'000'000;
  const auto out = spans_of(call, call::Result{}, r, span_context(call, 1.0), t0, t0 + 180'000'000);
  ASSERT_EQ(out.size(), 6u);  // call, queue, execution, three attempts
  const otel::Span& exec = out[2];
  ASSERT_EQ(exec.name, "toolbridge.execution");
  const auto ms = [&](std::uint64_t n) { return t0 + n * 1'000'000; };
  const std::uint64_t starts[] = {ms(2), ms(63), ms(174)};
  const std::uint64_t ends[] = {ms(3), ms(64), ms(180)};
  for (std::size_t i = 0; i < 3; ++i) {
    const otel::Span& a = out[3 + i];
    SCOPED_TRACE(i);
    EXPECT_EQ(a.name, "toolbridge.attempt");
    EXPECT_EQ(a.kind, otel::SpanKind::kInternal);
    EXPECT_EQ(a.trace_id, exec.trace_id);
    EXPECT_EQ(a.parent_id, exec.span_id);
    EXPECT_EQ(std::get<std::int64_t>(find(a, "toolbridge.attempt")->value),
              static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(text(a, "toolbridge.server"), "fixture");
    EXPECT_EQ(a.start_ns, starts[i]);
    EXPECT_EQ(a.end_ns, ends[i]);
  }
  EXPECT_EQ(find(out[3], "toolbridge.retry.backoff_ms"), nullptr);  // the first had no pause
  EXPECT_EQ(std::get<std::int64_t>(find(out[4], "toolbridge.retry.backoff_ms")->value), 60);
  EXPECT_EQ(std::get<std::int64_t>(find(out[5], "toolbridge.retry.backoff_ms")->value), 110);
  EXPECT_EQ(text(out[3], "error.type"), "crashed");
  EXPECT_EQ(text(out[3], "toolbridge.fault"), "infra");
  EXPECT_EQ(out[3].status, otel::StatusCode::kError);
  EXPECT_EQ(out[3].status_message, "the instance died with the call sent");
  EXPECT_EQ(out[4].status_message, "the request never reached the server");
  EXPECT_EQ(find(out[5], "error.type"), nullptr);  // the last answered
  EXPECT_EQ(out[5].status, otel::StatusCode::kOk);
}

TEST(CallSpans, ACallSentOnceHasNoAttemptSpans) {
  call::Call call = tool_call();
  call.sends = 1;
  const auto out =
      spans_of(call, call::Result{}, record("ok"), span_context(call, 1.0), 1, 5'000'001);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& s : out) EXPECT_NE(s.name, "toolbridge.attempt");
  EXPECT_EQ(call.slots.find<policy::RetryAttempts>(), nullptr);
}

}  // namespace
}  // namespace toolbridge::gateway
