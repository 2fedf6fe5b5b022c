"""POST /v1/batch against a real gateway and the fixture server: results in request order,
errors per call (never a failed batch for one bad call), the timing split, fail_fast,
sequential, trajectories and tenants by header or body, the request's own limits (precise 4xx),
and 429 with Retry-After when admission sheds every call."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tb_support import fixture_server

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({
        "fixture": fixture_server(call_timeout="20s"),
        "mem": fixture_server(policy="per_session"),
    })


def post(gw, body, **headers) -> httpx.Response:
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(gw.base_url + "/v1/batch", content=content,
                      headers={"Content-Type": "application/json", **headers}, timeout=60)


def ok_batch(gw, body, **headers) -> list[dict]:
    resp = post(gw, body, **headers)
    assert resp.status_code == 200, resp.text[:500]
    return resp.json()["results"]


def text(entry: dict) -> str:
    return entry["result"]["content"][0]["text"]


def test_results_come_back_in_request_order_though_they_finish_out_of_order(gw):
    calls = [{"tool": "fixture__sleep", "arguments": {"ms": ms}} for ms in (1000, 10, 900, 0)]
    started = time.monotonic()
    results = ok_batch(gw, {"calls": calls})
    elapsed = time.monotonic() - started
    assert [text(r) for r in results] == ["slept 1000 ms", "slept 10 ms", "slept 900 ms", "slept 0 ms"]
    assert all(r["outcome"] == "ok" and r["tool"] == "fixture__sleep" for r in results)
    # Concurrent: the batch takes about as long as its longest call (1 s), not the sum (1.91 s);
    # the margin either way is wide enough for a loaded, sanitized run.
    assert elapsed < 1.7, f"{elapsed:.2f} s: the calls did not run concurrently"


def test_errors_are_per_call_and_never_fail_the_batch(gw):
    results = ok_batch(gw, {"calls": [
        {"tool": "fixture__echo", "arguments": {"text": "first"}},
        {"tool": "fixture__no_such_tool", "arguments": {}},
        {"tool": "fixture__fail", "arguments": {"message": "on purpose"}},
        {"arguments": {"text": "no tool named"}},
        {"tool": "fixture__echo", "arguments": "not an object"},
        {"tool": "fixture__sleep", "arguments": {"ms": 2000}, "timeout_ms": 100},
        {"tool": "fixture__echo", "arguments": {"text": "last"}},
    ]})
    outcomes = [r["outcome"] for r in results]
    assert outcomes == ["ok", "invalid_params", "tool_error", "invalid_params", "invalid_params",
                        "timeout", "ok"], results
    assert text(results[0]) == "first" and text(results[6]) == "last"
    assert "fixture__no_such_tool" in results[1]["error"]["message"]
    assert results[1]["error"]["code"] == -32602
    # A tool error is the server's own result, isError and all.
    assert results[2]["result"]["isError"] is True and text(results[2]) == "on purpose"
    assert results[3]["error"]["message"] == "calls[3].tool is missing (the tool's name, server__tool)"
    assert results[4]["error"]["message"] == "calls[4].arguments must be an object"
    assert results[5]["error"]["code"] == -32002 and "0.1 s" in results[5]["error"]["message"]


def test_every_result_has_its_timing_split(gw):
    results = ok_batch(gw, {"calls": [{"tool": "fixture__sleep", "arguments": {"ms": 200}},
                                      {"tool": "fixture__echo", "arguments": {"text": "x"}},
                                      {"tool": "nope__nope"}]})
    slow, fast, unknown = (r["timing"] for r in results)
    for t in (slow, fast, unknown):
        assert set(t) == {"queue_ms", "execution_ms", "total_ms"}
        assert t["queue_ms"] >= 0 and t["execution_ms"] >= 0
        assert t["queue_ms"] + t["execution_ms"] == pytest.approx(t["total_ms"], abs=0.01)
    assert 200 <= slow["execution_ms"] < 1000 and slow["queue_ms"] < 150
    assert fast["execution_ms"] < 100
    # Never sent to a server: no execution time.
    assert unknown["execution_ms"] == 0


def test_fail_fast_cancels_the_calls_left(gw):
    started = time.monotonic()
    results = ok_batch(gw, {"mode": "fail_fast", "calls": [
        {"tool": "fixture__sleep", "arguments": {"ms": 5000}},
        {"tool": "fixture__fail", "arguments": {}},
        {"tool": "fixture__sleep", "arguments": {"ms": 5000}},
    ]})
    assert time.monotonic() - started < 3, "fail_fast waited for the slow calls"
    assert [r["outcome"] for r in results] == ["cancelled", "tool_error", "cancelled"]
    assert results[0]["error"]["message"] == "not completed: call 1 failed and the batch is fail_fast"


def test_all_mode_waits_for_every_call(gw):
    results = ok_batch(gw, {"mode": "all", "calls": [
        {"tool": "fixture__fail", "arguments": {}},
        {"tool": "fixture__sleep", "arguments": {"ms": 300}}]})
    assert [r["outcome"] for r in results] == ["tool_error", "ok"]


def test_sequential_runs_one_call_at_a_time_in_order(gw):
    # Each call's answer time is after the one before it.
    calls = [{"tool": "fixture__sleep", "arguments": {"ms": 100}} for _ in range(3)]
    started = time.monotonic()
    results = ok_batch(gw, {"sequential": True, "calls": calls})
    assert time.monotonic() - started >= 0.3
    ends = []
    for r in results:
        ends.append(r["timing"]["total_ms"])
    assert ends == sorted(ends) and ends[2] - ends[0] >= 180, ends
    # Sequential and fail_fast: nothing after the failure runs.
    results = ok_batch(gw, {"sequential": True, "mode": "fail_fast", "trajectory": "seq-ff", "calls": [
        {"tool": "mem__counter"}, {"tool": "mem__fail"}, {"tool": "mem__counter"}]})
    assert [r["outcome"] for r in results] == ["ok", "tool_error", "cancelled"]
    again = ok_batch(gw, {"trajectory": "seq-ff", "calls": [{"tool": "mem__counter"}]})
    assert text(again[0]) == "2", "the call after the failure ran"


def test_a_named_trajectory_keeps_its_instance_across_batches(gw):
    for traj, expected in (("traj-a", "1"), ("traj-a", "2"), ("traj-b", "1")):
        results = ok_batch(gw, {"trajectory": traj, "calls": [{"tool": "mem__counter"}]})
        assert text(results[0]) == expected
    # The header means the same as the body field.
    results = ok_batch(gw, {"calls": [{"tool": "mem__counter"}]}, **{"X-Toolbridge-Trajectory": "traj-a"})
    assert text(results[0]) == "3"
    # Without a trajectory, a batch's calls share one instance, released when the batch ends.
    for _ in range(2):
        results = ok_batch(gw, {"sequential": True, "calls": [{"tool": "mem__counter"}] * 2})
        assert [text(r) for r in results] == ["1", "2"]
    assert httpx.delete(gw.base_url + "/sessions/traj-a").json() == {"released": 1}
    assert httpx.delete(gw.base_url + "/sessions/traj-b").json() == {"released": 1}


def test_trajectory_and_tenant_conflicts_and_ownership(gw):
    resp = post(gw, {"trajectory": "one", "calls": [{"tool": "fixture__echo"}]},
                **{"X-Toolbridge-Trajectory": "two"})
    assert resp.status_code == 400
    assert resp.json()["error"]["message"] == \
        "X-Toolbridge-Trajectory names trajectory 'two' but the body names 'one'; name one"
    resp = post(gw, {"tenant": "run-a", "calls": [{"tool": "fixture__echo"}]},
                **{"X-Toolbridge-Tenant": "run-b"})
    assert resp.status_code == 400 and "names tenant 'run-b' but the body names 'run-a'" in resp.text
    # A trajectory named by one tenant is refused to another.
    assert post(gw, {"tenant": "owner-1", "trajectory": "owned", "calls": [{"tool": "mem__counter"}]}).status_code == 200
    resp = post(gw, {"tenant": "owner-2", "trajectory": "owned", "calls": [{"tool": "mem__counter"}]})
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "trajectory_refused"
    assert "belongs to another client" in resp.json()["error"]["message"]
    resp = httpx.delete(gw.base_url + "/sessions/owned", headers={"X-Toolbridge-Tenant": "owner-1"})
    assert resp.json() == {"released": 1}


@pytest.mark.parametrize("body, status, code, message", [
    ("not json", 400, "invalid_body", "the body is not JSON"),
    ([1, 2], 400, "invalid_request", "the body must be an object"),
    ({}, 400, "invalid_request", "calls is missing"),
    ({"calls": []}, 400, "invalid_request", "calls is empty"),
    ({"calls": {}}, 400, "invalid_request", "calls must be an array"),
    ({"calls": [{"tool": "fixture__echo"}], "mode": "some"}, 400, "invalid_request",
     'mode must be "all" (the default), "fail_fast" or "tasks"'),
    ({"calls": [{"tool": "fixture__echo"}], "colls": []}, 400, "invalid_request", "unknown key 'colls'"),
    ({"calls": [{"tool": "fixture__echo"}], "timeout_ms": -1}, 400, "invalid_request", "timeout_ms must be more than 0"),
    ({"calls": [{"tool": "fixture__echo"}], "trajectory": "../x"}, 400, "invalid_request", "trajectory: character 1"),
    ({"calls": [{"tool": "fixture__echo"}] * 257}, 413, "too_many_calls",
     "a batch carries at most 256 calls (gateway.batch_max_calls); this one has 257: split it"),
])
def test_the_request_itself_is_checked_with_precise_errors(gw, body, status, code, message):
    resp = post(gw, body)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and message in error["message"], error


def test_media_type_method_and_body_size(gw):
    resp = httpx.post(gw.base_url + "/v1/batch", content=b"{}", headers={"Content-Type": "text/plain"})
    assert resp.status_code == 415 and resp.json()["error"]["code"] == "unsupported_media_type"
    resp = httpx.get(gw.base_url + "/v1/batch")
    assert resp.status_code == 405 and resp.headers["allow"] == "POST"
    # The listener's max_body_bytes (4 MiB by default) bounds the body.
    big = json.dumps({"calls": [{"tool": "fixture__echo", "arguments": {"text": "x" * (5 << 20)}}]})
    resp = post(gw, big)
    assert resp.status_code == 413


def test_the_tool_list_endpoint(gw):
    tools = httpx.get(gw.base_url + "/v1/tools").json()["tools"]
    names = {t["name"] for t in tools}
    assert {"fixture__echo", "mem__counter"} <= names


def test_batches_are_counted(gw):
    metrics = httpx.get(gw.base_url + "/metrics").text
    assert 'toolbridge_batches_total{result="accepted"}' in metrics
    assert 'toolbridge_batches_total{result="refused"}' in metrics


def test_a_batch_whose_calls_are_all_shed_gets_429_with_retry_after(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=1)}, {"admission_queue_size": 1})
    # One call takes the server's only slot, one waits in its one-place queue.
    holders = [threading.Thread(target=post, args=(gw, {"calls": [{"tool": "fixture__sleep", "arguments": {"ms": 1500}}]}))
               for _ in range(2)]
    for t in holders:
        t.start()
    gw.wait_health(lambda h: h["admission"]["servers"]["fixture"]["queued"] == 1, 10,
                   "one call on the slot and one in the queue")
    resp = post(gw, {"calls": [{"tool": "fixture__echo", "arguments": {"text": "x"}}] * 3})
    for t in holders:
        t.join()
    assert resp.status_code == 429, resp.text
    assert int(resp.headers["retry-after"]) >= 1
    error = resp.json()["error"]
    assert error["code"] == "overloaded" and "fixture is overloaded" in error["message"]
    metrics = httpx.get(gw.base_url + "/metrics").text
    assert 'toolbridge_batches_total{result="shed"} 1' in metrics
    # Once the queue drains the batch runs; its own calls compete for the slot and the queue's one
    # place like any others (the third is shed), unless it runs them one at a time.
    calls = [{"tool": "fixture__echo", "arguments": {"text": "x"}}] * 3
    assert [r["outcome"] for r in ok_batch(gw, {"calls": calls})] == ["ok", "ok", "shed"]
    assert [r["outcome"] for r in ok_batch(gw, {"calls": calls, "sequential": True})] == ["ok"] * 3


def test_a_client_that_hangs_up_cancels_its_calls(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    with pytest.raises(httpx.TimeoutException):
        httpx.post(gw.base_url + "/v1/batch", content=json.dumps({"calls": [{"tool": "fixture__hang"}] * 4}),
                   headers={"Content-Type": "application/json"}, timeout=0.5)
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, timeout=5,
                   what="the hung calls cancelled after the client left")


def test_the_batch_limits_are_configurable(gateway_factory):
    small = gateway_factory({"fixture": fixture_server()},
                            {"batch_max_calls": 3, "batch_max_result_bytes": "4KiB"})
    resp = post(small, {"calls": [{"tool": "fixture__echo", "arguments": {"text": "x"}}] * 4})
    assert resp.status_code == 413 and "at most 3 calls" in resp.json()["error"]["message"], resp.text
    # Two 3,000-byte results do not fit in 4 KiB: the second is dropped, its entry says why.
    results = ok_batch(small, {"sequential": True, "calls": [
        {"tool": "fixture__payload", "arguments": {"bytes": 3000}},
        {"tool": "fixture__payload", "arguments": {"bytes": 3000}}]})
    assert results[0]["outcome"] == "ok", results[0]
    assert results[1]["outcome"] == "overloaded", results[1]
    assert "gateway.batch_max_result_bytes" in json.dumps(results[1]), results[1]


def test_a_json_body_is_read_from_its_text_as_the_dom_read_it(gw):
    # Arguments reach the server as the client wrote them: escapes, non-ASCII, a surrogate pair.
    body = ('{"calls": [{"tool": "fixture__echo", '
            '"arguments": {"text": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \u00e9"}}]}')
    assert text(ok_batch(gw, body.encode())[0]) == 'caf\u00e9 \U0001F600 "q" \u00e9'
    # Invalid UTF-8 or a lone surrogate: the body is refused, as before.
    for bad in (b'{"calls":[{"tool":"fixture__echo","arguments":{"text":"\xff"}}]}',
                b'{"calls":[{"tool":"fixture__echo","arguments":{"text":"\\ud83d"}}]}'):
        resp = post(gw, bad)
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"]["code"] == "invalid_body"
        assert resp.json()["error"]["message"].startswith("the body is not JSON"), resp.text

    # 128 levels of arrays and objects in all are read; 129 are refused. (A tool no server has:
    # the fixture's own parser stops far below that depth.)
    def deep(levels: int) -> str:
        return ('{"calls":[{"tool":"nope__nope","arguments":{"d":'
                + "[" * levels + "]" * levels + "}}]}")
    resp = post(gw, deep(124))
    assert resp.status_code == 200 and resp.json()["results"][0]["outcome"] == "invalid_params"
    resp = post(gw, deep(125))
    assert resp.status_code == 400 and "nested deeper than 128" in resp.json()["error"]["message"]
    # A name given twice means its last value.
    results = ok_batch(gw, '{"calls":[{"tool":"fixture__nope","tool":"fixture__echo",'
                           '"arguments":{"text":"twice"}}]}')
    assert text(results[0]) == "twice"
