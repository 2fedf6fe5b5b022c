"""Authentication on the downstream listener: API keys (bearer tokens) checked in front of every
front end, each key's tenant taken over whatever the caller says, its allowlist enforced on
calls and lists, /healthz open, the admin listener, and the refusal to listen on a non-loopback
address without keys."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tb_support import (RawSession, fixture_server, parse_body, response_for, rpc, text_of,
                        toolbridge_bin, write_config)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import toolbridge  # noqa: E402

TOKEN_A = "team-a-token-0123456789abcdef"
TOKEN_B = "team-b-token-0123456789abcdef"


def auth_config(**extra) -> dict:
    return {"auth": {"keys": [
        {"name": "a", "token": TOKEN_A, "tenant": "team-a"},
        {"name": "b", "token": TOKEN_B, "tenant": "team-b", "allow": ["fixture__echo", "other"]},
    ]}, **extra}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def session(gw, token: str) -> RawSession:
    return RawSession(gw.mcp_url, client=httpx.Client(timeout=60, headers=bearer(token))).initialize()


@pytest.fixture
def traced_gateway(gateway_factory, tmp_path):
    trace = tmp_path / "calls.jsonl"
    servers = {"fixture": fixture_server(), "other": fixture_server()}
    gw = gateway_factory(servers, auth_config(trace=str(trace)))
    return gw, trace


def trace_tenants(path: Path, want: int) -> list[str]:
    deadline = time.monotonic() + 10
    lines: list[dict] = []
    while time.monotonic() < deadline:
        lines = [json.loads(x) for x in (path.read_text() if path.exists() else "").splitlines() if x]
        if len(lines) >= want:
            return [line["tenant"] for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"{len(lines)} trace lines, wanted {want}")


def test_without_a_valid_token_every_endpoint_but_healthz_answers_401(traced_gateway):
    gw, _ = traced_gateway
    assert httpx.get(gw.base_url + "/healthz").status_code == 200
    init = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}, 0)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    missing = httpx.post(gw.mcp_url, json=init, headers=headers)
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"] == 'Bearer realm="toolbridge"'
    assert "needs an API key" in missing.json()["error"]["message"]
    wrong = httpx.post(gw.mcp_url, json=init, headers={**headers, **bearer(TOKEN_A + "x")})
    assert wrong.status_code == 401
    assert wrong.headers["www-authenticate"] == 'Bearer realm="toolbridge", error="invalid_token"'
    for method, path in [("GET", "/metrics"), ("POST", "/v1/batch"), ("GET", "/v1/tools"),
                         ("GET", "/sse"), ("GET", "/dashboard"), ("GET", "/v1/trajectories"),
                         ("DELETE", "/sessions/x"), ("POST", "/t/traj-1/mcp")]:
        r = httpx.request(method, gw.base_url + path, headers={"Authorization": "Basic eDp5"})
        assert r.status_code == 401, (method, path, r.status_code)
    assert httpx.get(gw.base_url + "/metrics", headers=bearer(TOKEN_A)).status_code == 200
    # The key never reaches the log.
    assert TOKEN_A not in gw.stderr_tail(10_000) and TOKEN_B not in gw.stderr_tail(10_000)


def test_the_tenant_comes_from_the_key_not_from_the_caller(traced_gateway):
    gw, trace = traced_gateway
    s = RawSession(gw.mcp_url, client=httpx.Client(
        timeout=60, headers={**bearer(TOKEN_A), "X-Toolbridge-Tenant": "someone-else"})).initialize()
    answer = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "hi"},
                                      "_meta": {"toolbridge/tenant": "also-not-me"}}, 1)
    assert text_of(answer["result"]) == "hi"
    with toolbridge.Client(gw.base_url, token=TOKEN_B, tenant="not-b-either") as c:
        assert c.call("fixture__echo", {"text": "x"}).text == "x"

    async def async_call() -> str:
        async with toolbridge.AsyncClient(gw.base_url, token=TOKEN_A, tenant="nope") as c:
            return (await c.call("fixture__echo", {"text": "async"})).text
    assert asyncio.run(async_call()) == "async"
    assert trace_tenants(trace, 3) == ["team-a", "team-b", "team-a"]


def test_the_allowlist_limits_calls_and_lists(traced_gateway):
    gw, _ = traced_gateway
    b = session(gw, TOKEN_B)
    names = {t["name"] for t in b.request("tools/list", {}, 1)["result"]["tools"]}
    assert "fixture__echo" in names and "other__echo" in names and "other__add" in names
    assert not any(n.startswith("fixture__") and n != "fixture__echo" for n in names), names
    refused = b.call_tool("fixture__add", {"a": 1, "b": 2}, 2)
    assert refused["error"]["code"] == -32006, refused
    assert refused["error"]["message"] == (
        "fixture__add is not allowed for API key 'b' (it may use: fixture__echo, other)")
    assert text_of(b.call_tool("other__add", {"a": 1, "b": 2}, 3)["result"]) == "3"
    # Key a has no allowlist: it sees and calls everything.
    a = session(gw, TOKEN_A)
    assert len(a.request("tools/list", {}, 1)["result"]["tools"]) > len(names)
    with toolbridge.Client(gw.base_url, token=TOKEN_B) as c:
        assert {t["name"] for t in c.tools()} == names
        # A request whose every call is outside the allowlist: 403.
        with pytest.raises(toolbridge.Forbidden) as refused_request:
            c.call("fixture__add", {"a": 1, "b": 2})
        assert refused_request.value.status == 403
        assert "not allowed for API key 'b'" in refused_request.value.message
        # A batch with some allowed calls: those run, the others are `forbidden` entries.
        ok, forbidden = c.batch([("fixture__echo", {"text": "in"}), ("fixture__add", {"a": 1, "b": 2})])
        assert ok.text == "in" and forbidden.outcome == "forbidden"
        with pytest.raises(toolbridge.CallForbidden) as info:
            forbidden.raise_for_outcome()
        assert info.value.code == -32006
    raw = httpx.post(gw.base_url + "/v1/batch", headers=bearer(TOKEN_B),
                     json={"calls": [{"tool": "fixture__add", "arguments": {"a": 1, "b": 2}}]})
    assert raw.status_code == 403 and raw.json()["error"]["code"] == "forbidden", raw.text
    with toolbridge.Client(gw.base_url) as anonymous, pytest.raises(toolbridge.Unauthorized):
        anonymous.call("fixture__echo", {"text": "x"})


def test_a_session_answers_only_to_the_key_that_opened_it(traced_gateway):
    gw, _ = traced_gateway
    a = session(gw, TOKEN_A)
    resp = httpx.post(gw.mcp_url, content=json.dumps(rpc("tools/list", {}, 1)), headers={
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "Mcp-Session-Id": a.session_id, "MCP-Protocol-Version": "2025-06-18", **bearer(TOKEN_B)})
    assert resp.status_code == 404, resp.text
    assert response_for(parse_body(a.post(rpc("ping", {}, 7))), 7)["result"] == {}


def test_the_admin_listener_serves_the_operator_endpoints_without_a_token(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, auth_config(admin_listen="127.0.0.1:0"))
    match = re.search(r"admin endpoints \(no token\) at (http://127\.0\.0\.1:\d+)", gw.stderr_tail(200))
    assert match, gw.stderr_tail(200)
    admin = match.group(1)
    assert httpx.get(admin + "/metrics").status_code == 200
    assert "toolbridge_connections" in httpx.get(admin + "/metrics").text
    assert httpx.get(admin + "/healthz").status_code == 200
    assert httpx.post(admin + "/mcp").status_code == 404  # calls only on the main listener
    assert httpx.get(gw.base_url + "/metrics").status_code == 401


def serve(tmp_path: Path, gateway: dict, listen: str) -> subprocess.Popen:
    config = write_config(tmp_path, {"fixture": fixture_server()}, gateway)
    return subprocess.Popen([str(toolbridge_bin()), "serve", "--config", str(config), "--listen", listen],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_refuses_to_listen_on_every_address_without_keys(tmp_path):
    proc = serve(tmp_path, {}, "0.0.0.0:0")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, (out, err)
    assert "refusing to listen on 0.0.0.0 without authentication" in err
    assert "gateway.allow_unauthenticated: true" in err
    assert out == ""


@pytest.mark.parametrize("gateway", [{"allow_unauthenticated": True}, auth_config()])
def test_listens_on_every_address_when_told_or_with_keys(tmp_path, gateway):
    proc = serve(tmp_path, gateway, "0.0.0.0:0")
    try:
        line = proc.stdout.readline()
        match = re.match(r"^listening on http://0\.0\.0\.0:(\d+)$", line)
        assert match, line
        # Served (and its signal handlers in place) before it is stopped.
        assert httpx.get(f"http://127.0.0.1:{match.group(1)}/healthz", timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_the_cli_sends_the_key_from_the_environment(traced_gateway):
    gw, _ = traced_gateway
    import os
    cmd = [str(toolbridge_bin()), "call", "fixture__echo", "text=from the cli", "--url", gw.mcp_url]
    denied = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                            env={k: v for k, v in os.environ.items() if k != "TOOLBRIDGE_TOKEN"})
    assert denied.returncode == 2 and "Unauthorized: this gateway needs an API key" in denied.stderr, denied
    allowed = subprocess.run(cmd, capture_output=True, text=True, timeout=30,
                             env={**os.environ, "TOOLBRIDGE_TOKEN": TOKEN_A})
    assert allowed.returncode == 0 and "from the cli" in allowed.stdout, allowed


def own_non_loopback_address() -> str | None:
    """An IPv4 address of this machine that is not loopback (the default route's source)."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a source address
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.mark.parametrize("dashboard", ["loopback", "anywhere"])
def test_the_dashboard_answers_loopback_clients_only_unless_told(tmp_path, dashboard):
    address = own_non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address to come from")
    proc = serve(tmp_path, {"allow_unauthenticated": True, "dashboard": dashboard}, "0.0.0.0:0")
    try:
        match = re.match(r"^listening on http://0\.0\.0\.0:(\d+)$", proc.stdout.readline())
        assert match
        port = match.group(1)
        for path in ("/dashboard", "/v1/trajectories"):
            assert httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).status_code == 200
            remote = httpx.get(f"http://{address}:{port}{path}", timeout=10)
            if dashboard == "anywhere":
                assert remote.status_code == 200, remote.text
            else:
                assert remote.status_code == 403, remote.text
                assert f"answer loopback clients only, not {address}" in remote.text, remote.text
        # The rest of the gateway serves that client as any other.
        assert httpx.get(f"http://{address}:{port}/healthz", timeout=10).status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0
