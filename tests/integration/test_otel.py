"""OpenTelemetry export against a real backend: Jaeger all-in-one on loopback ports receives the
gateway's OTLP/HTTP spans, and its query API shows names, parent/child links, attributes and one
trace per trajectory, with and without a caller's traceparent. A collector that is down costs no
call, only drops."""

from __future__ import annotations

import hashlib
import json
import threading
import time

import pytest

from jaeger_support import Jaeger, free_port
from tb_support import RawSession, fixture_server, metric, text_of

pytestmark = pytest.mark.timeout(180)

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def jaeger(tmp_path):
    j = Jaeger(tmp_path)
    yield j
    j.close()


def trajectory_trace_id(trajectory: str) -> str:
    """The documented rule: the first 16 bytes of SHA-256 of the trajectory id."""
    return hashlib.sha256(trajectory.encode()).hexdigest()[:32]


def tags(span: dict) -> dict:
    return {t["key"]: t["value"] for t in span["tags"]}


def parent_of(span: dict) -> str | None:
    refs = [r for r in span.get("references", []) if r["refType"] == "CHILD_OF"]
    return refs[0]["spanID"] if refs else None


def call(s: RawSession, name: str, arguments: dict, req_id: int, headers: dict | None = None,
         **meta) -> dict:
    params: dict = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    resp = s.post({"jsonrpc": "2.0", "id": req_id, "method": "tools/call", "params": params},
                  **(headers or {}))
    assert resp.status_code == 200, resp.text[:300]
    return resp.json()


def test_spans_reach_jaeger_with_links_attributes_and_one_trace_per_trajectory(
        gateway_factory, jaeger):
    # One call at a time: a call made while another runs waits in the admission queue.
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=1)},
                         {"otel": {"endpoint": jaeger.endpoint, "batch_size": 8}})
    gw.wait_ready()
    s = RawSession(gw.mcp_url).initialize()
    try:
        # With the caller's traceparent: the caller's span is the parent. It waits ~300 ms behind
        # another session's sleep, so it has a toolbridge.queue span (a call that waited under
        # 1 ms has none).
        other = RawSession(gw.mcp_url).initialize()
        sleeper = threading.Thread(target=call, args=(other, "fixture__sleep", {"ms": 300}, 99))
        sleeper.start()
        time.sleep(0.1)
        answer = call(s, "fixture__echo", {"text": "hi"}, 1, {"traceparent": TRACEPARENT},
                      **{"toolbridge/session": "traj-a"})
        sleeper.join()
        other.close()
        assert not answer["result"].get("isError"), answer
        # Without one: every call of trajectory traj-b lands in the trajectory's own trace.
        for i in range(3):
            call(s, "fixture__echo", {"text": str(i)}, 10 + i, **{"toolbridge/session": "traj-b"})
        failed = call(s, "fixture__fail", {"message": "no"}, 20, **{"toolbridge/session": "traj-b"})
        assert failed["result"]["isError"], failed
    finally:
        s.close()

    caller_trace = jaeger.trace(TRACE_ID, want_spans=3)
    spans = {sp["spanID"]: sp for sp in caller_trace["spans"]}
    roots = [sp for sp in spans.values() if sp["operationName"] == "tools/call fixture__echo"]
    assert len(roots) == 1, [sp["operationName"] for sp in spans.values()]
    root = roots[0]
    assert parent_of(root) == PARENT_ID  # the caller's span, which Jaeger never received
    t = tags(root)
    assert t["mcp.method.name"] == "tools/call"
    assert t["gen_ai.operation.name"] == "execute_tool"
    assert t["gen_ai.tool.name"] == "fixture__echo"
    assert t["toolbridge.trajectory"] == "traj-a"
    assert t["toolbridge.server"] == "fixture"
    assert t["toolbridge.outcome"] == "ok"
    assert t["toolbridge.cached"] is False
    assert t["toolbridge.result_bytes"] > 0
    assert t["span.kind"] == "server"
    process = caller_trace["processes"][root["processID"]]
    assert process["serviceName"] == "toolbridge"
    children = {sp["operationName"]: sp for sp in spans.values() if parent_of(sp) == root["spanID"]}
    assert set(children) == {"toolbridge.queue", "toolbridge.execution"}, children.keys()
    queue = children["toolbridge.queue"]
    assert queue["duration"] >= 100_000, queue  # µs: it waited behind the sleep
    execution = children["toolbridge.execution"]
    assert tags(execution)["toolbridge.instance.pid"] > 0
    assert execution["startTime"] >= root["startTime"]
    assert execution["startTime"] + execution["duration"] <= root["startTime"] + root["duration"] + 1

    # traj-b: one trace, its id derived from the trajectory, four call spans as roots (each with
    # its execution span; the queue span only if a call waited 1 ms or more).
    traj = jaeger.trace(trajectory_trace_id("traj-b"), want_spans=4 * 2)
    calls = [sp for sp in traj["spans"] if sp["operationName"].startswith("tools/call ")]
    assert len(calls) == 4, [sp["operationName"] for sp in traj["spans"]]
    assert all(parent_of(sp) is None for sp in calls)
    assert all(tags(sp)["toolbridge.trajectory"] == "traj-b" for sp in calls)
    fail = next(sp for sp in calls if sp["operationName"] == "tools/call fixture__fail")
    ft = tags(fail)
    assert ft["toolbridge.outcome"] == "tool_error" and ft["error.type"] == "tool_error"
    assert ft["toolbridge.fault"] == "tool"
    assert ft["otel.status_code"] == "ERROR" and ft["error"] is True
    # traj-a's call is not in traj-b's trace, nor in a trace of its own (the caller's won).
    assert all(tags(sp)["toolbridge.trajectory"] == "traj-b" for sp in calls)

    assert metric(gw, "toolbridge_otel_spans_exported_total") >= 13
    assert metric(gw, "toolbridge_otel_spans_dropped_total") == 0


