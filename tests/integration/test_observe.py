"""Where a run's time goes: the call trace (one JSON line per call, every outcome, rotation),
the trajectory view under concurrent calls, the dashboard's endpoints and who may see them, and
W3C trace context carried from the caller to the server."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tb_support import RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(120)

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def trace_lines(path: Path, want: int, timeout: float = 10.0) -> list[dict]:
    """The trace's lines once at least `want` are written (the writer is asynchronous)."""
    deadline = time.monotonic() + timeout
    lines: list[dict] = []
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        lines = [json.loads(line) for line in text.splitlines() if line]
        if len(lines) >= want:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"{len(lines)} trace lines after {timeout} s, wanted {want}: {lines}")


def with_meta(arguments: dict, **meta) -> dict:
    return {"arguments": arguments, "_meta": meta}


@pytest.fixture
def traced(gateway_factory, tmp_path):
    trace = tmp_path / "trace" / "calls.jsonl"
    trace.parent.mkdir()
    servers = {
        "fixture": fixture_server(param_aliases={"q": "query"}),
        # One slot and one queue place: a third call is shed at once.
        "narrow": fixture_server(concurrency_limit=1),
    }
    gw = gateway_factory(servers, {"trace": {"file": str(trace)}, "admission_queue_size": 1})
    gw.wait_ready()
    return gw, trace


def call(s: RawSession, name: str, arguments: dict, req_id: int, **meta) -> dict:
    params = {"name": name, "arguments": arguments}
    if meta:
        params["_meta"] = meta
    return s.request("tools/call", params, req_id)


def test_every_outcome_writes_one_trace_line(traced):
    gw, trace = traced
    s = RawSession(gw.mcp_url).initialize()
    try:
        assert not call(s, "fixture__echo", {"text": "hi"}, 1, **{"toolbridge/session": "traj-1"})["result"].get("isError")
        assert call(s, "fixture__fail", {"message": "no"}, 2)["result"]["isError"]
        timed_out = call(s, "fixture__sleep", {"ms": 5000}, 3, **{"toolbridge/timeout_ms": 200})
        assert "timed out" in text_of(timed_out["result"]), timed_out
        repaired = call(s, "fixture__search", {"q": "cats"}, 4)
        assert repaired["result"]["_meta"]["toolbridge/repairs"], repaired
        crashed = call(s, "fixture__crash", {"code": 3}, 5)
        assert crashed["result"]["isError"], crashed

        # narrow: one call holds the slot, one waits, the third is shed.
        hold = [None, None]

        def occupy(i: int) -> None:
            other = RawSession(gw.mcp_url).initialize()
            try:
                hold[i] = call(other, "narrow__sleep", {"ms": 1500}, 10 + i)
            finally:
                other.close()

        threads = [threading.Thread(target=occupy, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        gw.wait_health(lambda h: h["admission"]["servers"]["narrow"]["queued"] == 1, 10,
                       "one narrow call on the slot and one in the queue")
        shed = call(s, "narrow__echo", {"text": "x"}, 6)
        assert "overloaded" in text_of(shed["result"]), shed
        for t in threads:
            t.join()
    finally:
        s.close()

    lines = trace_lines(trace, 8)
    by_tool: dict[str, list[dict]] = {}
    for line in lines:
        by_tool.setdefault(line["tool"], []).append(line)
    ok = by_tool["fixture__echo"][0]
    assert ok["outcome"] == "ok" and ok["trajectory"] == "traj-1" and ok["server"] == "fixture"
    assert ok["pid"] > 0 and ok["argument_bytes"] == len(json.dumps({"text": "hi"})) and ok["result_bytes"] > 0
    assert ok["total_s"] >= ok["execution_s"] > 0 and ok["queue_s"] >= 0
    assert abs(ok["time_ms"] / 1000 - time.time()) < 120
    assert by_tool["fixture__fail"][0]["outcome"] == "tool_error"
    assert by_tool["fixture__sleep"][0]["outcome"] == "timeout"
    assert by_tool["fixture__search"][0]["repairs"] >= 1
    assert by_tool["fixture__crash"][0]["outcome"] == "crashed"
    shed_line = by_tool["narrow__echo"][0]
    assert shed_line["outcome"] == "shed" and shed_line["execution_s"] == 0 and shed_line["pid"] == 0
    queued = sorted(by_tool["narrow__sleep"], key=lambda x: x["queue_s"])
    assert queued[-1]["queue_s"] > 0.5, queued  # the second waited for the first's slot
    seqs = [line["seq"] for line in lines]
    assert len(set(seqs)) == len(seqs)
    metrics = gw.metrics()
    assert 'toolbridge_trace_lines_total{result="dropped"} 0' in metrics
    assert 'toolbridge_call_queue_seconds_count{server="narrow",tool="narrow__sleep"} 2' in metrics
    assert 'toolbridge_call_execution_seconds_count{server="fixture",tool="fixture__echo"} 1' in metrics


def test_traceparent_reaches_the_server_and_the_trace(traced):
    gw, trace = traced
    s = RawSession(gw.mcp_url).initialize()
    try:
        # From the header: added to the upstream call's _meta.
        resp = s.post({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "fixture__meta", "arguments": {}}}, traceparent=TRACEPARENT)
        seen = json.loads(text_of(resp.json()["result"]))
        assert seen.get("traceparent") == TRACEPARENT, seen
        # From _meta: passed on as it was; the header does not override it.
        other = TRACEPARENT.replace("00f067aa0ba902b7", "1111111111111111")
        resp = s.post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "fixture__meta", "arguments": {},
                                  "_meta": {"traceparent": other, "toolbridge/session": "tp"}}},
                      traceparent=TRACEPARENT)
        seen = json.loads(text_of(resp.json()["result"]))
        assert seen == {"traceparent": other}, seen  # the gateway's own keys are taken out
        # A malformed header is ignored, never forwarded.
        resp = s.post({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "fixture__meta", "arguments": {}}},
                      traceparent="00-zzzz-1")
        assert "traceparent" not in json.loads(text_of(resp.json()["result"]))
    finally:
        s.close()
    lines = trace_lines(trace, 3)
    assert [line.get("traceparent") for line in lines] == [TRACEPARENT, other, None]


