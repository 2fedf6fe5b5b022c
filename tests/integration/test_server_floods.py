"""Floods from a server stay bounded: a burst of tools/list_changed costs at most one catalog
re-read plus one more and never takes agents' max_in_flight slots; a flood of garbage lines is
counted in full but logged sparingly."""

from __future__ import annotations

import concurrent.futures
import json
import sys
import time
from pathlib import Path

import pytest

from tb_support import Gateway, RawSession, headers_for, rpc, text_of

pytestmark = [pytest.mark.timeout(90), pytest.mark.serial]

ROGUE = str(Path(__file__).resolve().parent / "rogue_server.py")


def rogue(mode: str, *args: str, **extra) -> dict:
    return {"command": sys.executable, "args": [ROGUE, mode, *args], **extra}


def start(tmp_path, servers):
    gw = Gateway(tmp_path, servers)
    gw.start()
    try:
        gw.wait_ready(list(servers), timeout=30)
    except BaseException:
        gw.kill_quietly()
        raise
    return gw


def test_list_changed_flood_is_coalesced(tmp_path, binaries):
    gw = start(tmp_path, {"rogue": rogue("list-changed", "20000", max_in_flight=16)})
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("rogue__echo", {"text": "flood"}, 1)
        assert text_of(answer["result"]) == "flood", answer
        # Agents' calls are not refused for the re-reads the flood caused.
        for i in range(5):
            answer = s.call_tool("rogue__echo", {"text": f"after {i}"}, 10 + i)
            assert "result" in answer and text_of(answer["result"]) == f"after {i}", answer
        time.sleep(1.0)
        count = int(text_of(s.call_tool("rogue__list_calls", {}, 2)["result"]))
        # At most one re-read in flight plus one more for what came meanwhile: a few per read of
        # the flood from the pipe, never one per notification.
        # The flood came before the first answer on the same pipe, so it was read: re-read it was.
        assert 1 <= count <= 50, f"{count} tools/list requests for a flood of 20000 list_changed"
    finally:
        s.close()
        gw.close()


def test_list_changed_from_a_pool_is_one_reread_per_server(tmp_path, binaries):
    """Every instance of a pool announces list_changed: one instance re-reads for the server."""
    log = tmp_path / "events.log"
    env = {"ROGUE_LOG": str(log), "ROGUE_CALL_DELAY": "0.3"}
    gw = start(tmp_path, {"rogue": rogue("list-changed", "50", policy="pool", min_instances=3,
                                         max_instances=3, target_in_flight=1, env=env)})

    def events(kind: str, since: int = 0) -> list[str]:
        lines = log.read_text().splitlines()[since:] if log.exists() else []
        return [line.split()[1] for line in lines if line.split()[0] == kind]

    try:
        deadline = time.monotonic() + 20
        while len(set(events("list"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(set(events("list"))) == 3, f"3 instances should have listed: {log.read_text()}"
        mark = len(log.read_text().splitlines())
        sessions = [RawSession(gw.mcp_url).initialize() for _ in range(6)]
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda i: sessions[i].call_tool(
                "rogue__echo", {"text": f"c{i}"}, 100 + i), range(6)))
        assert all("result" in a for a in answers), answers
        time.sleep(1.5)
        callers = set(events("call", mark))
        assert len(callers) >= 2, f"the calls should have reached several instances: {callers}"
        rereads = events("list", mark)
        assert rereads, "no re-read after the announcements"
        assert len(set(rereads)) == 1, f"re-reads by several instances of one server: {rereads}"
        assert len(rereads) <= 20, f"{len(rereads)} re-reads for {50 * 6} announcements"
        for s in sessions:
            s.close()
    finally:
        gw.close()


def test_garbage_flood_is_logged_sparingly(tmp_path, binaries):
    gw = start(tmp_path, {"rogue": rogue("garbage", "20000")})
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("rogue__echo", {"text": "still here"}, 1)
        assert text_of(answer["result"]) == "still here", answer
        time.sleep(0.5)
        log = gw.stderr_path.read_text(errors="replace")
        lines = log.count("not JSON-RPC")
        # The lines came before the answer on the same pipe: read, and said, but sparingly.
        assert 1 <= lines <= 20, f"{lines} log lines for 20000 invalid lines"
    finally:
        s.close()
        gw.close()


def test_server_that_does_not_read_gets_calls_refused(tmp_path, binaries):
    servers = {"deaf": rogue("deaf", call_timeout="1s", ping_timeout="60s",
                             max_write_queue_bytes="1MiB", breaker_threshold=0)}
    gw = start(tmp_path, servers)
    s = RawSession(gw.mcp_url).initialize()
    try:
        big = "x" * 300_000
        refused = None
        for i in range(12):
            began = time.monotonic()
            answer = s.call_tool("deaf__echo", {"text": big}, i + 1)
            if "max_write_queue_bytes" in str(answer):
                refused = (answer, time.monotonic() - began)
                break
        assert refused, "calls to a server that does not read were never refused"
        # At once, not after the call's 1-s timeout.
        assert refused[1] < 0.8, f"refusal took {refused[1]:.2f} s"
        assert "not reading its input" in str(refused[0]), refused[0]
    finally:
        s.close()
        gw.close()


def test_sampling_request_the_agent_never_answers_times_out(tmp_path, binaries):
    servers = {"rogue": rogue("sampling", call_timeout="20s", server_request_timeout="1s")}
    gw = start(tmp_path, servers)
    s = RawSession(gw.mcp_url)
    try:
        init = {"protocolVersion": s.version, "capabilities": {"sampling": {}},
                "clientInfo": {"name": "silent", "version": "1"}}
        resp = s.client.post(s.url, content=json.dumps(rpc("initialize", init, 0)),
                             headers=headers_for(None, None))
        s.session_id = resp.headers["mcp-session-id"]
        s.post(rpc("notifications/initialized"))
        began = time.monotonic()
        answer = s.call_tool("rogue__echo", {"text": "x"}, 1)
        assert time.monotonic() - began < 10, "the server waited for the agent until the deadline"
        assert "server_request_timeout" in text_of(answer["result"]), answer
    finally:
        s.close()
        gw.close()


@pytest.mark.parametrize("mode,key,marker", [("garbage", "log_garbage_lines", "ignored a line"),
                                             ("stderr", "log_stderr_lines", "stderr flood line")])
def test_log_rate_is_configurable(tmp_path, binaries, mode, key, marker):
    gw = start(tmp_path, {"rogue": rogue(mode, "5000", **{key: 3, "log_interval": "1m"})})
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("rogue__echo", {"text": "ok"}, 1)
        assert text_of(answer["result"]) == "ok", answer
        time.sleep(0.5)
        logged = gw.stderr_path.read_text(errors="replace").count(marker)
        assert logged == 3, f"{logged} lines logged in full, want 3"
    finally:
        s.close()
        gw.close()