def test_a_collector_that_is_down_costs_no_call(gateway_factory):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    gw = gateway_factory({"fixture": fixture_server()},
                         {"otel": {"endpoint": dead, "batch_size": 2, "queue_size": 4,
                                   "timeout": "500ms"}})
    gw.wait_ready()
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(30):
            answer = call(s, "fixture__echo", {"text": str(i)}, i + 1,
                          **{"toolbridge/session": "down"})
            assert text_of(answer["result"]) == str(i), answer
    finally:
        s.close()
    # Two or three spans a call (the call, its execution, its queue if it waited 1 ms or more),
    # every one dropped: by the full queue or with its failed export request; none waited for.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and metric(gw, "toolbridge_otel_spans_dropped_total") < 60:
        time.sleep(0.2)
    time.sleep(1.5)  # the export thread's last batch
    assert 60 <= metric(gw, "toolbridge_otel_spans_dropped_total") <= 90
    assert metric(gw, "toolbridge_otel_export_requests_total", result="failed") > 0
    assert metric(gw, "toolbridge_otel_export_requests_total", result="ok") == 0
    assert metric(gw, "toolbridge_otel_spans_exported_total") == 0
    assert metric(gw, "toolbridge_calls_total", outcome="ok") == 30
    assert "span export failed" in gw.stderr_tail()


def test_batch_and_parse_requests_are_spans_over_their_calls(gateway_factory, jaeger):
    import httpx

    gw = gateway_factory({"fixture": fixture_server()},
                         {"otel": {"endpoint": jaeger.endpoint, "protocol": "http/json"}})
    headers = {"Content-Type": "application/json"}
    batch = {"trajectory": "traj-batch",
             "calls": [{"tool": "fixture__echo", "arguments": {"text": "a"}},
                       {"tool": "fixture__echo", "arguments": {"text": "b"}}]}
    resp = httpx.post(gw.base_url + "/v1/batch", content=json.dumps(batch), headers=headers,
                      timeout=30)
    assert resp.status_code == 200, resp.text[:300]
    text = "<tool_call>\n" + json.dumps({"name": "fixture__echo", "arguments": {"text": "c"}}) + \
        "\n</tool_call>"
    resp = httpx.post(gw.base_url + "/v1/parse", headers={**headers, "traceparent": TRACEPARENT},
                      content=json.dumps({"text": text, "format": "hermes", "execute": True}),
                      timeout=30)
    assert resp.status_code == 200, resp.text[:300]

    # The batch: its trajectory's trace, the request a root span, its two calls its children
    # (each with its execution span), sent as OTLP JSON this time.
    trace = jaeger.trace(trajectory_trace_id("traj-batch"), want_spans=1 + 2 * 2)
    by_name: dict[str, list[dict]] = {}
    for sp in trace["spans"]:
        by_name.setdefault(sp["operationName"], []).append(sp)
    [request] = by_name["POST /v1/batch"]
    assert parent_of(request) is None
    assert tags(request)["toolbridge.calls"] == 2 and tags(request)["url.path"] == "/v1/batch"
    calls = by_name["tools/call fixture__echo"]
    assert len(calls) == 2 and all(parent_of(c) == request["spanID"] for c in calls)

    # The parse request: in the caller's trace, under the caller's span.
    trace = jaeger.trace(TRACE_ID, want_spans=1 + 2)
    [request] = [sp for sp in trace["spans"] if sp["operationName"] == "POST /v1/parse"]
    assert parent_of(request) == PARENT_ID
    [call_span] = [sp for sp in trace["spans"] if sp["operationName"] == "tools/call fixture__echo"]
    assert parent_of(call_span) == request["spanID"]


