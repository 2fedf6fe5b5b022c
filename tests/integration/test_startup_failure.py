"""Broken servers do not take the gateway down: the healthy one serves, the broken ones are
reported in /healthz with an actionable last_error, and the status is degraded."""

from __future__ import annotations

import pytest

from tb_support import Gateway, RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(90)

BROKEN_STATES = ("backoff", "failed")
MISSING = "/nonexistent/toolbridge-no-such-binary"


@pytest.fixture
def gw(tmp_path, binaries):
    servers = {
        "fixture": fixture_server(),
        "missing": {"command": MISSING, "args": []},
        "quitter": {"command": "false", "args": []},
        "slow": fixture_server("--init-delay-ms", "60000", startup_timeout="1s"),
    }
    gw = Gateway(tmp_path, servers)
    gw.start()
    try:
        gw.wait_ready(["fixture"], timeout=30)

        def all_broken_reported(h):
            s = h.get("servers", {})
            return all(s.get(n, {}).get("state") in BROKEN_STATES and s[n].get("last_error")
                       for n in ("missing", "quitter", "slow"))

        gw.health_when_broken = gw.wait_health(all_broken_reported, 20, "broken servers in backoff/failed")
        yield gw
    except BaseException:
        gw.kill_quietly()
        raise
    gw.close()


def test_fixture_still_serves(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("fixture__echo", {"text": "alive"}, 1)
        assert text_of(answer["result"]) == "alive"
        tools = s.request("tools/list", {}, 2)["result"]["tools"]
        servers = {t["name"].split("__", 1)[0] for t in tools}
        assert servers == {"fixture"}, sorted(t["name"] for t in tools)
    finally:
        s.close()


def test_health_is_degraded_and_names_problems(gw):
    health = gw.health_when_broken
    assert health["status"] == "degraded", health
    servers = health["servers"]
    assert servers["fixture"]["state"] == "ready"
    assert servers["fixture"]["tools"] >= 12

    missing = servers["missing"]["last_error"].lower()
    assert MISSING.lower() in missing or "no such file" in missing or "not found" in missing, missing

    quitter = servers["quitter"]["last_error"].lower()
    assert "exit" in quitter or "status 1" in quitter or "code 1" in quitter, quitter

    slow = servers["slow"]["last_error"].lower()
    assert "timeout" in slow or "timed out" in slow, slow
    assert "initiali" in slow or "startup" in slow or "1s" in slow or "1000" in slow, slow

    for name in ("missing", "quitter", "slow"):
        assert servers[name]["tools"] == 0, servers[name]


def test_healthz_http_status(gw):
    import httpx

    resp = httpx.get(gw.base_url + "/healthz", timeout=10)
    # 200 while it serves (docs/endpoints.md): the other servers' tools still work, so a load
    # balancer must keep sending; the body says what is wrong.
    assert resp.status_code == 200, resp.text[:300]
    assert resp.json()["status"] == "degraded"


def test_broken_server_tool_call_fails_clearly(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        resp = s.post({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                       "params": {"name": "slow__echo", "arguments": {"text": "x"}}})
        assert resp.status_code == 200
        from tb_support import parse_body, response_for

        answer = response_for(parse_body(resp), 5)
        text = answer["error"]["message"] if "error" in answer else text_of(answer["result"])
        assert "error" in answer or answer["result"].get("isError"), answer
        assert "slow" in text, answer
    finally:
        s.close()
