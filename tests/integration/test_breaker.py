"""Circuit breaker: a server that is up but keeps timing out is failed fast, then probed back."""

from __future__ import annotations

import time

import pytest

from tb_support import RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(60)


def test_breaker_opens_after_timeouts_fails_fast_and_closes_on_a_good_probe(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(call_timeout="300ms", breaker_threshold=3,
                                                    breaker_cooldown="1s")})
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(3):
            answer = s.call_tool("fixture__hang", {}, i + 1)
            assert "timed out" in text_of(answer["result"])
        assert gw.health()["servers"]["fixture"]["breaker"] == "open"

        t0 = time.monotonic()
        answer = s.call_tool("fixture__echo", {"text": "refused"}, 10)
        assert time.monotonic() - t0 < 0.2, "an open breaker must fail fast"
        assert answer["result"]["isError"] is True
        message = text_of(answer["result"])
        assert "is failing (3 calls in a row timed out" in message and "probe" in message, message

        time.sleep(1.1)
        # Half-open: one probe goes through; it succeeds, so the breaker closes.
        assert text_of(s.call_tool("fixture__echo", {"text": "probe"}, 11)["result"]) == "probe"
        assert gw.health()["servers"]["fixture"]["breaker"] == "closed"
        assert text_of(s.call_tool("fixture__echo", {"text": "normal"}, 12)["result"]) == "normal"
        assert 'toolbridge_breaker_opened_total{server="fixture"} 1' in gw.metrics()
    finally:
        s.close()


def test_a_failed_probe_reopens_the_breaker(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(call_timeout="300ms", breaker_threshold=2,
                                                    breaker_cooldown="500ms")})
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(2):
            s.call_tool("fixture__hang", {}, i + 1)
        time.sleep(0.6)
        assert "timed out" in text_of(s.call_tool("fixture__hang", {}, 3)["result"])  # the probe
        assert gw.health()["servers"]["fixture"]["breaker"] == "open"
        assert "is failing" in text_of(s.call_tool("fixture__echo", {"text": "x"}, 4)["result"])
    finally:
        s.close()