def test_a_model_request_is_a_span_and_its_traceparent_reaches_the_worker(tmp_path, jaeger):
    import httpx

    from llm_support import chat_body, model_entry, start_llm_gateway, start_workers

    [worker] = start_workers(1)
    gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry([worker])},
                           {"otel": {"endpoint": jaeger.endpoint}})
    try:
        body = chat_body([{"role": "user", "content": "hi"}], max_tokens=4)
        r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30,
                       headers={"traceparent": TRACEPARENT, "X-Toolbridge-Trajectory": "traj-m"})
        assert r.status_code == 200, r.text
        assert worker.stats()["last_traceparent"] == TRACEPARENT
        trace = jaeger.trace(TRACE_ID, want_spans=1)
        [span] = [sp for sp in trace["spans"] if sp["operationName"] == "chat sim"]
        assert parent_of(span) == PARENT_ID
        t = tags(span)
        assert t["gen_ai.operation.name"] == "chat" and t["gen_ai.request.model"] == "sim"
        assert t["toolbridge.trajectory"] == "traj-m" and t["toolbridge.outcome"] == "ok"
        # The worker that answered and the tokens it reported (GenAI usage conventions).
        usage = r.json()["usage"]
        assert t["toolbridge.worker"] == r.headers["X-Toolbridge-Worker"]
        assert t["gen_ai.usage.input_tokens"] == usage["prompt_tokens"] > 0
        assert t["gen_ai.usage.output_tokens"] == usage["completion_tokens"] > 0
    finally:
        gw.close()
        worker.kill()


def test_a_retried_call_has_a_span_per_attempt(gateway_factory, jaeger, tmp_path):
    # crash with once_file: the first attempt kills the server with the call sent; crash is
    # declared idempotent, so the retry stage sends it again to the restarted server, which
    # answers.
    gw = gateway_factory({"fixture": fixture_server(idempotent_tools=["crash"], call_timeout="20s")},
                         {"otel": {"endpoint": jaeger.endpoint}})
    gw.wait_ready()
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = call(s, "fixture__crash", {"once_file": str(tmp_path / "crashed-once")}, 1,
                      **{"toolbridge/session": "traj-retry"})
        assert text_of(answer["result"]) == "survived", answer
        plain = call(s, "fixture__echo", {"text": "once"}, 2, **{"toolbridge/session": "traj-retry"})
        assert text_of(plain["result"]) == "once", plain
    finally:
        s.close()

    # The crash call, its execution, two attempts; the echo call and its execution.
    trace = jaeger.trace(trajectory_trace_id("traj-retry"), want_spans=4 + 2)
    spans = {sp["spanID"]: sp for sp in trace["spans"]}
    [root] = [sp for sp in spans.values() if sp["operationName"] == "tools/call fixture__crash"]
    assert tags(root)["toolbridge.outcome"] == "ok" and tags(root)["toolbridge.sends"] == 2
    [execution] = [sp for sp in spans.values()
                   if sp["operationName"] == "toolbridge.execution" and parent_of(sp) == root["spanID"]]
    attempts = sorted((sp for sp in spans.values() if sp["operationName"] == "toolbridge.attempt"),
                      key=lambda sp: tags(sp)["toolbridge.attempt"])
    assert [tags(a)["toolbridge.attempt"] for a in attempts] == [1, 2]
    assert all(parent_of(a) == execution["spanID"] for a in attempts)
    first, second = (tags(a) for a in attempts)
    assert first["error.type"] == "crashed" and first["toolbridge.fault"] == "infra"
    assert first["otel.status_code"] == "ERROR"
    assert "toolbridge.retry.backoff_ms" not in first
    assert 50 <= second["toolbridge.retry.backoff_ms"] <= 150  # the default jittered pause
    assert "error.type" not in second and second["otel.status_code"] == "OK"
    # The second attempt starts after the first ended and the pause ran.
    gap_us = attempts[1]["startTime"] - (attempts[0]["startTime"] + attempts[0]["duration"])
    assert gap_us >= second["toolbridge.retry.backoff_ms"] * 1000 - 1000
    # A call sent once has no attempt spans.
    [echo] = [sp for sp in spans.values() if sp["operationName"] == "tools/call fixture__echo"]
    assert not any(parent_of(sp) == echo["spanID"] and sp["operationName"] == "toolbridge.attempt"
                   for sp in spans.values())
    assert all(parent_of(a) != echo["spanID"] for a in attempts)


