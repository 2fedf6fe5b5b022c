"""The result cache against a real gateway and the real fixture server: hits, misses, expiry,
bypass, refresh and max age; the canonical key; error results never stored; scopes isolate
trajectories and tenants; the memory tier keeps within its bytes; a hit takes no admission slot;
1,000 concurrent identical calls run the tool once. The fixture's `lookup` tool counts its
executions (`executions` reads the count)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from tb_support import RawSession, fixture_server, headers_for, initialize_params, metric, parse_body, response_for, rpc, text_of

pytestmark = [pytest.mark.timeout(240)]

VERSION = "2025-06-18"
BATCH_VERSION = "2025-03-26"
META_KEY = "toolbridge/cache"


def cached_server(**cache) -> dict:
    return fixture_server(cache={"tools": ["lookup"], "ttl": "10m", **cache})


class Agent:
    def __init__(self, gw, **headers: str):
        self.s = RawSession(gw.mcp_url).initialize()
        self.headers = headers
        self.next_id = 1

    def call(self, tool: str, args: dict, meta: dict | None = None) -> dict:
        params: dict = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        self.next_id += 1
        resp = self.s.post(rpc("tools/call", params, self.next_id), **self.headers)
        assert resp.status_code == 200, resp.text[:300]
        answer = response_for(parse_body(resp), self.next_id)
        assert "result" in answer, answer
        return answer["result"]

    def lookup(self, args: dict, meta: dict | None = None) -> dict:
        return self.call("fixture__lookup", args, meta)

    def executions(self) -> int:
        return int(text_of(self.call("fixture__executions", {})))


def cache_meta(result: dict) -> dict | None:
    return (result.get("_meta") or {}).get(META_KEY)


def execution(result: dict) -> int:
    return json.loads(text_of(result))["execution"]



def test_a_repeated_call_is_a_hit_that_says_so(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    a = Agent(gw)
    first = a.lookup({"query": "mcp gateway"})
    assert cache_meta(first) is None
    second = a.lookup({"query": "mcp gateway"})
    meta = cache_meta(second)
    assert meta and meta["hit"] is True and meta["tier"] == "memory" and meta["age_ms"] >= 0, second
    assert text_of(second) == text_of(first)
    assert a.executions() == 1
    other = a.lookup({"query": "something else"})
    assert cache_meta(other) is None and execution(other) == 2
    assert metric(gw, "toolbridge_cache_hits_total", tier="memory") == 1
    assert metric(gw, "toolbridge_cache_misses_total") == 2
    assert metric(gw, "toolbridge_cache_upstream_seconds_saved_total") > 0
    assert metric(gw, "toolbridge_cache_bytes", tier="memory") > 0


def test_the_key_is_canonical(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    a = Agent(gw)
    a.lookup({"query": "café", "delay_ms": 1})
    # Key order, 1 vs 1.0, a unicode escape: the same call.
    body = ('{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"fixture__lookup",'
            '"arguments":{ "delay_ms" : 1.0 , "query" : "caf\\u00e9" }}}')
    resp = a.s.post(body)
    again = response_for(parse_body(resp), 77)["result"]
    assert cache_meta(again) and cache_meta(again)["hit"], again
    assert a.executions() == 1
    # A different value, or an extra argument, is a different call.
    assert cache_meta(a.lookup({"query": "café", "delay_ms": 2})) is None
    assert cache_meta(a.lookup({"query": "café", "delay_ms": 1, "fail": False})) is None
    assert a.executions() == 3


def test_bypass_refresh_and_max_age(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    a = Agent(gw)
    assert execution(a.lookup({"query": "q"})) == 1
    bypassed = a.lookup({"query": "q"}, {META_KEY: "bypass"})
    assert cache_meta(bypassed) is None and execution(bypassed) == 2
    # bypass neither reads nor writes: the entry is still the first result.
    assert execution(a.lookup({"query": "q"})) == 1
    refreshed = a.lookup({"query": "q"}, {META_KEY: "refresh"})
    assert cache_meta(refreshed) is None and execution(refreshed) == 3
    hit = a.lookup({"query": "q"})
    assert cache_meta(hit)["hit"] and execution(hit) == 3
    time.sleep(0.3)
    assert cache_meta(a.lookup({"query": "q"}, {META_KEY: {"max_age_ms": 60000}}))["hit"]
    young = a.lookup({"query": "q"}, {META_KEY: {"max_age_ms": 100}})
    assert cache_meta(young) is None and execution(young) == 4
    # The fresh result was stored: a bare number is a max age too.
    assert execution(a.lookup({"query": "q"}, {META_KEY: 60000})) == 4
    # Other _meta keys still reach the server; ours never does.
    seen = a.lookup({"query": "q"}, {META_KEY: "refresh", "custom/key": 1})
    keys = json.loads(text_of(seen))["meta_keys"]
    assert "custom/key" in keys and META_KEY not in keys, keys
    bad = a.s.request("tools/call", {"name": "fixture__lookup", "arguments": {"query": "q"},
                                     "_meta": {META_KEY: "sometimes"}}, 99)
    assert bad["error"]["code"] == -32602 and "toolbridge/cache" in bad["error"]["message"], bad


def test_error_results_are_never_cached(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    a = Agent(gw)
    for n in (1, 2, 3):
        r = a.lookup({"query": "q", "fail": True})
        assert r.get("isError") is True and cache_meta(r) is None and execution(r) == n
    assert metric(gw, "toolbridge_cache_not_stored_total", reason="error") == 3


def test_tools_not_listed_are_not_cached_and_annotations_only_when_asked(gateway_factory):
    gw = gateway_factory({"listed": fixture_server(cache={"tools": ["echo"]}),
                          "annotated": fixture_server(cache={"annotations": True})})
    a = Agent(gw)
    for _ in range(2):
        unlisted = a.call("listed__lookup", {"query": "q"})
    assert cache_meta(unlisted) is None and execution(unlisted) == 2
    a.call("listed__echo", {"text": "hi"})
    assert cache_meta(a.call("listed__echo", {"text": "hi"}))["hit"]
    # lookup is annotated readOnlyHint: cached under annotations: true; echo has no annotations.
    a.call("annotated__lookup", {"query": "q"})
    assert cache_meta(a.call("annotated__lookup", {"query": "q"}))["hit"]
    a.call("annotated__echo", {"text": "hi"})
    assert cache_meta(a.call("annotated__echo", {"text": "hi"})) is None


def test_trajectory_scope_isolates_trajectories(gateway_factory):
    gw = gateway_factory({"fixture": cached_server(scope="trajectory")})
    a = Agent(gw)
    one = {"toolbridge/session": "traj-1"}
    two = {"toolbridge/session": "traj-2"}
    assert execution(a.lookup({"query": "q"}, one)) == 1
    assert execution(a.lookup({"query": "q"}, two)) == 2
    hit = a.lookup({"query": "q"}, one)
    assert cache_meta(hit)["hit"] and execution(hit) == 1
    assert execution(a.lookup({"query": "q"}, two)) == 2


def test_tenant_scope_isolates_tenants(gateway_factory):
    gw = gateway_factory({"fixture": cached_server(scope="tenant")})
    a = Agent(gw)
    run_a = {"toolbridge/tenant": "run-a"}
    a.lookup({"query": "q"}, run_a)
    assert cache_meta(a.lookup({"query": "q"}, {"toolbridge/tenant": "run-b"})) is None
    # Another session of the same run shares its entries.
    assert cache_meta(Agent(gw).lookup({"query": "q"}, run_a))["hit"]


def test_the_memory_tier_keeps_within_its_bytes(gateway_factory):
    budget = 64 * 1024
    gw = gateway_factory({"fixture": cached_server()}, {"cache": {"memory_bytes": budget}})
    a = Agent(gw)
    for i in range(100):
        a.lookup({"query": f"{i:04d}" + "x" * 2000})
        assert metric(gw, "toolbridge_cache_bytes", tier="memory") <= budget
    assert metric(gw, "toolbridge_cache_evictions_total", tier="memory") > 0
    # The least recently used went first; the latest is still there.
    assert cache_meta(a.lookup({"query": "0099" + "x" * 2000}))["hit"]
    assert cache_meta(a.lookup({"query": "0000" + "x" * 2000})) is None


def test_a_hit_takes_no_admission_slot(gateway_factory):
    gw = gateway_factory({"fixture": cached_server(ttl="10m") | {"concurrency_limit": 1,
                                                                 "call_timeout": "60s"}})
    a = Agent(gw)
    a.lookup({"query": "cached"})
    holder = Agent(gw)

    async def hold():
        await asyncio.to_thread(holder.lookup, {"query": "slow", "delay_ms": 3000})

    async def main():
        task = asyncio.create_task(hold())
        await asyncio.sleep(0.5)  # the only slot is taken
        start = time.monotonic()
        hit = await asyncio.to_thread(a.lookup, {"query": "cached"})
        elapsed = time.monotonic() - start
        await task
        return hit, elapsed

    hit, elapsed = asyncio.run(main())
    assert cache_meta(hit)["hit"]
    assert elapsed < 2.0, f"the hit waited {elapsed:.2f}s behind a full admission queue"


async def open_session(client: httpx.AsyncClient, url: str) -> str:
    resp = await client.post(url, content=json.dumps(rpc("initialize", initialize_params(BATCH_VERSION), 0)),
                             headers=headers_for(None, None))
    sid = resp.headers["mcp-session-id"]
    await client.post(url, content=json.dumps(rpc("notifications/initialized")),
                      headers=headers_for(sid, BATCH_VERSION))
    return sid


async def batch(client: httpx.AsyncClient, url: str, sid: str, ids: range, tool: str, args: dict) -> list[dict]:
    body = [rpc("tools/call", {"name": tool, "arguments": args}, i) for i in ids]
    resp = await client.post(url, content=json.dumps(body), headers=headers_for(sid, BATCH_VERSION))
    assert resp.status_code == 200, resp.text[:300]
    messages = parse_body(resp)
    answers = [response_for(messages, i) for i in ids]
    assert all("result" in m for m in answers), [m for m in answers if "result" not in m][:3]
    return [m["result"] for m in answers]


def concurrent_identical_calls(gw, tool: str, args: dict, calls: int = 1000, sessions: int = 10) -> list[dict]:
    async def main():
        limits = httpx.Limits(max_connections=100, max_keepalive_connections=100)
        async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120, pool=None)) as c:
            sids = await asyncio.gather(*(open_session(c, gw.mcp_url) for _ in range(sessions)))
            per = calls // sessions
            parts = await asyncio.gather(*(batch(c, gw.mcp_url, sid, range(n * per, (n + 1) * per), tool, args)
                                           for n, sid in enumerate(sids)))
            return [r for p in parts for r in p]
    return asyncio.run(main())


@pytest.mark.serial
def test_a_thousand_identical_calls_run_once(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    results = concurrent_identical_calls(gw, "fixture__lookup", {"query": "same", "delay_ms": 1500})
    assert len(results) == 1000
    assert {execution(r) for r in results} == {1}
    assert all(not r.get("isError") for r in results)
    assert Agent(gw).executions() == 1
    coalesced = metric(gw, "toolbridge_cache_coalesced_total")
    hits = metric(gw, "toolbridge_cache_hits_total")
    assert coalesced + hits == 999 and coalesced > 0, (coalesced, hits)


@pytest.mark.serial
def test_idempotent_tools_are_coalesced_but_not_cached(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(idempotent_tools=["lookup"])})
    results = concurrent_identical_calls(gw, "fixture__lookup", {"query": "same", "delay_ms": 1500})
    assert {execution(r) for r in results} == {1}
    a = Agent(gw)
    assert a.executions() == 1
    later = a.lookup({"query": "same"})
    assert cache_meta(later) is None and execution(later) == 2  # nothing was stored
    # Tools neither cached nor idempotent are never shared.
    parts = concurrent_identical_calls(gw, "fixture__counter", {}, calls=20, sessions=2)
    assert len({text_of(r) for r in parts}) == 20


def test_a_follower_keeps_its_own_deadline(gateway_factory):
    gw = gateway_factory({"fixture": cached_server()})
    leader, follower = Agent(gw), Agent(gw)

    async def main():
        lead = asyncio.create_task(asyncio.to_thread(leader.lookup, {"query": "q", "delay_ms": 2500}))
        await asyncio.sleep(0.5)
        start = time.monotonic()
        follow = await asyncio.to_thread(follower.lookup, {"query": "q", "delay_ms": 2500},
                                         {"toolbridge/timeout_ms": 300})
        elapsed = time.monotonic() - start
        return await lead, follow, elapsed

    led, followed, elapsed = asyncio.run(main())
    assert followed.get("isError") and "timed out" in text_of(followed), followed
    assert elapsed < 2.0, (elapsed, text_of(followed))
    assert execution(led) == 1 and not led.get("isError")


def test_the_disk_tier_survives_a_gateway_restart(gateway_factory, tmp_path):
    store = {"cache": {"disk": {"path": str(tmp_path / "cache"), "max_bytes": "64MiB"}}}
    servers = {"fixture": cached_server(tier="disk")}
    first = gateway_factory(servers, store)
    a = Agent(first)
    assert execution(a.lookup({"query": "kept"})) == 1
    meta = cache_meta(a.lookup({"query": "kept"}))
    assert meta["hit"] is True and meta["tier"] == "disk", meta
    first.close()
    second = gateway_factory(servers, store)
    b = Agent(second)
    hit = b.lookup({"query": "kept"})
    assert cache_meta(hit)["hit"] and cache_meta(hit)["tier"] == "disk", hit
    assert execution(hit) == 1  # the first gateway's result
    assert b.executions() == 0  # the second gateway's fixture never ran it
    assert metric(second, "toolbridge_cache_bytes", tier="disk") > 0
    assert metric(second, "toolbridge_cache_hits_total", tier="disk") == 1


class RedisServer:
    """A real redis-server on a free loopback port, without persistence."""

    def __init__(self, workdir, port: int = 0):
        import shutil
        import socket
        import subprocess
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (scripts/setup installs it)"
        self.port = port
        if not port:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
        workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        self.close()
        raise AssertionError("redis-server did not start")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def signal(self, sig) -> None:
        self.proc.send_signal(sig)

    def key_count(self) -> int:
        """Keys the server holds (DBSIZE)."""
        import socket
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as c:
            c.sendall(b"DBSIZE\r\n")
            reply = c.recv(64)
        assert reply.startswith(b":"), reply
        return int(reply[1:].strip())

    def wait_for_keys(self, n: int, timeout: float = 10.0) -> None:
        """A gateway stores a result after answering the call: wait until Redis has it."""
        deadline = time.monotonic() + timeout
        while self.key_count() < n:
            assert time.monotonic() < deadline, f"Redis holds {self.key_count()} keys, not {n}"
            time.sleep(0.02)

    def close(self) -> None:
        import signal as signals
        if self.proc.poll() is None:
            self.proc.send_signal(signals.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def redis(tmp_path):
    server = RedisServer(tmp_path / "redis")
    yield server
    server.close()


def redis_store(redis, timeout: str = "250ms") -> dict:
    return {"cache": {"redis": {"address": redis.address, "timeout": timeout, "key_prefix": "tb-test:"}}}


def test_two_gateways_share_hits_through_one_redis(gateway_factory, redis):
    servers = {"fixture": cached_server(tier="redis")}
    # A generous timeout: under a loaded test run a 250 ms one can turn a store into a miss.
    one = gateway_factory(servers, redis_store(redis, "5s"))
    two = gateway_factory(servers, redis_store(redis, "5s"))
    a, b = Agent(one), Agent(two)
    assert execution(a.lookup({"query": "shared"})) == 1
    redis.wait_for_keys(1)
    hit = b.lookup({"query": "shared"})
    assert cache_meta(hit)["hit"] and cache_meta(hit)["tier"] == "redis", hit
    assert b.executions() == 0 and a.executions() == 1
    # And the other way round.
    b.lookup({"query": "from two"})
    redis.wait_for_keys(2)
    assert cache_meta(a.lookup({"query": "from two"}))["tier"] == "redis"
    assert metric(two, "toolbridge_cache_hits_total", tier="redis") == 1


def test_a_stopped_or_killed_redis_degrades_to_misses_in_bounded_time(gateway_factory, redis):
    import signal as signals
    gw = gateway_factory({"fixture": cached_server(tier="redis")}, redis_store(redis, "200ms"))
    a = Agent(gw)
    # Stored and hit (retried: under a loaded run one store may miss its 200 ms).
    deadline = time.monotonic() + 10
    while not (cache_meta(a.lookup({"query": "q"})) or {}).get("hit"):
        assert time.monotonic() < deadline, "Redis never answered a hit"
        time.sleep(0.1)
    # Slow: the server takes connections' bytes but never answers.
    redis.signal(signals.SIGSTOP)
    for n in range(3):
        start = time.monotonic()
        r = a.lookup({"query": "q"})
        elapsed = time.monotonic() - start
        assert not r.get("isError") and cache_meta(r) is None, r
        assert elapsed < 1.5, f"call {n} took {elapsed:.2f}s with Redis stopped"
    # Dead.
    redis.signal(signals.SIGCONT)
    redis.proc.kill()
    redis.proc.wait(timeout=10)
    for n in range(5):
        start = time.monotonic()
        r = a.lookup({"query": "q"})
        elapsed = time.monotonic() - start
        assert not r.get("isError") and cache_meta(r) is None, r
        assert elapsed < 1.5, f"call {n} took {elapsed:.2f}s with Redis dead"
    assert metric(gw, "toolbridge_cache_redis_failures_total") >= 1
    assert gw.health()  # still serving


def test_the_redis_tier_reconnects_when_redis_is_back(gateway_factory, redis, tmp_path):
    gw = gateway_factory({"fixture": cached_server(tier="redis")}, redis_store(redis, "200ms"))
    a = Agent(gw)
    a.lookup({"query": "before"})
    redis.proc.kill()
    redis.proc.wait(timeout=10)
    assert cache_meta(a.lookup({"query": "during"})) is None
    back = RedisServer(tmp_path / "redis-again", port=redis.port)  # empty: no persistence
    try:
        deadline = time.monotonic() + 10
        while True:
            a.lookup({"query": "after"})
            meta = cache_meta(a.lookup({"query": "after"}))
            if meta and meta["tier"] == "redis":
                break
            assert time.monotonic() < deadline, "the gateway did not use Redis again"
            time.sleep(0.3)
    finally:
        back.close()
