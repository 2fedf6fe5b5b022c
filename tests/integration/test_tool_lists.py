"""Tool lists never stall an agent: downstream tools/list is answered from the gateway's catalog
in memory while an upstream re-lists slowly (stale-while-revalidate), and a server whose list
cannot be read again is reported in /healthz, its last good list still served, retried with
backoff until it works. The fixture's `slow_lists` tool makes its own later tools/list slow or
failing and announces notifications/tools/list_changed."""

from __future__ import annotations

import time

import pytest

from tb_support import RawSession, fixture_server

pytestmark = [pytest.mark.timeout(120)]

BACKOFF = {"initial": "200ms", "max": "1s"}


def tool_names(s: RawSession, req_id: int) -> list[str]:
    answer = s.request("tools/list", {}, req_id)
    return sorted(t["name"] for t in answer["result"]["tools"])


def test_a_slow_upstream_tools_list_never_delays_a_downstream_one(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(startup_timeout="20s", restart_backoff=BACKOFF)})
    s = RawSession(gw.mcp_url).initialize()
    before = tool_names(s, 1)
    assert "fixture__lookup" in before
    answer = s.call_tool("fixture__slow_lists", {"ms": 5000}, 2)
    assert not answer["result"].get("isError"), answer
    # The gateway is re-listing now (5 s upstream); downstream lists come from memory.
    worst = 0.0
    for i in range(10):
        start = time.monotonic()
        assert tool_names(s, 10 + i) == before
        worst = max(worst, time.monotonic() - start)
        time.sleep(0.2)
    # Held up by the re-listing, a list would take the upstream's 5 s.
    assert worst < 2.5, f"a downstream tools/list took {worst:.2f}s while the upstream re-listed"
    # Calls are not held up either.
    start = time.monotonic()
    assert s.call_tool("fixture__echo", {"text": "hi"}, 30)["result"]["content"][0]["text"] == "hi"
    assert time.monotonic() - start < 2.5


def test_an_unreadable_list_is_reported_and_the_last_good_one_served(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(restart_backoff=BACKOFF)})
    s = RawSession(gw.mcp_url).initialize()
    before = tool_names(s, 1)
    s.call_tool("fixture__slow_lists", {"fail": True}, 2)
    health = gw.wait_health(lambda h: "list_error" in h["servers"]["fixture"], 10,
                            "the failed re-list reported in /healthz")
    server = health["servers"]["fixture"]
    assert "tools/list failed" in server["list_error"], server
    assert health["status"] == "degraded"
    assert tool_names(s, 3) == before  # not silently dropped
    # Retried with backoff: more failures pile up while it keeps failing.
    gw.wait_health(lambda h: h["servers"]["fixture"].get("list_failures", 0) >= 3, 10,
                   "re-listing retried")
    s.call_tool("fixture__slow_lists", {"fail": False}, 4)
    health = gw.wait_health(lambda h: "list_error" not in h["servers"]["fixture"], 10,
                            "the list readable again")
    assert health["status"] == "ok"
    assert tool_names(s, 5) == before
