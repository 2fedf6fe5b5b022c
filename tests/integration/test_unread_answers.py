"""Clients that ask for big answers and never read them (issue 33): the answer bytes the gateway
holds for them are bounded per client address and in all (max_unread_bytes*), the memory comes
back, and a bystander on the same host is served throughout."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from tb_support import RawSession, fixture_server, rpc, text_of
from test_limits import PROTOCOL, connect, raw_post
from test_node_scale import SANITIZED, closed_total, rss_mb

pytestmark = [pytest.mark.timeout(120), pytest.mark.serial]

RESULT_BYTES = 30_000_000
NON_READERS = 12


def test_non_reading_clients_are_bounded_and_a_bystander_is_served(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()},
                         gateway={"max_unread_bytes_per_client": "64MiB", "max_unread_bytes": "128MiB"})
    pid = gw.proc.pid
    s = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
    assert text_of(s.call_tool("fixture__echo", {"text": "warm"}, 1)["result"]) == "warm"
    baseline = rss_mb(pid)
    stuck = []
    for i in range(NON_READERS):
        c = connect(gw)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.sendall(raw_post(gw, s.session_id, rpc("tools/call", {
            "name": "fixture__payload", "arguments": {"bytes": RESULT_BYTES}}, 100 + i)))
        stuck.append(c)
    # A bystander on the same address calls throughout.
    failures: list[str] = []
    answered = 0

    def bystander() -> None:
        nonlocal answered
        b = RawSession(gw.mcp_url, version=PROTOCOL).initialize()
        for i in range(40):
            answer = b.call_tool("fixture__echo", {"text": f"b{i}"}, 1000 + i)
            if "result" in answer and text_of(answer["result"]) == f"b{i}":
                answered += 1
            else:
                failures.append(str(answer)[:200])
            time.sleep(0.1)
        b.close()

    t = threading.Thread(target=bystander)
    t.start()
    peak = 0.0
    until = time.monotonic() + 6
    while time.monotonic() < until:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.1)
    t.join(60)
    assert not failures and answered == 40, failures[:5]
    # Over the per-client bound the oldest writers were closed; what stays held is under it.
    assert closed_total(gw.metrics(), "unread") >= NON_READERS - 64_000_000 // RESULT_BYTES
    settled = rss_mb(pid)
    if not SANITIZED:  # the sanitizer's allocator keeps what it freed
        assert settled < baseline + 64 + 48, f"RSS {baseline:.0f} MB -> {settled:.0f} MB (peak {peak:.0f})"
    for c in stuck:
        c.close()
    s.close()