def test_the_trace_file_rotates_by_size(gateway_factory, tmp_path):
    trace = tmp_path / "calls.jsonl"
    gw = gateway_factory({"fixture": fixture_server()},
                         {"trace": {"file": str(trace), "max_bytes": "4KiB", "files": 2}})
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(120):
            call(s, "fixture__echo", {"text": f"call {i}"}, i)
    finally:
        s.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and 'result="written"} 120' not in gw.metrics():
        time.sleep(0.05)
    files = [trace, trace.with_name("calls.jsonl.1"), trace.with_name("calls.jsonl.2")]
    assert all(f.exists() for f in files), list(tmp_path.iterdir())
    assert not trace.with_name("calls.jsonl.3").exists()
    assert all(f.stat().st_size <= 4096 for f in files), [f.stat().st_size for f in files]
    # The newest lines are in the current file, whole.
    last = [json.loads(line) for line in trace.read_text().splitlines()]
    assert last and last[-1]["argument_bytes"] == len(json.dumps({"text": "call 119"}))


def test_an_unwritable_trace_file_stops_the_gateway_at_start(gateway_factory, tmp_path):
    with pytest.raises(AssertionError, match="trace: opening .*nowhere/calls.jsonl"):
        gateway_factory({"fixture": fixture_server()},
                        {"trace": str(tmp_path / "nowhere" / "calls.jsonl")})


def test_the_trajectory_view_under_concurrent_calls(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    gw.wait_ready()
    trajectories = [f"run-7:task-{i}" for i in range(8)]
    errors: list[str] = []
    started = threading.Event()

    def agent(name: str) -> None:
        s = RawSession(gw.mcp_url).initialize()
        try:
            for i in range(10):
                started.set()
                r = call(s, "fixture__sleep", {"ms": 40}, i, **{"toolbridge/session": name})
                if r["result"].get("isError"):
                    errors.append(str(r))
        finally:
            s.close()

    threads = [threading.Thread(target=agent, args=(t,)) for t in trajectories]
    for t in threads:
        t.start()
    assert started.wait(10)
    # A call is in flight once the fixture holds one (the call log counts it before that).
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] > 0, 10, "a call in flight")
    busy = httpx.get(gw.base_url + "/v1/trajectories", timeout=10).json()
    assert busy["in_flight"] > 0, busy
    current = [t for t in busy["trajectories"] if "current" in t]
    assert current and current[0]["current"]["tool"] == "fixture__sleep", busy
    for t in threads:
        t.join()
    assert not errors, errors

    for name in trajectories:
        resp = httpx.get(gw.base_url + "/v1/trajectories/" + quote(name, safe=""), timeout=10)
        assert resp.status_code == 200, resp.text
        view = resp.json()
        assert view["trajectory"] == name
        calls = view["calls"]
        assert len(calls) == 10 and all(c["trajectory"] == name for c in calls)
        assert [c["seq"] for c in calls] == sorted(c["seq"] for c in calls)
        assert view["summary"]["calls"] == 10 and view["summary"]["errors"] == 0
        assert view["summary"]["in_flight"] == 0 and view["active"] == []
        assert view["summary"]["tool_seconds"] >= 10 * 0.04
        assert view["summary"]["slowest_call"]["total_s"] >= 0.04
    after = httpx.get(gw.base_url + "/v1/trajectories", timeout=10).json()
    assert after["in_flight"] == 0
    assert set(trajectories) <= {t["trajectory"] for t in after["trajectories"]}

    missing = httpx.get(gw.base_url + "/v1/trajectories/nobody", timeout=10)
    assert missing.status_code == 404 and "nobody" in missing.json()["error"]
    hostile = httpx.get(gw.base_url + "/v1/trajectories/" + "%41" * 4000, timeout=10)
    assert hostile.status_code == 400


