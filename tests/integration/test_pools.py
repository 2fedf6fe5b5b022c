"""Sharing policies: shared, pool and per_session; warm spares; recycling; sessions as
trajectories (the MCP session or params._meta["toolbridge/session"]); ${session.dir}."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from pathlib import Path

import httpx
import pytest

from tb_support import (RawSession, fixture_server, headers_for, initialize_params, memory_server,
                        parse_body, read_proc, rpc, text_of)

pytestmark = pytest.mark.timeout(180)


def result_of(answer: dict) -> dict:
    assert "result" in answer, answer
    return answer["result"]


def tool_text(sess: RawSession, name: str, arguments: dict | None = None, req_id: int = 1,
              trajectory: str | None = None) -> str:
    params: dict = {"name": name, "arguments": arguments or {}}
    if trajectory is not None:
        params["_meta"] = {"toolbridge/session": trajectory}
    result = result_of(sess.request("tools/call", params, req_id))
    assert not result.get("isError"), result
    return text_of(result)


def tool_error(sess: RawSession, name: str, arguments: dict | None = None, req_id: int = 1) -> str:
    result = result_of(sess.request("tools/call", {"name": name, "arguments": arguments or {}}, req_id))
    assert result.get("isError"), result
    return text_of(result)


def delete(sess: RawSession) -> None:
    resp = sess.client.delete(sess.url, headers=headers_for(sess.session_id, sess.version))
    assert resp.status_code == 200, resp.text


def pids_of(gw, server: str) -> set[int]:
    return set(gw.health()["servers"][server]["pids"])


def environ_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


# ---- per_session -------------------------------------------------------------------------------

def test_trajectory_names_are_checked_at_the_edge_and_never_reach_the_server(gateway_factory):
    import hashlib
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0,
                                                    env={"SID": "${session.id}|${session.dir}"})})
    sess = RawSession(gw.mcp_url).initialize()
    try:
        for bad, rule in [("../../tmp/x", "character 1 ('.') is not allowed first"),
                          ("--config=/etc/shadow", "character 1 ('-') is not allowed first"),
                          ("a\0b", "character 2 (U+0000) is not allowed"),
                          ("${session.dir}", "character 1 ('$') is not allowed first"),
                          ("x" * 10000, "longer than 256 characters"),
                          ("\u00e9" * 257, "longer than 256 characters")]:
            answer = sess.request("tools/call", {"name": "fixture__pid", "arguments": {},
                                                 "_meta": {"toolbridge/session": bad}}, 1)
            assert answer.get("error", {}).get("code") == -32602, answer
            assert rule in answer["error"]["message"], answer["error"]["message"]
            assert "letters and digits of any script" in answer["error"]["message"]
            released = sess.request("toolbridge/release", {"session": bad}, 2)
            assert released.get("error", {}).get("code") == -32602, released
        name = "t\u00e9:1"
        pid = int(tool_text(sess, "fixture__pid", trajectory=name))
        sid, _, directory = environ_of(pid)["SID"].partition("|")
        assert sid == "s" + hashlib.sha256(name.encode()).hexdigest()[:32]
        assert directory.startswith("/") and name not in directory
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 1
    finally:
        sess.close()


def test_server_memory_per_session_isolates_state_and_release_removes_process_and_dir(
        gateway_factory, tmp_path):
    root = tmp_path / "sessions"
    gw = gateway_factory(
        {"memory": memory_server(Path("${session.dir}/memory.json"), policy="per_session", spares=1)},
        gateway={"session_dir_root": str(root)})
    a = RawSession(gw.mcp_url).initialize()
    b = RawSession(gw.mcp_url).initialize()
    try:
        entity = {"name": "alice-secret", "entityType": "person", "observations": ["likes tea"]}
        tool_text(a, "memory__create_entities", {"entities": [entity]})
        assert "alice-secret" in tool_text(a, "memory__read_graph", req_id=2)
        # B has its own server-memory process and file: A's entity is not there.
        assert "alice-secret" not in tool_text(b, "memory__read_graph", req_id=3)
        assert "alice-secret" not in tool_text(b, "memory__search_nodes", {"query": "alice"}, req_id=4)

        health = gw.health()["servers"]["memory"]
        assert health["policy"] == "per_session"
        assert health["sessions_bound"] == 2, health

        # A's process is the one whose MEMORY_FILE_PATH holds the entity.
        files = [p for p in root.glob("*/memory.json") if "alice-secret" in p.read_text()]
        assert len(files) == 1, list(root.iterdir())
        a_dir = files[0].parent
        a_pids = [pid for pid in pids_of(gw, "memory")
                  if environ_of(pid).get("MEMORY_FILE_PATH") == str(a_dir / "memory.json")]
        assert len(a_pids) == 1, (a_pids, pids_of(gw, "memory"))

        delete(a)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (a_dir.exists() or read_proc(a_pids[0])):
            time.sleep(0.05)
        assert not a_dir.exists(), f"{a_dir} is still there after the session was deleted"
        assert read_proc(a_pids[0]) is None, f"A's server-memory (pid {a_pids[0]}) is still running"
        assert gw.health()["servers"]["memory"]["sessions_bound"] == 1
        # B is unaffected.
        assert "alice-secret" not in tool_text(b, "memory__read_graph", req_id=5)
    finally:
        a.close()
        b.close()


def test_spares_are_ready_before_sessions_and_serve_their_first_call(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=2)})
    health = gw.wait_health(lambda h: h["servers"]["fixture"]["spares"] == 2, 20, "two warm spares")
    spare_pids = set(health["servers"]["fixture"]["pids"])
    assert len(spare_pids) == 2
    sess = RawSession(gw.mcp_url).initialize()
    try:
        pid = int(tool_text(sess, "fixture__pid"))
        assert pid in spare_pids, "the first call of a new session should run on a warm spare"
        assert tool_text(sess, "fixture__counter", req_id=2) == "1"
        assert tool_text(sess, "fixture__counter", req_id=3) == "2"
        assert int(tool_text(sess, "fixture__pid", req_id=4)) == pid, "a session must stay on its instance"
        # The used spare is replaced.
        gw.wait_health(lambda h: h["servers"]["fixture"]["spares"] == 2
                       and h["servers"]["fixture"]["sessions_bound"] == 1, 20, "spares topped up")
    finally:
        sess.close()


def test_named_trajectories_share_a_connection_but_not_instances(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0)})
    sess = RawSession(gw.mcp_url).initialize()
    try:
        assert tool_text(sess, "fixture__counter", req_id=1, trajectory="traj-1") == "1"
        assert tool_text(sess, "fixture__counter", req_id=2, trajectory="traj-1") == "2"
        assert tool_text(sess, "fixture__counter", req_id=3, trajectory="traj-2") == "1"
        assert tool_text(sess, "fixture__counter", req_id=4) == "1"  # the MCP session's own
        p1 = tool_text(sess, "fixture__pid", req_id=5, trajectory="traj-1")
        p2 = tool_text(sess, "fixture__pid", req_id=6, trajectory="traj-2")
        assert p1 != p2
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 3

        # A second connection reaches the same trajectory (reward computation after a rollout).
        other = RawSession(gw.mcp_url).initialize()
        assert tool_text(other, "fixture__counter", req_id=1, trajectory="traj-1") == "3"
        other.close()

        released = result_of(sess.request("toolbridge/release", {"session": "traj-1"}, 7))
        assert released == {"released": 1}
        assert result_of(sess.request("toolbridge/release", {"session": "traj-1"}, 8)) == {"released": 0}
        # A released trajectory starts over on a fresh instance.
        assert tool_text(sess, "fixture__counter", req_id=9, trajectory="traj-1") == "1"
        assert tool_text(sess, "fixture__counter", req_id=10, trajectory="traj-2") == "2"

        bad = sess.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"},
                                          "_meta": {"toolbridge/session": 42}}, 11)
        assert bad["error"]["code"] == -32602, bad
        assert "toolbridge/session" in bad["error"]["message"]
    finally:
        sess.close()


def test_idle_named_trajectories_expire(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0)},
                         gateway={"session_idle_ttl": "1s"})
    sess = RawSession(gw.mcp_url).initialize()
    try:
        tool_text(sess, "fixture__echo", {"text": "x"}, trajectory="short-lived")
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 1
        gw.wait_health(lambda h: h["servers"]["fixture"]["sessions_bound"] == 0, 10,
                       "the idle trajectory released")
    finally:
        sess.close()


def test_a_dead_session_instance_is_reported_never_silently_replaced(gateway_factory):
    gw = gateway_factory({"strict": fixture_server(policy="per_session", spares=0),
                          "lenient": fixture_server(policy="per_session", spares=0, rebind_on_exit=True)})
    sess = RawSession(gw.mcp_url).initialize()
    try:
        for server in ("strict", "lenient"):
            assert tool_text(sess, f"{server}__counter") == "1"
            assert tool_text(sess, f"{server}__counter", req_id=2) == "2"
            crashed = result_of(sess.request("tools/call", {"name": f"{server}__crash", "arguments": {}}, 3))
            assert crashed.get("isError"), crashed
            message = tool_error(sess, f"{server}__counter", req_id=4)
            assert "this session's instance" in message and "lost" in message, message
        # strict: it keeps saying so until the session is released.
        assert "End the session" in tool_error(sess, "strict__counter", req_id=5)
        # lenient: after being told, the session gets a fresh instance (its state starts over).
        assert tool_text(sess, "lenient__counter", req_id=6) == "1"
        released = result_of(sess.request("toolbridge/release", {}, 7))
        assert released["released"] == 2
        assert tool_text(sess, "strict__counter", req_id=8) == "1"
    finally:
        sess.close()


def test_checkout_timeout_when_every_instance_is_bound(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0, max_instances=1,
                                                    checkout_timeout="500ms")})
    a = RawSession(gw.mcp_url).initialize()
    b = RawSession(gw.mcp_url).initialize()
    try:
        tool_text(a, "fixture__echo", {"text": "a"})
        started = time.monotonic()
        message = tool_error(b, "fixture__echo", {"text": "b"})
        assert time.monotonic() - started >= 0.4
        assert "max_instances (1)" in message and "checkout_timeout" in message, message
        # Once A is gone, B gets the instance slot.
        delete(a)
        assert tool_text(b, "fixture__echo", {"text": "b"}, req_id=2) == "b"
    finally:
        a.close()
        b.close()


class RawConnection:
    """One keep-alive HTTP/1.1 connection on asyncio streams. httpx's pool spends seconds of CPU
    per thousand waiting requests; a connection per session keeps all 1,000 truly concurrent."""

    def __init__(self, url: str):
        rest = url.split("://", 1)[1]
        hostport, self.path = rest.split("/", 1)[0], "/" + rest.split("/", 1)[1]
        self.host, port = hostport.rsplit(":", 1)
        self.port = int(port)

    async def __aenter__(self) -> "RawConnection":
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *exc) -> None:
        self.writer.close()

    async def request(self, method: str, headers: dict, body: bytes = b"") -> tuple[int, dict, bytes]:
        lines = [f"{method} {self.path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 f"Content-Length: {len(body)}"] + [f"{k}: {v}" for k, v in headers.items()]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode().split("\r\n")
        got = {k.lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
        assert "content-length" in got, f"expected a JSON answer with Content-Length: {head!r}"
        payload = await self.reader.readexactly(int(got["content-length"]))
        return int(status_line.split()[1]), got, payload


@pytest.mark.serial
@pytest.mark.timeout(300)
def test_thousand_concurrent_per_session_sessions(gateway_factory, tmp_path):
    # Under ASan every fixture start costs ~10x the CPU: the sanitized run checks the same paths
    # with a quarter of the sessions, the plain run does all 1,000.
    sessions = 250 if os.environ.get("TOOLBRIDGE_SANITIZED") else 1000
    root = tmp_path / "sessions"
    journal = "${session.dir}/journal.txt"
    gw = gateway_factory({"fixture": fixture_server("--journal", journal, policy="per_session",
                                                    spares=8, max_instances=sessions + 16,
                                                    checkout_timeout="120s")},
                         gateway={"session_dir_root": str(root), "start_concurrency": 8,
                                  "max_sessions": sessions + 10})
    version = "2025-06-18"
    json_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    async def one(n: int, all_bound: asyncio.Event, count: list) -> int:
        async with RawConnection(gw.mcp_url) as conn:
            status, headers, _ = await conn.request(
                "POST", json_headers, json.dumps(rpc("initialize", initialize_params(version), 0)).encode())
            assert status == 200
            session_headers = {**json_headers, "Mcp-Session-Id": headers["mcp-session-id"],
                               "MCP-Protocol-Version": version}
            texts = []
            for req_id, (tool, args) in enumerate([("fixture__journal", {"key": f"s{n}"}),
                                                   ("fixture__counter", {}), ("fixture__counter", {}),
                                                   ("fixture__pid", {})], start=1):
                status, _, body = await conn.request("POST", session_headers, json.dumps(
                    rpc("tools/call", {"name": tool, "arguments": args}, req_id)).encode())
                assert status == 200, body[:300]
                answer = json.loads(body)
                assert answer.get("id") == req_id and not answer["result"].get("isError"), answer
                texts.append(text_of(answer["result"]))
            # A fresh instance per session: its counter starts at 1.
            assert texts[1:3] == ["1", "2"], (n, texts)
            # Every session holds its instance until all of them are bound, then ends itself.
            count[0] += 1
            if count[0] == sessions:
                all_bound.set()
            await all_bound.wait()
            if n == 0:
                health = gw.health()["servers"]["fixture"]
                assert health["sessions_bound"] == sessions, health
                journals = sorted(p.read_text().strip() for p in root.glob("*/journal.txt"))
                assert journals == sorted(f"s{i}" for i in range(sessions))
            await asyncio.sleep(0.5 if n != 0 else 0)
            status, _, _ = await conn.request("DELETE", session_headers)
            assert status == 200
            return int(texts[3])

    async def main():
        all_bound, count = asyncio.Event(), [0]
        return await asyncio.gather(*(one(n, all_bound, count) for n in range(sessions)))

    pids = set(asyncio.run(main()))
    assert len(pids) == sessions, f"{sessions} sessions ran on {len(pids)} instances"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        alive = [p for p in pids if read_proc(p)]
        dirs = list(root.glob("*/journal.txt"))
        if not alive and not dirs:
            break
        time.sleep(0.2)
    assert not alive, f"{len(alive)} session instances still running after DELETE"
    assert not dirs, f"{len(dirs)} session directories left after DELETE"
    assert gw.health()["servers"]["fixture"]["sessions_bound"] == 0


# ---- pool --------------------------------------------------------------------------------------

@pytest.mark.serial
def test_pool_grows_under_load_and_shrinks_when_idle(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="pool", min_instances=1, max_instances=4,
                                                    idle_ttl="1s")})
    assert len(pids_of(gw, "fixture")) == 1

    async def burst():
        async with httpx.AsyncClient(timeout=60) as client:
            sess = RawSession(gw.mcp_url).initialize()
            sid = sess.session_id
            sess.close()

            async def sleep_call(i: int) -> str:
                r = await client.post(gw.mcp_url, content=json.dumps(rpc(
                    "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 400}}, i)),
                    headers=headers_for(sid, "2025-06-18"))
                return text_of(parse_body(r)[-1]["result"])

            async def pid_call(i: int) -> int:
                r = await client.post(gw.mcp_url, content=json.dumps(rpc(
                    "tools/call", {"name": "fixture__pid", "arguments": {}}, i)),
                    headers=headers_for(sid, "2025-06-18"))
                return int(text_of(parse_body(r)[-1]["result"]))

            seen = set()
            for wave in range(6):
                sleeps = [asyncio.create_task(sleep_call(100 * wave + i)) for i in range(8)]
                await asyncio.sleep(0.15)
                seen |= set(await asyncio.gather(*(pid_call(1000 + 10 * wave + i) for i in range(4))))
                assert all(t == "slept 400 ms" for t in await asyncio.gather(*sleeps))
            return seen

    seen = asyncio.run(burst())
    assert len(seen) >= 2, "the pool never grew under load"
    grown = gw.health()["servers"]["fixture"]
    assert 2 <= len(grown["pids"]) <= 4, grown
    health = gw.wait_health(lambda h: len(h["servers"]["fixture"]["pids"]) == 1, 15,
                            "the pool back to min_instances")
    assert health["servers"]["fixture"]["recycles"].get("idle", 0) >= 1
    assert "toolbridge_recycles_total{" in gw.metrics()


@pytest.mark.serial
@pytest.mark.parametrize("policy", ["shared", "pool"])
def test_recycling_by_max_calls_under_load_fails_no_call(gateway_factory, policy):
    extra = {"max_instances": 3} if policy == "pool" else {}
    gw = gateway_factory({"fixture": fixture_server(policy=policy, max_calls=40, **extra)})
    calls = 600

    async def main():
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            sess = RawSession(gw.mcp_url).initialize()
            sid = sess.session_id
            sess.close()

            async def one(i: int) -> tuple[int, dict]:
                r = await client.post(gw.mcp_url, content=json.dumps(rpc(
                    "tools/call", {"name": "fixture__echo", "arguments": {"text": f"m{i}"}}, i)),
                    headers=headers_for(sid, "2025-06-18"))
                return i, parse_body(r)[-1]

            return await asyncio.gather(*(one(i) for i in range(calls)))

    for i, answer in asyncio.run(main()):
        assert answer.get("id") == i and "result" in answer, answer
        assert not answer["result"].get("isError"), answer
        assert text_of(answer["result"]) == f"m{i}"
    health = gw.health()["servers"]["fixture"]
    assert health["recycles"].get("max_calls", 0) >= calls // 40 - 1, health
    assert health["restarts"] == 0, "recycling is not a restart"
    metrics = gw.metrics()
    assert 'toolbridge_recycles_total{server="fixture",reason="max_calls"}' in metrics


def test_healthz_and_metrics_show_policy_instances_spares_and_sessions(gateway_factory):
    gw = gateway_factory({"one": fixture_server(),
                          "many": fixture_server(policy="pool", min_instances=2, max_instances=3),
                          "mine": fixture_server(policy="per_session", spares=1)})
    health = gw.wait_health(lambda h: h["servers"]["many"]["instances"]["idle"] == 2
                            and h["servers"]["mine"]["spares"] == 1, 20, "pool minimum and spare")
    servers = health["servers"]
    assert servers["one"]["policy"] == "shared"
    assert servers["many"]["policy"] == "pool"
    assert servers["mine"]["policy"] == "per_session"
    assert servers["one"]["instances"] == {"starting": 0, "idle": 1, "busy": 0, "retiring": 0}
    assert len(servers["many"]["pids"]) == 2
    sess = RawSession(gw.mcp_url).initialize()
    try:
        tool_text(sess, "mine__echo", {"text": "x"})
        gw.wait_health(lambda h: h["servers"]["mine"]["sessions_bound"] == 1
                       and h["servers"]["mine"]["spares"] == 1, 20, "bound session and a new spare")
        metrics = gw.metrics()
        for line in ('toolbridge_sessions_bound{server="mine"} 1',
                     'toolbridge_spares{server="mine"} 1',
                     'toolbridge_instances{server="many",state="idle"} 2',
                     'toolbridge_recycles_total{server="one",reason="idle"} 0'):
            assert line in metrics, line
    finally:
        sess.close()


def test_release_endpoint_checks_method_origin_and_name(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0)})
    base = gw.mcp_url[: -len("/mcp")]
    sess = RawSession(gw.mcp_url).initialize()
    try:
        tool_text(sess, "fixture__echo", {"text": "x"}, trajectory="a.b:\u00e9")
        with httpx.Client(timeout=10) as client:
            assert client.get(f"{base}/sessions/x").status_code == 405
            evil = client.delete(f"{base}/sessions/a.b:%C3%A9", headers={"Origin": "http://evil.example"})
            assert evil.status_code == 403 and "allowed_origins" in evil.text
            long = client.delete(f"{base}/sessions/{'x' * 300}")
            assert long.status_code == 400 and "256" in long.text
            path = client.delete(f"{base}/sessions/a%20b%2Fc")
            assert path.status_code == 400 and "character 2 (U+0020) is not allowed" in path.text, path.text
            assert gw.health()["servers"]["fixture"]["sessions_bound"] == 1
            ok = client.delete(f"{base}/sessions/a.b:%C3%A9")
            assert ok.status_code == 200 and ok.json() == {"released": 1}
        assert gw.health()["servers"]["fixture"]["sessions_bound"] == 0
    finally:
        sess.close()


def test_an_instance_over_max_rss_mb_is_retired_and_one_under_it_is_not(gateway_factory):
    # Every process is over 1 MiB: "fat" is retired at each check; "lean" (the same binary under
    # a bound it cannot reach) never is, though checked as often.
    gw = gateway_factory({"fat": fixture_server(max_rss_mb=1, rss_check_interval="200ms"),
                          "lean": fixture_server(max_rss_mb=65536, rss_check_interval="200ms")})
    first = gw.health()["servers"]["fat"]["pid"]
    health = gw.wait_health(lambda h: h["servers"]["fat"]["recycles"].get("max_rss", 0) >= 2, 20,
                            "fat retired for its memory twice")
    assert health["servers"]["lean"]["recycles"].get("max_rss", 0) == 0, health["servers"]["lean"]
    assert health["servers"]["fat"]["restarts"] == 0, "recycling is not a restart"
    log = gw.stderr_path.read_text()
    assert re.search(r"\[fat#\d+\] resident memory \d+ MiB is above max_rss_mb \(1\)", log), log[-2000:]
    assert not re.search(r"\[lean#\d+\] resident memory", log), log[-2000:]
    # Calls go on being answered, by the instances that replace the retired ones.
    s = RawSession(gw.mcp_url).initialize()
    try:
        assert text_of(s.call_tool("fat__echo", {"text": "still"}, 1)["result"]) == "still"
        pid = int(text_of(s.call_tool("fat__pid", {}, 2)["result"]))
        assert pid != first
    finally:
        s.close()
    assert 'toolbridge_recycles_total{server="fat",reason="max_rss"}' in gw.metrics()


@pytest.mark.parametrize("level,infos,warnings", [("info", True, True), ("warn", False, True),
                                                  ("error", False, False)])
def test_log_level_keeps_what_is_at_or_above_it(gateway_factory, level, infos, warnings):
    # A server retired for its memory every check: a warning each time; its start: info lines.
    gw = gateway_factory({"fat": fixture_server(max_rss_mb=1, rss_check_interval="200ms")},
                         {"log_level": level})
    gw.wait_health(lambda h: h["servers"]["fat"]["recycles"].get("max_rss", 0) >= 2, 20,
                   "fat retired for its memory twice")
    log = gw.stderr_path.read_text()
    levels = set(re.findall(r"^\S+ (\w+) ", log, re.M))
    assert ("info" in levels) == infos, log[-2000:]
    assert ("is above max_rss_mb" in log) == warnings, log[-2000:]
    assert "debug" not in levels and "trace" not in levels, log[-2000:]
