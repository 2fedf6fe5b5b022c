"""Failure paths of one tool call: a crashing instance fails its pending calls at once and is
restarted; a hanging call hits its deadline and the gateway keeps serving."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest

from tb_support import RawSession, fixture_server, headers_for, parse_body, response_for, rpc, text_of

pytestmark = pytest.mark.timeout(90)


def outcome(answer: dict) -> tuple[bool, str]:
    """(is_error, message) of a tools/call answer, whether a JSON-RPC error or an isError result."""
    if "error" in answer:
        return True, answer["error"].get("message", "") + json.dumps(answer["error"].get("data"))
    return bool(answer["result"].get("isError")), text_of(answer["result"])


def eventually_echo(s: RawSession, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    last = None
    req_id = 1000
    while time.monotonic() < deadline:
        req_id += 1
        last = s.call_tool("fixture__echo", {"text": "back"}, req_id)
        is_error, text = outcome(last)
        if not is_error:
            return text
        time.sleep(0.2)
    raise AssertionError(f"fixture did not come back within {timeout}s: {last}")


def test_crash_fails_pending_calls_at_once_and_restarts(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(restart_backoff={"initial": "100ms"})})
    url = gw.mcp_url
    s = RawSession(url).initialize()

    async def main():
        async with httpx.AsyncClient(timeout=60) as client:
            async def post(msg):
                resp = await client.post(url, content=json.dumps(msg), headers=headers_for(s.session_id, s.version))
                assert resp.status_code == 200, resp.text[:300]
                return response_for(parse_body(resp), msg["id"])

            sleeps = [asyncio.create_task(post(rpc("tools/call", {"name": "fixture__sleep",
                                                                    "arguments": {"ms": 30000}}, i)))
                      for i in range(1, 6)]
            await asyncio.sleep(0.5)  # let the sleeps reach the fixture
            t0 = time.monotonic()
            crash = await post(rpc("tools/call", {"name": "fixture__crash", "arguments": {"code": 7}}, 99))
            pending = await asyncio.wait_for(asyncio.gather(*sleeps), 10)
            return crash, pending, time.monotonic() - t0

    try:
        crash, pending, elapsed = asyncio.run(main())
        is_error, message = outcome(crash)
        assert is_error, f"crash call did not fail: {crash}"
        for answer in pending:
            is_error, text = outcome(answer)
            assert is_error, f"a pending call on the crashed instance did not fail: {answer}"
        assert elapsed < 5, f"pending calls took {elapsed:.1f}s to fail after the crash"
        assert eventually_echo(s) == "back"
        health = gw.wait_health(lambda h: h["servers"]["fixture"]["restarts"] >= 1, 10, "restart counted")
        assert health["servers"]["fixture"]["state"] == "ready"
        restarts = re.search(r'^toolbridge_restarts_total\{[^}]*server="fixture"[^}]*\} (\S+)$', gw.metrics(), re.M)
        assert restarts and float(restarts.group(1)) >= 1, "no toolbridge_restarts_total sample for fixture"
    finally:
        s.close()


def test_crash_error_says_what_happened(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(restart_backoff={"initial": "100ms"})})
    s = RawSession(gw.mcp_url).initialize()
    try:
        is_error, message = outcome(s.call_tool("fixture__crash", {"code": 7}, 1))
        assert is_error
        low = message.lower()
        assert any(w in low for w in ("exit", "crash", "terminated", "closed", "died")), message
    finally:
        s.close()


def test_hanging_call_hits_call_timeout(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(call_timeout="1s")})
    s = RawSession(gw.mcp_url).initialize()
    try:
        t0 = time.monotonic()
        is_error, message = outcome(s.call_tool("fixture__hang", {}, 1))
        elapsed = time.monotonic() - t0
        assert is_error, message
        assert 0.8 <= elapsed < 10, f"hang answered after {elapsed:.2f}s with call_timeout 1s"
        low = message.lower()
        assert "timeout" in low or "timed out" in low or "deadline" in low, message
        assert eventually_echo(s) == "back"
    finally:
        s.close()