def test_the_dashboard_and_its_state(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    gw.wait_ready()
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(5):
            call(s, "fixture__echo", {"text": "x"}, i, **{"toolbridge/session": "dash"})
    finally:
        s.close()
    page = httpx.get(gw.base_url + "/dashboard", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/dashboard/state" in page.text and "http" not in page.text.split("<script>")[0].lower()
    state = httpx.get(gw.base_url + "/dashboard/state", timeout=10).json()
    assert state["health"]["servers"]["fixture"]["state"] == "ready"
    assert state["calls"]["all"]["calls"] == 5 and state["calls"]["all"]["outcomes"] == {"ok": 5}
    assert state["calls"]["servers"]["fixture"]["p99_s"] > 0
    assert state["totals"]["calls"] == 5 and state["trace"] is None


def test_the_dashboard_can_be_turned_off(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, {"dashboard": "off"})
    for path in ("/dashboard", "/dashboard/state", "/v1/trajectories", "/v1/trajectories/x"):
        resp = httpx.get(gw.base_url + path, timeout=10)
        assert resp.status_code == 403 and "dashboard: off" in resp.text, (path, resp.text)


def test_batch_calls_are_traced_with_their_traceparent(traced):
    gw, trace = traced
    resp = httpx.post(gw.base_url + "/v1/batch", timeout=30,
                      headers={"Content-Type": "application/json", "traceparent": TRACEPARENT},
                      content=json.dumps({"trajectory": "batch-traj",
                                          "calls": [{"tool": "fixture__meta", "arguments": {}},
                                                    {"tool": "fixture__echo", "arguments": {"text": "b"}}]}))
    assert resp.status_code == 200, resp.text
    results = resp.json()["results"]
    seen = json.loads(results[0]["result"]["content"][0]["text"])
    assert seen.get("traceparent") == TRACEPARENT, seen
    lines = trace_lines(trace, 2)
    assert {line["tool"] for line in lines} == {"fixture__meta", "fixture__echo"}
    assert all(line["trajectory"] == "batch-traj" and line["traceparent"] == TRACEPARENT for line in lines)
    assert 'toolbridge_breaker_state{server="fixture"} 0' in gw.metrics()


def test_batches_without_a_trajectory_are_not_listed_as_trajectories(traced):
    # Each such batch runs under a key of its own; were it a trajectory, every batch would push
    # a real trajectory out of the view (and cost a turn of its eviction).
    gw, trace = traced
    for i in range(3):
        resp = httpx.post(gw.base_url + "/v1/batch", timeout=30,
                          headers={"Content-Type": "application/json"},
                          content=json.dumps({"calls": [{"tool": "fixture__echo", "arguments": {"text": str(i)}}]}))
        assert resp.status_code == 200, resp.text
    lines = trace_lines(trace, 3)
    assert [line["trajectory"] for line in lines] == ["-", "-", "-"]
    listed = httpx.get(gw.base_url + "/v1/trajectories", timeout=10).json()["trajectories"]
    assert [row["trajectory"] for row in listed] == ["-"], listed


def test_a_cache_hit_is_traced_as_cached(gateway_factory, tmp_path):
    trace = tmp_path / "calls.jsonl"
    gw = gateway_factory({"fixture": fixture_server(cache={"tools": ["echo"], "ttl": "10m"})},
                         {"trace": str(trace)})
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(2):
            call(s, "fixture__echo", {"text": "same"}, i)
    finally:
        s.close()
    first, second = trace_lines(trace, 2)
    assert first["cached"] is False and first["pid"] > 0
    assert second["cached"] is True and second["outcome"] == "ok" and second["execution_s"] == 0
    state = httpx.get(gw.base_url + "/dashboard/state", timeout=10).json()
    assert state["totals"]["cache_hits"] == 1 and state["totals"]["cache_misses"] == 1