def test_a_parse_stream_is_a_span_over_its_chunks_and_calls(gateway_factory, jaeger):
    import httpx

    gw = gateway_factory({"fixture": fixture_server()},
                         {"otel": {"endpoint": jaeger.endpoint}})
    headers = {"Content-Type": "application/json"}

    def post(path: str, body: dict) -> dict:
        resp = httpx.post(gw.base_url + path, content=json.dumps(body), headers=headers, timeout=30)
        assert resp.status_code in (200, 201), resp.text[:300]
        return resp.json()

    def tool_call(text: str) -> str:
        return "<tool_call>\n" + json.dumps({"name": "fixture__echo", "arguments": {"text": text}}) \
            + "\n</tool_call>\n"

    opened = post("/v1/parse/streams", {"format": "hermes", "execute": True,
                                        "trajectory": "traj-stream"})
    stream = opened["stream"]
    first, second = tool_call("a"), tool_call("b")
    post(f"/v1/parse/streams/{stream}", {"text": first[:20]})
    post(f"/v1/parse/streams/{stream}", {"text": first[20:] + second})
    final = post(f"/v1/parse/streams/{stream}", {"text": "", "done": True})
    assert len(final["calls"]) == 2, final

    # A stream dropped by its client still exports its span, as failed, with the reason.
    dropped = post("/v1/parse/streams", {"format": "hermes", "execute": True,
                                         "trajectory": "traj-dropped"})["stream"]
    resp = httpx.delete(f"{gw.base_url}/v1/parse/streams/{dropped}", timeout=30)
    assert resp.status_code == 200, resp.text[:300]

    # The stream: one root span in its trajectory's trace, three chunk spans and the two calls
    # (each with its execution span) its children.
    trace = jaeger.trace(trajectory_trace_id("traj-stream"), want_spans=1 + 3 + 2 * 2)
    by_name: dict[str, list[dict]] = {}
    for sp in trace["spans"]:
        by_name.setdefault(sp["operationName"], []).append(sp)
    [request] = by_name["POST /v1/parse/streams"]
    assert parent_of(request) is None
    t = tags(request)
    assert t["url.path"] == "/v1/parse/streams" and t["toolbridge.parse.stream"] == stream
    assert t["toolbridge.calls"] == 2 and t["toolbridge.parse.chunks"] == 3
    assert t["toolbridge.trajectory"] == "traj-stream" and t["otel.status_code"] == "OK"
    calls = by_name["tools/call fixture__echo"]
    assert len(calls) == 2 and all(parent_of(c) == request["spanID"] for c in calls)
    chunks = sorted(by_name["toolbridge.parse.chunk"], key=lambda sp: tags(sp)["toolbridge.parse.chunk"])
    assert [tags(c)["toolbridge.parse.chunk"] for c in chunks] == [1, 2, 3]
    assert all(parent_of(c) == request["spanID"] for c in chunks)
    # The second chunk completed both calls; the last one ended the output.
    assert [tags(c)["toolbridge.calls"] for c in chunks] == [0, 2, 0]
    assert tags(chunks[1])["toolbridge.parse.chunk_bytes"] == len(first) - 20 + len(second)
    assert tags(chunks[2])["toolbridge.parse.done"] is True

    trace = jaeger.trace(trajectory_trace_id("traj-dropped"), want_spans=1)
    [span] = [sp for sp in trace["spans"] if sp["operationName"] == "POST /v1/parse/streams"]
    assert tags(span)["otel.status_code"] == "ERROR"
    assert tags(span)["toolbridge.parse.chunks"] == 0
