"""Downstream bounds and protections (issues 10 and 33): connections (a whole 503 over a client's
cap, the backlog at max_connections, Connection: close near a cap), idle and write timeouts,
sessions reclaimed only when idle past session_reclaim_after, clients that hang up, who may use and release a trajectory, and the
DNS-rebinding check on every endpoint."""

from __future__ import annotations

import json
import os
import socket
import threading
import time

import httpx
import pytest

from tb_support import (RawSession, fixture_server, headers_for, initialize_params, parse_body,
                        response_for, rpc, text_of)

pytestmark = pytest.mark.timeout(90)

PROTOCOL = "2025-06-18"


def port_of(gw) -> int:
    return int(gw.mcp_url.rsplit(":", 1)[1].split("/")[0])


def connect(gw) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port_of(gw)), timeout=10)


def closed_by_server(s: socket.socket, within: float) -> bool:
    """True if the server closes `s` within `within` seconds (whatever it sent first)."""
    s.settimeout(0.2)
    until = time.monotonic() + within
    while time.monotonic() < until:
        try:
            data = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return True
        if not data:
            return True
    return False


def raw_post(gw, sid: str, payload: dict, **headers: str) -> bytes:
    body = json.dumps(payload).encode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: " + sid.encode() +
            b"\r\nMCP-Protocol-Version: " + PROTOCOL.encode() + b"\r\n" + extra.encode() +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def test_admin_endpoints_refuse_a_rebound_host(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    base = gw.mcp_url[: -len("/mcp")]
    evil = {"Host": "evil.example:8848"}
    for method, path in [("GET", "/healthz"), ("GET", "/metrics"), ("DELETE", "/sessions/x")]:
        resp = httpx.request(method, base + path, headers=evil, timeout=10)
        assert resp.status_code == 403, (path, resp.status_code, resp.text)
        assert "evil.example" in resp.json()["error"]["message"]
        assert httpx.request(method, base + path, timeout=10).status_code == 200, path


def read_response(s: socket.socket, within: float = 10.0) -> bytes:
    """One whole HTTP response (headers and Content-Length body) read from `s`."""
    s.settimeout(within)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_idle_connections_stay_open_at_the_cap_and_close_after_idle_timeout(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()},
                         gateway={"idle_timeout": "1500ms", "max_connections_per_client": 3})
    # At the per-client cap no idle keep-alive connection is closed under its client (it may be
    # about to reuse it): the newcomer's request gets a whole 503 instead.
    idle = [connect(gw) for _ in range(3)]
    opened = time.monotonic()
    time.sleep(0.3)
    newest = connect(gw)
    newest.sendall(HEALTHZ)
    answer = read_response(newest).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 503"), answer
    assert "Retry-After: 1" in answer and "max_connections_per_client" in answer, answer
    assert closed_by_server(newest, 2.0), "a refused connection was left open"
    # The idle ones still answer.
    idle[0].sendall(HEALTHZ)
    assert read_response(idle[0]).startswith(b"HTTP/1.1 200"), "an idle connection was closed"
    # A connection that never sends a request is closed after idle_timeout, never before.
    assert closed_by_server(idle[1], 4.0), "an idle connection outlived idle_timeout"
    assert time.monotonic() - opened >= 1.45, "an idle connection was closed before idle_timeout"
    for s in idle + [newest]:
        s.close()
    metrics = gw.metrics()
    assert 'toolbridge_connections_closed_total{reason="refused"} 1' in metrics, metrics
    assert 'toolbridge_connections_closed_total{reason="idle"}' in metrics


def test_near_the_cap_a_response_closes_its_connection(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"max_connections_per_client": 8})
    # 6 of 8 is 3/4: responses now carry Connection: close, and the connection ends after them.
    conns = [connect(gw) for _ in range(6)]
    time.sleep(0.2)
    conns[0].sendall(HEALTHZ)
    answer = read_response(conns[0])
    assert answer.startswith(b"HTTP/1.1 200"), answer
    assert b"Connection: close" in answer, answer
    assert closed_by_server(conns[0], 2.0)
    for c in conns:
        c.close()
    time.sleep(0.3)
    # Below 3/4 a connection is kept alive.
    c = connect(gw)
    for _ in range(2):
        c.sendall(HEALTHZ)
        answer = read_response(c)
        assert answer.startswith(b"HTTP/1.1 200") and b"Connection: close" not in answer, answer
    c.close()
    assert 'toolbridge_connections_closed_total{reason="shed"} 1' in gw.metrics()


def test_at_max_connections_new_ones_wait_in_the_backlog(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"max_connections": 2})
    held = [connect(gw) for _ in range(2)]
    time.sleep(0.3)
    # The third is not accepted yet: its request waits (no 503, no reset) until one closes.
    waiting = connect(gw)
    waiting.sendall(HEALTHZ)
    waiting.settimeout(0.8)
    with pytest.raises(socket.timeout):
        waiting.recv(65536)
    held[0].close()
    answer = read_response(waiting)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    for c in held[1:] + [waiting]:
        c.close()
    metrics = gw.metrics()
    assert 'toolbridge_connections_closed_total{reason="refused"} 0' in metrics, metrics
    paused = [line for line in metrics.splitlines()
              if line.startswith("toolbridge_accept_paused_total")]
    assert paused and float(paused[0].split()[-1]) >= 1, paused


