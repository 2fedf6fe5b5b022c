"""Deadlines and shutdown: a server that stops answering is recycled, SIGTERM drains calls,
cancellation reaches the server. Timeouts as tool results, the caller's shorter deadline and per
tool timeouts run on simulated time: tests/unit/gateway/simulated_time_test.cpp."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from tb_support import RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(90)


def test_unresponsive_server_is_recycled(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(call_timeout="500ms", ping_timeout="500ms")})
    pid = gw.health()["servers"]["fixture"]["pid"]
    s = RawSession(gw.mcp_url).initialize()
    try:
        os.kill(pid, signal.SIGSTOP)  # alive but answering nothing, like a wedged process
        answer = s.call_tool("fixture__echo", {"text": "lost"}, 1)
        assert answer["result"]["isError"] is True
        health = gw.wait_health(lambda h: h["servers"]["fixture"].get("pid") not in (None, pid)
                                and h["servers"]["fixture"]["state"] == "ready", 15, "a new fixture instance")
        assert "stopped responding" in health["servers"]["fixture"]["last_error"]
        assert text_of(s.call_tool("fixture__echo", {"text": "fresh"}, 2)["result"]) == "fresh"
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        s.close()


def test_sigterm_lets_calls_in_flight_finish(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"shutdown_grace": "5s"})
    s = RawSession(gw.mcp_url).initialize()
    result = {}

    def slow_call():
        result["answer"] = s.call_tool("fixture__sleep", {"ms": 1500}, 1)
        result["answered_at"] = time.monotonic()

    t = threading.Thread(target=slow_call)
    t.start()
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 5, "the call in flight")
    gw.proc.send_signal(signal.SIGTERM)
    t.join(10)
    assert text_of(result["answer"]["result"]) == "slept 1500 ms"
    assert gw.proc.wait(10) == 0
    # The drain wakes at the last call's answer: the exit follows it at once, not at the end of
    # shutdown_grace (5 s after the signal, ~3.5 s after the answer).
    assert time.monotonic() - result["answered_at"] < 2.0


def test_agent_cancellation_reaches_the_server_and_releases_the_request(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(call_timeout="30s")})
    s = RawSession(gw.mcp_url).initialize()
    out = {}

    def hanging_call():
        t0 = time.monotonic()
        out["response"] = s.post({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                                  "params": {"name": "fixture__hang", "arguments": {}}})
        out["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=hanging_call)
    t.start()
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 5, "the call in flight")
    r = s.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 42, "reason": "user gave up"}})
    assert r.status_code == 202
    t.join(10)
    assert out["elapsed"] < 5, "the cancelled request's POST must be released"
    assert out["response"].status_code == 202 and out["response"].text == ""
    assert gw.health()["servers"]["fixture"]["in_flight"] == 0
    # The session and the server keep working.
    assert text_of(s.call_tool("fixture__echo", {"text": "after"}, 43)["result"]) == "after"


def cancel_while_waiting(s: RawSession, gw, req_id: int, name: str, waiting) -> tuple[float, int]:
    """Posts a call that will wait, cancels it once `waiting(health)` holds; returns how long
    the call's POST took and its status."""
    out = {}

    def call():
        t0 = time.monotonic()
        out["response"] = s.post({"jsonrpc": "2.0", "id": req_id, "method": "tools/call",
                                  "params": {"name": name, "arguments": {"text": "x"}}})
        out["elapsed"] = time.monotonic() - t0

    t = threading.Thread(target=call)
    t.start()
    gw.wait_health(waiting, 5, "the call waiting")
    time.sleep(0.5)  # the call is in its wait by now
    r = s.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": req_id, "reason": "user gave up"}})
    assert r.status_code == 202
    t.join(15)
    return out["elapsed"], out["response"].status_code


def test_cancel_releases_a_call_waiting_for_its_server_to_start(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server("--init-delay-ms", "6000", call_timeout="30s")},
                         {"ready_timeout": "0"}, ready=[])
    s = RawSession(gw.mcp_url).initialize()
    elapsed, status = cancel_while_waiting(
        s, gw, 51, "fixture__echo", lambda h: h["servers"]["fixture"]["state"] == "starting")
    assert elapsed < 3, f"the cancelled call's POST took {elapsed:.1f} s (the server starts in 6 s)"
    assert status == 202
    gw.wait_ready(["fixture"], 30)
    assert text_of(s.call_tool("fixture__echo", {"text": "after"}, 52)["result"]) == "after"


def test_cancel_releases_a_call_waiting_for_an_instance(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0, max_instances=1,
                                                    checkout_timeout="20s", call_timeout="30s")})
    a = RawSession(gw.mcp_url).initialize()
    b = RawSession(gw.mcp_url).initialize()
    assert text_of(a.call_tool("fixture__echo", {"text": "a"}, 1)["result"]) == "a"
    elapsed, status = cancel_while_waiting(
        b, gw, 61, "fixture__echo", lambda h: h["servers"]["fixture"]["sessions_bound"] == 1)
    assert elapsed < 3, f"the cancelled call's POST took {elapsed:.1f} s (checkout_timeout 20 s)"
    assert status == 202
    assert text_of(a.call_tool("fixture__echo", {"text": "still a"}, 2)["result"]) == "still a"
