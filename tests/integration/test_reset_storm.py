"""A storm of client resets from one host (issue 33): connections reset mid-request, mid-call and
mid-response. A well-behaved caller on the same host is served throughout (an outside run had 6
of its 61 calls fail), and the gateway gives back every connection and descriptor afterwards."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from tb_support import Bystander, RawSession, fixture_server, rpc, text_of
from test_limits import PROTOCOL, connect, raw_post
from test_node_scale import SANITIZED, fds as fd_count

pytestmark = pytest.mark.timeout(180)

# The outside run's storm; a quarter of it under the sanitizers (several times slower per call).
MID_REQUEST = 250 if SANITIZED else 1000
MID_CALL = 75 if SANITIZED else 300
MID_RESPONSE = 25 if SANITIZED else 100


def reset(c: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0), as a killed client's kernel does."""
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    c.close()


def gauge(gw, name: str) -> float:
    for line in gw.metrics().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"no {name} in the metrics")


def test_a_bystander_is_served_through_a_storm_of_resets(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    pid = gw.proc.pid
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    assert text_of(s.call_tool("fixture__echo", {"text": "warm"}, 1)["result"]) == "warm"
    fds_before = fd_count(pid)

    bystander = Bystander(gw.mcp_url, "fixture__echo", PROTOCOL)
    bystander.start()
    time.sleep(0.3)
    call = raw_post(gw, s.session_id, rpc("tools/call", {
        "name": "fixture__sleep", "arguments": {"ms": 1000}}, 7))
    # Mid-request: the head and half the body sent, then a reset.
    for _ in range(MID_REQUEST):
        c = connect(gw)
        c.sendall(call[: len(call) - 20])
        reset(c)
    # Mid-call: the whole request, then a reset while the call runs upstream.
    calls = []
    for _ in range(MID_CALL):
        c = connect(gw)
        c.sendall(call)
        calls.append(c)
    time.sleep(0.3)
    for c in calls:
        reset(c)
    # Mid-response: a 2 MB answer, a few bytes of it read, then a reset.
    big = raw_post(gw, s.session_id, rpc("tools/call", {
        "name": "fixture__payload", "arguments": {"bytes": 2_000_000}}, 8))
    for _ in range(MID_RESPONSE):
        c = connect(gw)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.sendall(big)
        assert c.recv(64).startswith(b"HTTP/1.1 200")
        reset(c)
    time.sleep(1.5)  # the calls reset mid-call end upstream meanwhile
    bystander.stop()
    assert not bystander.failures, bystander.failures[:5]
    assert len(bystander.latencies) >= 20
    # Nothing is left behind: connections and descriptors back to where they were.
    until = time.monotonic() + 20
    while time.monotonic() < until:
        if gauge(gw, "toolbridge_connections") <= 2 and fd_count(pid) <= fds_before + 4:
            break
        time.sleep(0.2)
    assert gauge(gw, "toolbridge_connections") <= 2
    assert fd_count(pid) <= fds_before + 4, f"{fds_before} -> {fd_count(pid)} descriptors"
    # And the gateway still serves a new caller.
    assert text_of(s.call_tool("fixture__echo", {"text": "after"}, 2)["result"]) == "after"
    s.close()