def test_busy_connections_past_the_cap_get_503(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"max_connections_per_client": 2})
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    s.close()  # its connection goes (the session stays): two busy ones are the cap
    time.sleep(0.3)
    busy = []
    for i in range(2):
        c = connect(gw)
        c.sendall(raw_post(gw, s.session_id, rpc("tools/call", {"name": "fixture__sleep",
                                                                  "arguments": {"ms": 3000}}, i)))
        busy.append(c)
    time.sleep(0.5)
    refused = connect(gw)
    refused.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    refused.settimeout(5)
    answer = refused.recv(65536).decode(errors="replace")
    assert answer.startswith("HTTP/1.1 503"), answer
    assert "Retry-After: 1" in answer and "max_connections" in answer
    for c in busy:  # the calls still complete
        c.settimeout(10)
        assert b"200 OK" in c.recv(65536)
        c.close()
    refused.close()
    assert 'toolbridge_connections_closed_total{reason="refused"} 1' in gw.metrics()


def test_a_client_that_does_not_read_is_disconnected_after_write_timeout(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"write_timeout": "1s"})
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    stuck = connect(gw)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(raw_post(gw, s.session_id, rpc("tools/call", {
        "name": "fixture__payload", "arguments": {"bytes": 8_000_000}}, 1)))
    time.sleep(3.5)  # write_timeout plus a sweep or two
    received = 0
    stuck.settimeout(5)
    try:
        while chunk := stuck.recv(1 << 20):
            received += len(chunk)
    except OSError:
        pass
    assert received < 8_000_000, "the stalled client still got its whole answer"
    answer = s.call_tool("fixture__echo", {"text": "still serving"}, 2)
    assert text_of(answer["result"]) == "still serving"
    s.close()


def test_a_client_that_hangs_up_frees_its_calls_slots(gateway_factory):
    gw = gateway_factory({"one": fixture_server(max_in_flight=1)})
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    c = connect(gw)
    c.sendall(raw_post(gw, s.session_id, rpc("tools/call", {"name": "one__sleep",
                                                              "arguments": {"ms": 60000}}, 1)))
    time.sleep(0.5)
    c.close()  # the agent gave up: its call must not hold the only slot for a minute
    start = time.monotonic()
    answer = None
    while time.monotonic() - start < 10:
        answer = s.call_tool("one__echo", {"text": "after"}, 2)
        if "result" in answer and not answer["result"].get("isError"):
            break
        time.sleep(0.3)
    assert answer and text_of(answer["result"]) == "after", answer
    assert time.monotonic() - start < 10
    s.close()


def initialize(gw, **headers: str) -> httpx.Response:
    return httpx.post(gw.mcp_url, content=json.dumps(rpc("initialize", initialize_params(PROTOCOL), 0)),
                      headers=headers_for(None, None, **headers), timeout=10)


def test_sessions_past_the_cap_close_one_idle_past_session_reclaim_after(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()},
                         gateway={"max_sessions": 3, "session_reclaim_after": "1s"})
    sessions = [RawSession(gw.mcp_url, version=PROTOCOL).initialize() for _ in range(3)]
    # A caller between two calls keeps its session: nothing has been idle for 1 s yet.
    resp = initialize(gw)
    assert resp.status_code == 503, resp.text
    assert resp.headers.get("retry-after")
    message = response_for(parse_body(resp), 0)["error"]["message"]
    assert "max_sessions" in message and "session_reclaim_after" in message, message
    for s in sessions:
        assert "result" in s.request("ping", None, 2)
    time.sleep(1.3)
    sessions[1].call_tool("fixture__echo", {"text": "recent"}, 3)
    sessions[2].call_tool("fixture__echo", {"text": "recent"}, 3)
    newcomer = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    # The first session (idle past 1 s, seen longest ago) made room; the others still work.
    assert sessions[0].post(rpc("ping", None, 5)).status_code == 404
    assert "result" in sessions[1].request("ping", None, 6)
    assert "result" in sessions[2].request("ping", None, 6)
    assert "result" in newcomer.request("ping", None, 7)
    for s in sessions + [newcomer]:
        s.close()


def test_sessions_that_are_all_busy_refuse_a_new_one_with_503(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, gateway={"max_sessions": 2})
    streams = []
    sessions = [RawSession(gw.mcp_url, version=PROTOCOL).initialize() for _ in range(2)]
    for s in sessions:  # an open GET stream makes a session busy
        streams.append(s.client.stream("GET", gw.mcp_url, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": s.session_id,
            "MCP-Protocol-Version": PROTOCOL}))
        streams[-1].__enter__()
    resp = initialize(gw)
    assert resp.status_code == 503, resp.text
    assert resp.headers.get("retry-after")
    assert "max_sessions" in response_for(parse_body(resp), 0)["error"]["message"]
    for st in streams:
        st.__exit__(None, None, None)
    for s in sessions:
        s.close()


