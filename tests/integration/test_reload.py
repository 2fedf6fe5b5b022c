"""Live reload (docs/reload.md): SIGHUP, POST /admin/reload, `toolbridge reload` and
gateway.watch_config re-read the config file; under a steady load a reload that adds, removes and
changes servers loses no call and leaves no process; an invalid file changes nothing and says
where it is wrong; API keys rotate; MCP clients hear list_changed."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import anyio
import httpx
import mcp.types as types

from llm_support import Worker, chat_body, model_entry, sse_events
from tb_sdk import sdk_session
from tb_support import (
    fixture_server,
    headers_for,
    parse_body,
    read_proc,
    response_for,
    rpc,
    start_gateway,
    text_of,
    to_yaml,
    toolbridge_bin,
    RawSession,
)

SLOW_MS = 4000  # long enough that the reload happens while these calls run


def rewrite(gw, servers: dict, gateway: dict | None = None) -> None:
    doc: dict = {}
    if gateway:
        doc["gateway"] = gateway
    doc["servers"] = servers
    gw.config_path.write_text(to_yaml(doc))
    gw.servers = servers


def reload(gw, headers: dict | None = None) -> httpx.Response:
    return httpx.post(gw.base_url + "/admin/reload", timeout=120, headers=headers or {})


def config_of(gw) -> dict:
    return gw.health()["config"]


def pids_of(gw, server: str) -> list[int]:
    return gw.health()["servers"][server]["pids"]


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def wait_exited(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if (info := read_proc(p)) is not None and info.state != "Z"]
        time.sleep(0.1)
    return alive


async def open_session(client: httpx.AsyncClient, url: str) -> str:
    resp = await client.post(url, content=json.dumps(rpc("initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "reload-load", "version": "0"}}, 0)), headers=headers_for(None, None))
    assert resp.status_code == 200, resp.text[:300]
    sid = resp.headers["mcp-session-id"]
    note = await client.post(url, content=json.dumps(rpc("notifications/initialized")),
                             headers=headers_for(sid, "2025-06-18"))
    assert note.status_code == 202
    return sid


async def call(client: httpx.AsyncClient, url: str, sid: str, name: str, args: dict, rid: int) -> dict:
    resp = await client.post(url, content=json.dumps(rpc("tools/call", {"name": name, "arguments": args}, rid)),
                             headers=headers_for(sid, "2025-06-18"))
    assert resp.status_code == 200, f"{name}: HTTP {resp.status_code} {resp.text[:300]}"
    return response_for(parse_body(resp), rid)


def test_a_reload_under_load_adds_removes_and_changes_servers_without_losing_a_call(gateway_factory):
    servers = {
        "keep": fixture_server(),
        "gone": fixture_server(),
        "changed": fixture_server(env={"RELOAD_MARK": "one"}),
    }
    gw = gateway_factory(servers)
    gone_pids = pids_of(gw, "gone")
    old_changed_pids = pids_of(gw, "changed")
    assert gone_pids and old_changed_pids
    assert environ_of(old_changed_pids[0]).get("RELOAD_MARK") == "one"
    assert config_of(gw)["generation"] == 1
    hash_before = config_of(gw)["hash"]

    new_servers = {
        "keep": fixture_server(),
        "changed": fixture_server(env={"RELOAD_MARK": "two"}),
        "added": fixture_server(),
    }

    async def scenario():
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
        async with httpx.AsyncClient(timeout=60, limits=limits) as client:
            sids = [await open_session(client, gw.mcp_url) for _ in range(10)]
            rid = iter(range(1, 100000))
            # 300 calls in flight: a third on the server the reload removes, a third on the one
            # it changes.
            first = [asyncio.create_task(call(client, gw.mcp_url, sids[i % 10],
                                              f"{('keep', 'gone', 'changed')[i % 3]}__sleep",
                                              {"ms": SLOW_MS}, next(rid)))
                     for i in range(300)]
            # Every one of them reached its server before the reload.
            deadline = time.monotonic() + 20
            while True:
                health = (await client.get(gw.base_url + "/healthz")).json()
                in_flight = sum(s["in_flight"] for s in health["servers"].values())
                if in_flight >= 300 or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            assert in_flight == 300, health
            assert not any(t.done() for t in first), "the load finished before the reload"
            # A steady stream of short calls while the reload is applied.
            stop = asyncio.Event()

            async def stream(server: str) -> list[dict]:
                answers = []
                while not stop.is_set():
                    answers.append(await call(client, gw.mcp_url, sids[0], f"{server}__echo",
                                              {"text": "x"}, next(rid)))
                return answers

            streams = [asyncio.create_task(stream(s)) for s in ("keep", "changed") for _ in range(5)]
            rewrite(gw, new_servers)
            started = time.monotonic()
            answer = await client.post(gw.base_url + "/admin/reload", timeout=120)
            reload_s = time.monotonic() - started
            # Calls to the removed server's tools are refused with what happened.
            refused = await call(client, gw.mcp_url, sids[1], "gone__echo", {"text": "x"}, next(rid))
            added = await call(client, gw.mcp_url, sids[1], "added__echo", {"text": "new"}, next(rid))
            second = [asyncio.create_task(call(client, gw.mcp_url, sids[i % 10],
                                               f"{('keep', 'changed', 'added')[i % 3]}__sleep",
                                               {"ms": 200}, next(rid)))
                      for i in range(150)]
            done_first = await asyncio.gather(*first)
            stop.set()
            done_streams = await asyncio.gather(*streams)
            done_second = await asyncio.gather(*second)
            return answer, reload_s, refused, added, done_first, done_streams, done_second

    answer, reload_s, refused, added, first, streams, second = asyncio.run(scenario())
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["reloaded"] is True and body["generation"] == 2, body
    assert body["summary"] == "servers +added -gone ~changed(env)", body
    assert body["hash"] != hash_before

    # Every call was answered with its result: none lost, none failed.
    for msg in first + second:
        assert "result" in msg and not msg["result"].get("isError"), msg
        assert text_of(msg["result"]).startswith("slept"), msg
    stream_answers = [m for s in streams for m in s]
    assert len(stream_answers) >= 10
    for msg in stream_answers:
        assert "result" in msg and text_of(msg["result"]) == "x", msg
    assert "removed from the configuration by a reload" in json.dumps(refused), refused
    assert text_of(added["result"]) == "new", added

    health = gw.health()
    assert set(health["servers"]) == {"keep", "changed", "added"}
    assert health["config"]["generation"] == 2
    new_changed = pids_of(gw, "changed")
    assert new_changed and not set(new_changed) & set(old_changed_pids)
    assert environ_of(new_changed[0]).get("RELOAD_MARK") == "two"
    # The removed and the replaced servers stopped once their calls had finished.
    assert wait_exited(gone_pids + old_changed_pids, 15) == []
    log = gw.stderr_path.read_text()
    assert re.search(r"reload \(admin\): generation 2 \([0-9a-f]{12}\): servers \+added -gone ~changed\(env\)", log)
    assert "server gone (old version) drained" in log
    print(f"\nreload under load: 300 calls in flight + 10 streams, reload applied in {reload_s:.2f} s; "
          f"{len(first) + len(second) + len(stream_answers)} calls answered, 0 lost")
    gw.close()  # asserts no process is left


def test_an_invalid_file_keeps_the_old_config_and_says_where(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()})
    hash_before = config_of(gw)["hash"]
    good = gw.config_path.read_text()
    # A misspelled key on line 5: the error is start-up's, FILE:LINE:COL with "did you mean".
    gw.config_path.write_text(good.replace("fx:\n", "fx:\n    comand: nothing\n", 1))
    answer = reload(gw)
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["reloaded"] is False and body["outcome"] == "invalid" and body["generation"] == 1
    assert re.match(rf"{re.escape(str(gw.config_path))}:\d+:\d+: servers\.fx", body["error"]), body
    assert "did you mean 'command'" in body["error"], body
    assert config_of(gw) == {"generation": 1, "hash": hash_before}
    s = RawSession(gw.mcp_url).initialize()
    assert text_of(s.call_tool("fx__echo", {"text": "still"})["result"]) == "still"

    # The same through SIGHUP: logged at error level.
    gw.proc.send_signal(signal.SIGHUP)
    gw.wait_health(lambda h: "reload (SIGHUP)" in gw.stderr_path.read_text(), 10, "the SIGHUP reload")
    log = gw.stderr_path.read_text()
    assert re.search(r"error reload \(SIGHUP\): .*toolbridge\.yaml:\d+:\d+: servers\.fx.*; the running "
                     r"configuration \(generation 1\) stays", log), log[-2000:]
    assert config_of(gw)["generation"] == 1

    # A key only a restart applies is named.
    gw.config_path.write_text("gateway:\n  trace: /tmp/toolbridge-reload-trace.jsonl\n  listen: 127.0.0.1:1\n"
                              + good)
    answer = reload(gw)
    assert answer.status_code == 422
    assert answer.json()["outcome"] == "restart_needed"
    assert "gateway.listen, gateway.trace cannot change without a restart" in answer.json()["error"]

    # Fixed: SIGHUP applies it; the generation grows and the hash changes.
    gw.config_path.write_text(good + "  fx2:\n" + to_yaml(fixture_server(), 2))
    gw.proc.send_signal(signal.SIGHUP)
    h = gw.wait_health(lambda h: h["config"]["generation"] == 2, 30, "generation 2")
    assert h["config"]["hash"] != hash_before
    gw.wait_ready(["fx", "fx2"])
    s.close()
    gw.close()


def test_mcp_clients_hear_list_changed_and_see_the_new_tools(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()})

    async def scenario():
        changed = anyio.Event()

        async def on_message(message):
            # SDK 1.x wraps notifications in ServerNotification (.root); 2.x hands them as they are.
            if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
                changed.set()

        async with sdk_session(gw.mcp_url, message_handler=on_message) as session:
            before = {t.name for t in (await session.list_tools()).tools}
            await anyio.sleep(0.5)  # the SDK's GET stream is open
            rewrite(gw, {"fx": fixture_server(), "more": fixture_server()})
            answer = await anyio.to_thread.run_sync(reload, gw)
            assert answer.status_code == 200, answer.text
            with anyio.fail_after(15):
                await changed.wait()
            after = {t.name for t in (await session.list_tools()).tools}
            return before, after

    before, after = anyio.run(scenario)
    assert "more__echo" not in before and "more__echo" in after
    assert after - before == {n.replace("fx__", "more__") for n in before}
    gw.close()


TOKEN_OLD = "old-key-0123456789abcdef"
TOKEN_NEW = "new-key-0123456789abcdef"


def test_a_reload_rotates_api_keys(gateway_factory):
    auth = {"keys": [{"name": "old", "token": TOKEN_OLD, "tenant": "run"}]}
    gw = gateway_factory({"fx": fixture_server()}, gateway={"auth": auth})
    gw.headers = {"Authorization": f"Bearer {TOKEN_OLD}"}
    old = httpx.Client(timeout=30, headers={"Authorization": f"Bearer {TOKEN_OLD}"})
    s = RawSession(gw.mcp_url, client=old).initialize()
    assert text_of(s.call_tool("fx__echo", {"text": "a"})["result"]) == "a"
    assert httpx.post(gw.base_url + "/admin/reload", timeout=30).status_code == 401

    rewrite(gw, {"fx": fixture_server()}, gateway={"auth": {"keys": [{"name": "new", "token": TOKEN_NEW, "tenant": "run"}]}})
    answer = reload(gw, headers={"Authorization": f"Bearer {TOKEN_OLD}"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["summary"] == "keys gateway.auth"

    # The old key is out, also on the connection that used it a moment ago.
    refused = s.post(rpc("tools/list", {}, 7))
    assert refused.status_code == 401, refused.text
    assert httpx.get(gw.base_url + "/metrics", headers=gw.headers, timeout=10).status_code == 401
    # The new key is in.
    gw.headers = {"Authorization": f"Bearer {TOKEN_NEW}"}
    fresh = RawSession(gw.mcp_url, client=httpx.Client(timeout=30, headers=gw.headers)).initialize()
    assert text_of(fresh.call_tool("fx__echo", {"text": "b"})["result"]) == "b"
    assert gw.health()["config"]["generation"] == 2
    s.close()
    fresh.close()
    gw.close()


def test_the_cli_and_the_file_watch(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()}, gateway={"watch_config": True})
    env = {**os.environ, "TOOLBRIDGE_URL": gw.mcp_url}
    # The CLI: no change is still a reload (generation 2).
    out = subprocess.run([str(toolbridge_bin()), "reload"], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert re.match(r"reloaded: generation 2, hash [0-9a-f]{64}: no change", out.stdout), out.stdout

    # The watch: a new server in the file is started without any trigger.
    rewrite(gw, {"fx": fixture_server(), "watched": fixture_server()}, gateway={"watch_config": True})
    gw.wait_health(lambda h: h["config"]["generation"] == 3 and "watched" in h["servers"], 15,
                   "the watch to apply the new file")
    gw.wait_ready(["fx", "watched"])
    assert "reload (watch): generation 3" in gw.stderr_path.read_text()

    # An invalid file seen by the watch is logged and changes nothing; the CLI says why.
    gw.config_path.write_text("servers: [\n")
    time.sleep(3)
    assert gw.health()["config"]["generation"] == 3
    assert "error reload (watch)" in gw.stderr_path.read_text()
    out = subprocess.run([str(toolbridge_bin()), "reload", "--url", gw.base_url], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert "reload refused (HTTP 422)" in out.stderr and "toolbridge.yaml:" in out.stderr, out.stderr
    assert "(generation 3) stays" in out.stderr
    gw.close()


def test_a_servers_cache_settings_follow_a_reload(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()})
    s = RawSession(gw.mcp_url).initialize()

    def lookup(rid: int) -> dict:
        answer = s.call_tool("fx__lookup", {"query": "reload"}, rid)
        assert "result" in answer, answer
        return answer["result"]

    # Not cached: every call runs.
    assert not (lookup(1).get("_meta") or {}).get("toolbridge/cache")
    assert not (lookup(2).get("_meta") or {}).get("toolbridge/cache")
    rewrite(gw, {"fx": fixture_server(cache={"tools": ["lookup"], "ttl": "10m"})})
    answer = reload(gw)
    assert answer.status_code == 200 and answer.json()["summary"] == "servers ~fx(cache)", answer.text
    first = lookup(3)
    assert not (first.get("_meta") or {}).get("toolbridge/cache")
    second = lookup(4)
    meta = (second.get("_meta") or {}).get("toolbridge/cache")
    assert meta and meta["hit"] is True, second
    assert text_of(second) == text_of(first)
    s.close()
    gw.close()


def test_a_per_session_session_keeps_its_instance_across_a_reload_until_released(gateway_factory):
    def server(mark: str) -> dict:
        return fixture_server(policy="per_session", spares=1,
                              env={"RELOAD_MARK": mark, "SESSION_DIR": "${session.dir}"})

    gw = gateway_factory({"ps": server("one")})
    s = RawSession(gw.mcp_url).initialize()

    def pid(session: RawSession) -> int:
        answer = session.call_tool("ps__pid", {}, 1)
        assert "result" in answer, answer
        return int(text_of(answer["result"]))

    old = pid(s)
    assert pid(s) == old  # bound to the session
    old_env = environ_of(old)
    assert old_env["RELOAD_MARK"] == "one"
    old_pids = pids_of(gw, "ps")
    assert gw.health()["draining"] == []
    rewrite(gw, {"ps": server("two")})
    answer = reload(gw)
    assert answer.status_code == 200 and answer.json()["summary"] == "servers ~ps(env)", answer.text
    # The session keeps its instance (the same process, its directory and state) across the reload.
    assert pid(s) == old
    assert environ_of(old)["RELOAD_MARK"] == "one"
    # /healthz lists the old version as draining, held by the one session bound to it.
    draining = gw.health()["draining"]
    assert draining == [{"server": "ps", "generation": 1, "reason": "replaced", "in_flight": 0,
                         "sessions_bound": 1}], draining
    # A new session gets an instance of the new version, with a directory of its own.
    fresh = RawSession(gw.mcp_url).initialize()
    new = pid(fresh)
    assert new != old
    new_env = environ_of(new)
    assert new_env["RELOAD_MARK"] == "two"
    assert new_env["SESSION_DIR"] != old_env["SESSION_DIR"] and Path(new_env["SESSION_DIR"]).is_dir()
    # The old version starts nothing new: its spare (and catalog instance) stopped, the bound one runs.
    assert wait_exited([p for p in old_pids if p != old], 15) == []
    assert read_proc(old) is not None and Path(old_env["SESSION_DIR"]).is_dir()
    assert pid(s) == old
    # Released (DELETE /mcp): the instance stops, its directory goes, the old version retires.
    gone = s.client.delete(gw.mcp_url, headers=headers_for(s.session_id, s.version))
    assert gone.status_code == 200, gone.text
    assert wait_exited([old], 15) == []
    assert not Path(old_env["SESSION_DIR"]).exists()
    gw.wait_health(lambda h: h["draining"] == [], 15, "the old version to retire")
    assert "server ps (old version) keeps serving 1 bound sessions until released" in gw.stderr_path.read_text()
    assert "server ps (old version) drained" in gw.stderr_path.read_text()
    assert pid(fresh) == new
    print(f"\nper_session reload: session kept pid {old} until released; new sessions got {new}")
    s.close()
    fresh.close()
    gw.close()


def test_healthz_lists_the_versions_draining_with_their_calls(gateway_factory):
    gw = gateway_factory({"fx": fixture_server(env={"RELOAD_MARK": "one"}), "gone": fixture_server()})

    async def scenario():
        async with httpx.AsyncClient(timeout=60) as client:
            sid = await open_session(client, gw.mcp_url)
            slow = [asyncio.create_task(call(client, gw.mcp_url, sid, f"{server}__sleep", {"ms": 3000}, i))
                    for i, server in enumerate(["fx", "fx", "gone"], start=1)]
            deadline = time.monotonic() + 15
            while sum(s["in_flight"] for s in (await client.get(gw.base_url + "/healthz")).json()["servers"].values()) < 3:
                assert time.monotonic() < deadline, "the calls did not reach their servers"
                await asyncio.sleep(0.05)
            rewrite(gw, {"fx": fixture_server(env={"RELOAD_MARK": "two"})})
            answer = await client.post(gw.base_url + "/admin/reload", timeout=60)
            during = (await client.get(gw.base_url + "/healthz")).json()
            answers = await asyncio.gather(*slow)
            return answer, during, answers

    answer, during, answers = asyncio.run(scenario())
    assert answer.status_code == 200 and answer.json()["summary"] == "servers -gone ~fx(env)", answer.text
    by_server = {d["server"]: d for d in during["draining"]}
    assert by_server == {
        "fx": {"server": "fx", "generation": 1, "reason": "replaced", "in_flight": 2, "sessions_bound": 0},
        "gone": {"server": "gone", "generation": 1, "reason": "removed", "in_flight": 1, "sessions_bound": 0},
    }, during["draining"]
    for msg in answers:
        assert text_of(msg["result"]) == "slept 3000 ms", msg
    gw.wait_health(lambda h: h["draining"] == [], 15, "the draining versions to stop")
    gw.close()


def test_a_reload_changes_tenant_rates_live(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()})
    s = RawSession(gw.mcp_url, client=httpx.Client(timeout=30, headers={"X-Toolbridge-Tenant": "run"})).initialize()
    rid = iter(range(1, 10000))

    def burst(n: int) -> tuple[int, list[str]]:
        ok, shed = 0, []
        for _ in range(n):
            answer = s.call_tool("fx__echo", {"text": "x"}, next(rid))
            if "result" in answer and not answer["result"].get("isError"):
                ok += 1
            else:
                shed.append(json.dumps(answer))
        return ok, shed

    # No rate at all: every call goes.
    assert burst(6) == (6, [])
    # The first rate turns the rate stage on.
    rewrite(gw, {"fx": fixture_server()}, gateway={"tenants": {"run": {"rate": 2}}})
    answer = reload(gw)
    assert answer.status_code == 200 and answer.json()["summary"] == "keys gateway.tenants", answer.text
    ok, shed = burst(8)
    assert ok <= 4 and shed, (ok, shed)
    assert "tenant 'run' is over its rate of 2 calls per second" in shed[0] and "tenants.run.rate" in shed[0]
    # Raised: the calls that were shed go now.
    rewrite(gw, {"fx": fixture_server()}, gateway={"tenants": {"run": {"rate": 1000}}})
    assert reload(gw).status_code == 200
    assert burst(20) == (20, [])
    # Lowered through tenant_rate (the tenant's own rate removed): the window of the last second
    # is kept, so the next calls are shed at once.
    rewrite(gw, {"fx": fixture_server()}, gateway={"tenant_rate": 1})
    answer = reload(gw)
    assert answer.status_code == 200
    assert answer.json()["summary"] == "keys gateway.tenant_rate, gateway.tenants", answer.text
    ok, shed = burst(4)
    assert ok <= 1 and len(shed) >= 3, (ok, shed)
    assert "over its rate of 1 calls per second" in shed[-1] and "(tenant_rate)" in shed[-1]
    s.close()
    gw.close()


def test_a_reload_changes_surfaces_and_logs_a_fingerprint_that_moved(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})

    def with_surface(description: str) -> None:
        gw.config_path.write_text(to_yaml({"servers": {"fixture": fixture_server()}, "surfaces": {
            "bench": {"tools": {"fixture__echo": {"name": "say", "description": description}}}}}))

    with_surface("Repeats the text.")
    answer = reload(gw)
    assert answer.status_code == 200 and answer.json()["summary"] == "keys surfaces", answer.text
    first = gw.health()["surfaces"]["bench"]["fingerprint"]
    s = RawSession(gw.base_url + "/s/bench/mcp").initialize()
    tools = s.request("tools/list", {}, 1)["result"]["tools"]
    assert [(t["name"], t["description"]) for t in tools] == [("say", "Repeats the text.")]

    with_surface("Repeats the text it is given, unchanged.")
    assert reload(gw).status_code == 200
    second = gw.health()["surfaces"]["bench"]["fingerprint"]
    assert second != first
    assert f"reload: surface bench fingerprint {first} -> {second}" in gw.stderr_path.read_text()
    # The session keeps its surface by name and sees the new description.
    tools = s.request("tools/list", {}, 2)["result"]["tools"]
    assert [(t["name"], t["description"]) for t in tools] == [("say", "Repeats the text it is given, unchanged.")]
    s.close()
    gw.close()


def test_a_reload_raises_the_gateway_limit_and_waiting_calls_go_at_once(gateway_factory):
    gw = gateway_factory({"fx": fixture_server()}, gateway={"max_calls_in_flight": 1})

    async def scenario():
        async with httpx.AsyncClient(timeout=60) as client:
            sid = await open_session(client, gw.mcp_url)
            calls = [asyncio.create_task(call(client, gw.mcp_url, sid, "fx__sleep", {"ms": 2500}, i))
                     for i in range(1, 4)]
            deadline = time.monotonic() + 15
            while (await client.get(gw.base_url + "/healthz")).json()["admission"]["queued"] < 2:
                assert time.monotonic() < deadline, "the calls did not queue behind the limit"
                await asyncio.sleep(0.05)
            rewrite(gw, {"fx": fixture_server()}, gateway={"max_calls_in_flight": 3})
            answer = await client.post(gw.base_url + "/admin/reload")
            reloaded = time.monotonic()
            answers = await asyncio.gather(*calls)
            return answer, time.monotonic() - reloaded, answers

    answer, after_reload, answers = asyncio.run(scenario())
    assert answer.status_code == 200 and answer.json()["summary"] == "keys gateway.max_calls_in_flight"
    for msg in answers:
        assert text_of(msg["result"]) == "slept 2500 ms", msg
    # The two waiting calls were admitted by the reload, not one after the other (2 x 2.5 s).
    assert after_reload < 4.0, after_reload
    assert gw.health()["admission"]["max_calls_in_flight"] == 3
    gw.close()


def rewrite_models(gw, servers: dict, models: dict) -> None:
    doc: dict = {"servers": servers}
    if models:
        doc["models"] = models
    gw.config_path.write_text(to_yaml(doc))
    gw.servers = servers


def test_a_reload_adds_the_first_model_and_removes_it(gateway_factory):
    worker = Worker("w0", "--decode-ms-per-token", "1")
    try:
        gw = gateway_factory({"fx": fixture_server()})
        body = chat_body([{"role": "user", "content": "hi"}], model="sim", max_tokens=3)
        # Without models the OpenAI routes answer, naming what is missing.
        r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 404, r.text
        assert r.json()["error"]["code"] == "model_not_found"
        assert "the model 'sim' does not exist here; this gateway serves: none" in r.json()["error"]["message"]
        assert httpx.get(gw.base_url + "/v1/models", timeout=10).json()["data"] == []

        rewrite_models(gw, {"fx": fixture_server()}, {"sim": model_entry([worker])})
        answer = reload(gw)
        assert answer.status_code == 200 and answer.json()["summary"] == "models +sim", answer.text
        assert [m["id"] for m in httpx.get(gw.base_url + "/v1/models", timeout=10).json()["data"]] == ["sim"]
        r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["x-toolbridge-worker"] == "w0"
        assert worker.stats()["requests"] >= 1

        rewrite_models(gw, {"fx": fixture_server()}, {})
        answer = reload(gw)
        assert answer.status_code == 200 and answer.json()["summary"] == "models -sim", answer.text
        r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30)
        assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found", r.text
        gw.wait_health(lambda h: "model sim (old version) drained" in gw.stderr_path.read_text(), 10,
                       "the removed model to stop")
        gw.close()
    finally:
        worker.kill()


def test_a_model_request_in_flight_across_a_reload_that_changes_the_model_completes(gateway_factory):
    # w0 takes 200 ms per token: a 15-token answer streams for 3 s, across the reload.
    slow = Worker("w0", "--decode-ms-per-token", "200", "--output-tokens", "15")
    fast = Worker("w1", "--decode-ms-per-token", "1")
    try:
        gw = gateway_factory({"fx": fixture_server()}, name="llm")
        rewrite_models(gw, {"fx": fixture_server()}, {"sim": model_entry([slow], routing="least_outstanding")})
        assert reload(gw).json()["summary"] == "models +sim"
        body = chat_body([{"role": "user", "content": "count"}], model="sim", stream=True, max_tokens=15)
        streamed: dict = {}

        def stream() -> None:
            with httpx.stream("POST", gw.base_url + "/v1/chat/completions", json=body, timeout=60) as r:
                streamed["status"] = r.status_code
                streamed["worker"] = r.headers.get("x-toolbridge-worker")
                streamed["text"] = r.read().decode()

        import threading
        t = threading.Thread(target=stream)
        t.start()
        deadline = time.monotonic() + 15
        while slow.stats()["running"] < 1:
            assert time.monotonic() < deadline, "the request did not reach w0"
            time.sleep(0.02)
        # The model now points at another worker (and times out sooner): the request in flight
        # finishes on the old definition, new ones go to the new one.
        rewrite_models(gw, {"fx": fixture_server()},
                       {"sim": model_entry([fast], routing="least_outstanding", request_timeout="30s")})
        answer = reload(gw)
        assert answer.status_code == 200 and answer.json()["summary"] == "models ~sim", answer.text
        assert t.is_alive(), "the request finished before the reload"
        r = httpx.post(gw.base_url + "/v1/chat/completions", timeout=30,
                       json=chat_body([{"role": "user", "content": "hi"}], model="sim", max_tokens=2))
        assert r.status_code == 200 and r.headers["x-toolbridge-worker"] == "w1", r.text
        assert "model sim (old version) drained" not in gw.stderr_path.read_text()
        t.join(30)
        assert streamed["status"] == 200 and streamed["worker"] == "w0", streamed
        events = sse_events(streamed["text"])
        assert events[-1] == "[DONE]", streamed["text"][-500:]
        chunks = [json.loads(e) for e in events[:-1]]
        assert sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")) == 15
        gw.wait_health(lambda h: "model sim (old version) drained" in gw.stderr_path.read_text(), 10,
                       "the old version of the model to stop")
        gw.close()
    finally:
        slow.kill()
        fast.kill()

