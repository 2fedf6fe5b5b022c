"""Admission control against a real gateway and real fixture servers: every limit holds under
1,000 concurrent calls (the server never sees more calls at once than the limit), a greedy tenant
does not starve a light one, a call whose deadline passes in the queue gets a clear isError
result, and a full queue sheds at once with a hint when to retry."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest

from tb_support import fixture_server, headers_for, initialize_params, parse_body, response_for, rpc, text_of

pytestmark = [pytest.mark.timeout(240), pytest.mark.serial]

VERSION = "2025-06-18"
BATCH_VERSION = "2025-03-26"
CALLS = 1000
SESSIONS = 10


async def open_session(client: httpx.AsyncClient, url: str, version: str = VERSION, **headers: str) -> str:
    resp = await client.post(url, content=json.dumps(rpc("initialize", initialize_params(version), 0)),
                             headers=headers_for(None, None, **headers))
    assert resp.status_code == 200, resp.text[:300]
    sid = resp.headers["mcp-session-id"]
    note = await client.post(url, content=json.dumps(rpc("notifications/initialized")),
                             headers=headers_for(sid, version))
    assert note.status_code == 202
    return sid


async def call(client: httpx.AsyncClient, url: str, sid: str, req_id: int, tool: str, args: dict,
               meta: dict | None = None) -> dict:
    params: dict = {"name": tool, "arguments": args}
    if meta:
        params["_meta"] = meta
    resp = await client.post(url, content=json.dumps(rpc("tools/call", params, req_id)),
                             headers=headers_for(sid, VERSION))
    assert resp.status_code == 200, resp.text[:300]
    answer = response_for(parse_body(resp), req_id)
    assert "result" in answer, answer
    return answer["result"]


async def batch(client: httpx.AsyncClient, url: str, sid: str, ids: range, tool: str, args: dict,
                meta: dict | None = None) -> list[dict]:
    """Many calls in one POST (a JSON-RPC batch, 2025-03-26): all in flight at once on one
    connection."""
    params: dict = {"name": tool, "arguments": args}
    if meta:
        params["_meta"] = meta
    body = [rpc("tools/call", params, i) for i in ids]
    resp = await client.post(url, content=json.dumps(body), headers=headers_for(sid, BATCH_VERSION))
    assert resp.status_code == 200, resp.text[:300]
    messages = parse_body(resp)
    answers = [response_for(messages, i) for i in ids]
    assert all("result" in a for a in answers), [a for a in answers if "result" not in a][:3]
    return [a["result"] for a in answers]


def client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=300, max_keepalive_connections=300)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(180, pool=None))


LIMITS = {
    # name: (gateway keys, server keys, _meta per call, the most calls the server may see at once)
    "global": ({"max_calls_in_flight": 4}, {}, None, 4),
    "server": ({}, {"concurrency_limit": 5}, None, 5),
    "tool": ({}, {"tool_limits": {"busy": 3}}, None, 3),
    "tenant": ({"tenants": {"run-a": {"limit": 6}}}, {}, {"toolbridge/tenant": "run-a"}, 6),
    "trajectory": ({"trajectory_limit": 2}, {}, {"toolbridge/session": "one-trajectory"}, 2),
}


@pytest.mark.parametrize("kind", list(LIMITS))
def test_a_limit_holds_under_a_thousand_concurrent_calls(gateway_factory, kind):
    gateway_keys, server_keys, meta, limit = LIMITS[kind]
    gw = gateway_factory({"fixture": fixture_server(call_timeout="120s", **server_keys)},
                         {"admission_queue_size": 2 * CALLS, **gateway_keys})

    async def main():
        async with client() as c:
            sids = await asyncio.gather(*(open_session(c, gw.mcp_url, BATCH_VERSION) for _ in range(SESSIONS)))
            per = CALLS // SESSIONS
            return await asyncio.gather(*(batch(c, gw.mcp_url, sid, range(n * per, (n + 1) * per), "fixture__busy",
                                                {"ms": 2}, meta) for n, sid in enumerate(sids)))

    results = [r for part in asyncio.run(main()) for r in part]
    assert len(results) == CALLS
    errors = [text_of(r) for r in results if r.get("isError")]
    assert not errors, errors[:3]
    seen = max(json.loads(text_of(r))["max_concurrent"] for r in results)
    assert seen <= limit, f"{kind}: the server saw {seen} calls at once, the limit is {limit}"
    # The limit was reached (calls did queue): otherwise this test proves nothing.
    assert seen == limit, f"{kind}: the server never saw more than {seen} calls at once"
    metrics = gw.metrics()
    admitted = sum(int(float(v)) for v in re.findall(r'^toolbridge_admission_admitted_total\{[^}]*\} (\S+)$',
                                                     metrics, re.M))
    assert admitted == CALLS
    admission = gw.health()["admission"]
    assert admission["queued"] == 0 and admission["in_flight"] == 0, admission


def test_a_greedy_tenant_does_not_starve_a_light_one(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=2, call_timeout="120s")})
    done: list[str] = []

    async def tracked(c, sid, i, tenant, meta=None):
        r = await call(c, gw.mcp_url, sid, i, "fixture__sleep", {"ms": 50}, meta)
        assert not r.get("isError"), r
        done.append(tenant)

    async def main():
        async with client() as c:
            # The greedy run names itself by header (on its session), the light one by _meta.
            greedy = await open_session(c, gw.mcp_url, **{"X-Toolbridge-Tenant": "greedy"})
            light = await open_session(c, gw.mcp_url)
            greedy_calls = [asyncio.create_task(tracked(c, greedy, i, "greedy")) for i in range(200)]
            for _ in range(500):
                await asyncio.sleep(0.01)
                health = (await c.get(gw.base_url + "/healthz")).json()
                queued = health["admission"]["servers"]["fixture"]["queued_by_tenant"]
                if queued.get("greedy", 0) >= 150:
                    break
            else:
                pytest.fail(f"the greedy calls never queued: {gw.health()['admission']}")
            light_calls = [asyncio.create_task(tracked(c, light, 1000 + i, "light", {"toolbridge/tenant": "light"}))
                           for i in range(5)]
            await asyncio.gather(*greedy_calls, *light_calls)

    asyncio.run(main())
    last_light = max(i for i, t in enumerate(done) if t == "light")
    greedy_before = done[:last_light].count("greedy")
    # Fair: the light run's 5 calls go every other slot, not after the 150 greedy ones queued.
    assert greedy_before < 60, f"{greedy_before} greedy calls finished before the light run's last one"


def test_a_call_whose_deadline_passes_in_the_queue_gets_a_clear_error(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=1)})

    async def main():
        async with client() as c:
            sid = await open_session(c, gw.mcp_url)
            holder = asyncio.create_task(call(c, gw.mcp_url, sid, 1, "fixture__sleep", {"ms": 3000}))
            await asyncio.sleep(0.3)
            started = time.monotonic()
            waited = await call(c, gw.mcp_url, sid, 2, "fixture__echo", {"text": "x"},
                                {"toolbridge/timeout_ms": 500})
            elapsed = time.monotonic() - started
            await holder
            return waited, elapsed

    result, elapsed = asyncio.run(main())
    assert result.get("isError") is True, result
    text = text_of(result)
    assert "admission queue of server 'fixture'" in text, text
    assert "position 1 of 1 queued" in text, text
    assert "held by servers.fixture.concurrency_limit (1)" in text, text
    assert re.search(r"waited 0\.[4-9] s", text), text
    assert elapsed < 2.5, f"the queued call waited {elapsed:.1f} s, past its 0.5 s deadline"
    assert 'toolbridge_admission_expired_total{server="fixture",tenant="other"} 1' in gw.metrics()


def test_a_full_queue_sheds_at_once_with_a_retry_hint(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=1)}, {"admission_queue_size": 2})

    async def main():
        async with client() as c:
            sid = await open_session(c, gw.mcp_url)
            held = [asyncio.create_task(call(c, gw.mcp_url, sid, i, "fixture__sleep", {"ms": 1500}))
                    for i in range(3)]
            for _ in range(300):
                await asyncio.sleep(0.01)
                health = (await c.get(gw.base_url + "/healthz")).json()
                if health["admission"]["servers"]["fixture"]["queued"] == 2:
                    break
            started = time.monotonic()
            shed = await call(c, gw.mcp_url, sid, 9, "fixture__echo", {"text": "x"})
            elapsed = time.monotonic() - started
            rest = await asyncio.gather(*held)
            return shed, elapsed, rest

    shed, elapsed, rest = asyncio.run(main())
    assert shed.get("isError") is True, shed
    assert re.fullmatch(r"fixture is overloaded: 2 calls queued; retry in ~\d+ s", text_of(shed)), text_of(shed)
    assert elapsed < 1.0, f"shedding took {elapsed:.1f} s"
    assert all(not r.get("isError") for r in rest), rest
    metrics = gw.metrics()
    assert 'toolbridge_admission_shed_total{server="fixture",tenant="other"} 1' in metrics
    assert 'toolbridge_calls_total{outcome="shed",server="fixture",tool="fixture__echo"} 1' in metrics or \
        re.search(r'toolbridge_calls_total\{[^}]*outcome="shed"[^}]*\} 1', metrics), metrics


def test_healthz_shows_limits_and_a_server_without_one_has_its_capacity(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(tool_limits={"sleep": 2}),
                          "plain": fixture_server()},
                         {"tenants": {"run-a": {"limit": 3, "weight": 2}}})
    admission = gw.health()["admission"]
    assert admission["tenants"]["run-a"] == {"limit": 3, "weight": 2.0, "in_flight": 0}
    assert admission["servers"]["fixture"]["tool_limits"] == {"sleep": {"limit": 2, "in_flight": 0}}
    # No concurrency_limit: its capacity, max_in_flight (256) on its one shared instance.
    assert admission["servers"]["plain"]["limit"] == 256


def test_the_adaptive_limit_falls_when_latency_rises_and_recovers_when_it_falls(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(
        concurrency_limit="adaptive", call_timeout="120s",
        adaptive={"min_limit": 1, "max_limit": 64, "window": "100ms", "probe_interval": "1h"})})

    def limit() -> int:
        return gw.health()["admission"]["servers"]["fixture"]["limit"]

    async def load(c, sids, seconds: float, args: dict):
        stop = time.monotonic() + seconds

        async def worker(n: int):
            i = 0
            while time.monotonic() < stop:
                r = await call(c, gw.mcp_url, sids[n % len(sids)], n * 100000 + i, "fixture__busy", args)
                assert not r.get("isError"), r
                i += 1

        await asyncio.gather(*(worker(n) for n in range(40)))

    async def main():
        async with client() as c:
            sids = await asyncio.gather(*(open_session(c, gw.mcp_url) for _ in range(8)))
            # Unloaded and fast: the limit grows.
            await load(c, sids, 3.0, {"ms": 5})
            grown = limit()
            # The server now slows down steeply with its own concurrency: the limit comes down.
            await load(c, sids, 3.0, {"ms": 20, "k": 2})
            fallen = limit()
            # Fast again: it recovers.
            await load(c, sids, 4.0, {"ms": 5})
            return grown, fallen, limit()

    grown, fallen, recovered = asyncio.run(main())
    assert grown >= 16, f"the limit did not grow on a fast server: {grown}"
    assert fallen <= 4, f"the limit did not come down when the server slowed: {grown} -> {fallen}"
    assert recovered >= 16, f"the limit did not recover: {fallen} -> {recovered}"
    assert re.search(r'^toolbridge_admission_limit\{server="fixture"\} \d+', gw.metrics(), re.M)


def test_a_malformed_tenant_in_meta_is_refused_with_the_rule(gateway_factory):
    from tb_support import RawSession
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=4)})
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"},
                                          "_meta": {"toolbridge/tenant": "no spaces allowed"}}, 1)
        assert answer["error"]["code"] == -32602, answer
        assert "toolbridge/tenant" in answer["error"]["message"], answer
        assert "[A-Za-z0-9._:-]" in answer["error"]["message"], answer
        ok = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"},
                                      "_meta": {"toolbridge/tenant": "run-7"}}, 2)
        assert text_of(ok["result"]) == "x", ok
    finally:
        s.close()