def test_a_trajectory_is_used_and_released_only_by_its_owner(gateway_factory, tmp_path):
    gw = gateway_factory({"mem": fixture_server(policy="per_session")})
    base = gw.mcp_url[: -len("/mcp")]
    alice = RawSession(gw.mcp_url, version=PROTOCOL)
    alice.client.headers["X-Toolbridge-Tenant"] = "run-a"
    alice.initialize()
    bob = RawSession(gw.mcp_url, version=PROTOCOL)
    bob.client.headers["X-Toolbridge-Tenant"] = "run-b"
    bob.initialize()
    meta = {"toolbridge/session": "traj-1"}
    first = alice.request("tools/call", {"name": "mem__pid", "arguments": {}, "_meta": meta}, 1)
    assert "result" in first, first
    stolen = bob.request("tools/call", {"name": "mem__pid", "arguments": {}, "_meta": meta}, 2)
    assert stolen["error"]["code"] == -32602 and "belongs to another" in stolen["error"]["message"]
    refused = httpx.delete(f"{base}/sessions/traj-1", headers={"X-Toolbridge-Tenant": "run-b"},
                           timeout=10)
    assert refused.status_code == 403, refused.text
    assert "belongs to another client" in refused.json()["error"]["message"]
    again = alice.request("tools/call", {"name": "mem__pid", "arguments": {}, "_meta": meta}, 3)
    assert text_of(again["result"]) == text_of(first["result"]), "the instance was released"
    bad = httpx.delete(f"{base}/sessions/traj-1", headers={"X-Toolbridge-Tenant": "bad tenant!"},
                       timeout=10)
    assert bad.status_code == 400 and "X-Toolbridge-Tenant" in bad.text
    ok = httpx.delete(f"{base}/sessions/traj-1", headers={"X-Toolbridge-Tenant": "run-a"}, timeout=10)
    assert ok.status_code == 200 and ok.json() == {"released": 1}
    # Released, the name is free again.
    reused = bob.request("tools/call", {"name": "mem__pid", "arguments": {}, "_meta": meta}, 4)
    assert "result" in reused, reused
    alice.close()
    bob.close()


def test_one_client_cannot_bind_more_trajectories_than_its_cap(gateway_factory):
    gw = gateway_factory({"mem": fixture_server(policy="per_session", spares=0)},
                         gateway={"max_trajectories_per_client": 2})
    base = gw.mcp_url[: -len("/mcp")]
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()

    def call(name: str, req_id: int) -> dict:
        return s.request("tools/call", {"name": "mem__pid", "arguments": {},
                                        "_meta": {"toolbridge/session": name}}, req_id)

    assert "result" in call("t1", 1) and "result" in call("t2", 2)
    refused = call("t3", 3)
    assert refused["error"]["code"] == -32602, refused
    assert "max_trajectories_per_client" in refused["error"]["message"]
    assert gw.health()["servers"]["mem"]["sessions_bound"] == 2
    assert httpx.delete(f"{base}/sessions/t1", timeout=10).json() == {"released": 1}
    assert "result" in call("t3", 4), "a released trajectory did not free its place"
    s.close()


@pytest.mark.serial
@pytest.mark.skipif(bool(os.environ.get("TOOLBRIDGE_SANITIZED")),
                    reason="the sanitizer's allocator keeps freed memory on purpose")
def test_memory_returns_after_a_connection_flood(gateway_factory):
    """2,000 idle connections opened and closed: the gateway's resident memory comes back to
    within 2 MiB of where it was (each connection costs ~3 KiB while open)."""
    gw = gateway_factory({"fixture": fixture_server()},
                         gateway={"max_connections": 3000, "max_connections_per_client": 3000})

    def rss_mib() -> float:
        with open(f"/proc/{gw.proc.pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

    s = RawSession(gw.mcp_url).initialize()
    assert text_of(s.call_tool("fixture__echo", {"text": "warm"}, 1)["result"]) == "warm"
    s.close()
    time.sleep(0.5)
    before = rss_mib()
    socks = [connect(gw) for _ in range(2000)]
    deadline = time.monotonic() + 10
    while rss_mib() < before + 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    during = rss_mib()
    assert during >= before + 4, f"2,000 connections should cost memory while open: {before} -> {during}"
    for sock in socks:
        sock.close()
    deadline = time.monotonic() + 5
    while rss_mib() > before + 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    after = rss_mib()
    assert after <= before + 2, f"RSS {before:.1f} MiB before, {during:.1f} open, {after:.1f} after"
    assert httpx.get(gw.mcp_url[: -len("/mcp")] + "/healthz", timeout=10).status_code == 200
