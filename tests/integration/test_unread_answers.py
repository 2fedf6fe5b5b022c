"""Clients that ask for big answers and never read them (issue 33): the answer bytes the gateway
holds for them are bounded per client address and in all (max_unread_bytes*). While they are over
the bound the servers' next answers wait unread in their pipes (backpressure), so the gateway's
memory stays under the bound however many such clients there are; the stalled ones are closed
and a bystander on the same host is served throughout."""

from __future__ import annotations

import re
import socket
import time

import pytest

from tb_support import Bystander, RawSession, fixture_server, rpc, text_of
from test_limits import PROTOCOL, connect, raw_post
from test_node_scale import SANITIZED, closed_total, rss_mb

pytestmark = [pytest.mark.timeout(240), pytest.mark.serial]

RESULT_BYTES = 30_000_000
NON_READERS = 24 if SANITIZED else 100
MAX_UNREAD_MB = 128
PER_CLIENT_MB = 64


def gauge(metrics: str, name: str) -> float:
    m = re.search(rf"^{name} (\S+)$", metrics, re.M)
    assert m, f"no {name} in the metrics"
    return float(m.group(1))


def test_non_reading_clients_are_bounded_and_a_bystander_is_served(gateway_factory):
    # The bystander calls another server: the non-readers' answers queue ahead of anything else
    # in the pipe of the instance they share (one pipe, read in order).
    gw = gateway_factory({"fixture": fixture_server(), "other": fixture_server()},
                         gateway={"max_unread_bytes_per_client": f"{PER_CLIENT_MB}MiB",
                                  "max_unread_bytes": f"{MAX_UNREAD_MB}MiB"})
    pid = gw.proc.pid
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    assert text_of(s.call_tool("fixture__echo", {"text": "warm"}, 1)["result"]) == "warm"
    assert text_of(s.call_tool("other__echo", {"text": "warm"}, 2)["result"]) == "warm"
    baseline = rss_mb(pid)

    bystander = Bystander(gw.mcp_url, "other__echo", PROTOCOL)
    bystander.start()
    stuck = []
    for i in range(NON_READERS):
        c = connect(gw)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.sendall(raw_post(gw, s.session_id, rpc("tools/call", {
            "name": "fixture__payload", "arguments": {"bytes": RESULT_BYTES}}, 100 + i)))
        stuck.append(c)
    # Every non-reader but the ones the per-client bound leaves held is closed in the end.
    expected_closed = NON_READERS - (PER_CLIENT_MB << 20) // RESULT_BYTES
    peak = 0.0
    until = time.monotonic() + 200
    while time.monotonic() < until:
        peak = max(peak, rss_mb(pid))
        if closed_total(gw.metrics(), "unread") >= expected_closed:
            break
        time.sleep(0.1)
    time.sleep(1)  # the bystander calls on after the storm
    bystander.stop()
    metrics = gw.metrics()
    assert closed_total(metrics, "unread") >= expected_closed
    assert not bystander.failures and len(bystander.latencies) >= 20, bystander.failures[:5]
    # Reads wait for at most about one sweep while the bound is passed.
    slowest = max(bystander.latencies)
    assert slowest < 5, f"slowest bystander call {slowest:.2f} s"
    assert gauge(metrics, "toolbridge_answer_read_waits_total") > 0  # the gate held reads back
    if not SANITIZED:  # the sanitizer's allocator keeps what it freed
        # The bound, plus the answer each of the two instances is reading, plus slack.
        bound = baseline + MAX_UNREAD_MB * 1.05 + 2 * RESULT_BYTES / 1e6 + 40
        assert peak < bound, f"RSS peaked at {peak:.0f} MB (bound {bound:.0f}, base {baseline:.0f})"
        settled = rss_mb(pid)
        assert settled < baseline + PER_CLIENT_MB + 48, f"RSS {baseline:.0f} -> {settled:.0f} MB"
    for c in stuck:
        c.close()
    s.close()
