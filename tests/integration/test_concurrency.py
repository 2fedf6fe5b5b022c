"""Many sessions reusing the same JSON-RPC ids, all calls in flight at once: every answer must
carry the id it was asked with and the content of that very request (the gateway rewrites ids
on the shared upstream and must map them back per session)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tb_support import fixture_server, headers_for, initialize_params, parse_body, rpc

pytestmark = [pytest.mark.timeout(180), pytest.mark.serial]

SESSIONS = 100
IDS = range(1, 11)  # the same ids in every session
VERSION = "2025-06-18"


def plan(session: int, req_id: int) -> tuple[str, dict, str]:
    """(tool, arguments, expected text) for one request; every 5th is a sleep."""
    if req_id % 5 == 0:
        ms = 20 + (session * 7 + req_id) % 180
        return "fixture__sleep", {"ms": ms}, f"slept {ms} ms"
    text = f"session-{session}/id-{req_id}/" + "z" * ((session + req_id) % 17)
    return "fixture__echo", {"text": text}, text


async def open_session(client: httpx.AsyncClient, url: str) -> str:
    resp = await client.post(url, content=json.dumps(rpc("initialize", initialize_params(VERSION), 0)),
                             headers=headers_for(None, None))
    assert resp.status_code == 200, resp.text[:300]
    msgs = parse_body(resp)
    assert msgs and msgs[-1].get("id") == 0 and "result" in msgs[-1], msgs
    sid = resp.headers["mcp-session-id"]
    note = await client.post(url, content=json.dumps(rpc("notifications/initialized")),
                             headers=headers_for(sid, VERSION))
    assert note.status_code == 202, note.status_code
    return sid


async def call(client: httpx.AsyncClient, url: str, sid: str, session: int, req_id: int) -> tuple:
    tool, args, expected = plan(session, req_id)
    resp = await client.post(url, content=json.dumps(rpc("tools/call", {"name": tool, "arguments": args}, req_id)),
                             headers=headers_for(sid, VERSION))
    return session, req_id, expected, resp.status_code, resp.headers.get("content-type", ""), resp.text, \
        parse_body(resp) if resp.status_code == 200 else None


def test_thousand_concurrent_calls_same_ids_across_sessions(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    url = gw.mcp_url

    async def main():
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        timeout = httpx.Timeout(120, pool=None)
        async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
            sids = await asyncio.gather(*(open_session(client, url) for _ in range(SESSIONS)))
            assert len(set(sids)) == SESSIONS, "session ids are not unique"
            return await asyncio.gather(*(call(client, url, sid, s, i)
                                          for s, sid in enumerate(sids) for i in IDS))

    results = asyncio.run(main())
    assert len(results) == SESSIONS * len(IDS)
    problems = []
    content_types = set()
    for session, req_id, expected, status, ctype, body, msgs in results:
        content_types.add(ctype.split(";")[0])
        if status != 200:
            problems.append(f"s{session} id{req_id}: HTTP {status} {body[:200]}")
            continue
        answers = [m for m in msgs if isinstance(m, dict) and "method" not in m]
        if len(answers) != 1:
            problems.append(f"s{session} id{req_id}: expected one response, got {answers}")
            continue
        answer = answers[0]
        if answer.get("id") != req_id:
            problems.append(f"s{session} id{req_id}: answered with id {answer.get('id')!r}")
        result = answer.get("result")
        if not result or result.get("isError"):
            problems.append(f"s{session} id{req_id}: not a successful result: {answer}")
            continue
        text = "".join(c.get("text", "") for c in result.get("content", []))
        if text != expected:
            problems.append(f"s{session} id{req_id}: got text {text!r}, expected {expected!r}")
    assert not problems, f"{len(problems)} bad answers (content types {content_types}); first ones:\n" + \
        "\n".join(problems[:20])
    health = gw.health()
    assert health["servers"]["fixture"]["state"] == "ready"
    assert health["servers"]["fixture"]["restarts"] == 0
