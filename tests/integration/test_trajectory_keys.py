"""A trajectory named by the URL (/t/NAME/mcp, /t/NAME/sse) or the X-Toolbridge-Trajectory
header, for frameworks that open a new MCP session per call and cannot set _meta: LangChain's
MCP adapters (get_tools), fastmcp's Client, the official SDK. server-memory per_session keeps its
graph across those sessions, and two trajectories stay isolated."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tb_support import (REPO, RawSession, fixture_server, headers_for, initialize_params, memory_server,
                        parse_body, response_for, rpc, text_of)

pytestmark = pytest.mark.timeout(180)

FRAMEWORKS_PYTHON = REPO / ".venv-frameworks" / "bin" / "python"
LANGCHAIN_CLIENT = Path(__file__).resolve().parent / "langchain_client.py"
HEADER = "X-Toolbridge-Trajectory"


def memory_gateway(gateway_factory, tmp_path):
    return gateway_factory(
        {"memory": memory_server(Path("${session.dir}/memory.json"), policy="per_session", spares=1),
         "fixture": fixture_server(policy="per_session", spares=0)},
        gateway={"session_dir_root": str(tmp_path / "sessions")})


def entity(name: str) -> dict:
    return {"entities": [{"name": name, "entityType": "person", "observations": ["likes tea"]}]}


def one_call(url: str, name: str, arguments: dict, headers: dict | None = None) -> dict:
    """A whole MCP session for one call, as LangChain, llama-index and verl do: initialize, call,
    DELETE."""
    sess = RawSession(url)
    extra = headers or {}
    try:
        resp = sess.client.post(url, content=json.dumps(rpc("initialize", initialize_params(sess.version), 0)),
                                headers=headers_for(None, None, **extra))
        assert resp.status_code == 200, resp.text
        sess.session_id = resp.headers["mcp-session-id"]
        assert sess.post(rpc("notifications/initialized"), **extra).status_code == 202
        answer = response_for(parse_body(sess.post(rpc("tools/call", {"name": name, "arguments": arguments}, 1),
                                                   **extra)), 1)
        deleted = sess.client.delete(url, headers=headers_for(sess.session_id, sess.version, **extra))
        assert deleted.status_code == 200, deleted.text
        return answer
    finally:
        sess.close()


def counter(url: str, headers: dict | None = None) -> str:
    answer = one_call(url, "fixture__counter", {}, headers)
    assert "result" in answer, answer
    return text_of(answer["result"])


def test_url_and_header_keep_a_trajectory_across_sessions(gateway_factory, tmp_path):
    gw = memory_gateway(gateway_factory, tmp_path)
    base = gw.base_url
    # By URL: each call is a new MCP session, the trajectory's instance is the same.
    assert [counter(f"{base}/t/run1-a/mcp") for _ in range(3)] == ["1", "2", "3"]
    # By header, on plain /mcp: the same global name, so the same instance.
    assert counter(gw.mcp_url, {HEADER: "run1-a"}) == "4"
    # _meta names the same trajectory too.
    sess = RawSession(gw.mcp_url).initialize()
    try:
        answer = sess.request("tools/call", {"name": "fixture__counter", "arguments": {},
                                             "_meta": {"toolbridge/session": "run1-a"}}, 1)
        assert text_of(answer["result"]) == "5"
    finally:
        sess.close()
    # Another trajectory, and a session without one, start from scratch.
    assert counter(f"{base}/t/run1-b/mcp") == "1"
    assert counter(gw.mcp_url, {HEADER: "run1-b"}) == "2"
    assert counter(gw.mcp_url) == "1"
    # A Unicode name, percent-encoded in the path and the same name in the header.
    name = "t\u00e9:1"
    assert counter(f"{base}/t/{quote(name, safe='')}/mcp") == "1"
    assert counter(f"{base}/t/{quote(name, safe='')}/mcp") == "2"
    # Sessions come and go; the named trajectories stay, counted in /healthz.
    health = gw.health()
    assert health["trajectories"] == 3, health
    # Releasing the trajectory frees its instance: it starts over.
    released = httpx.delete(f"{base}/sessions/run1-a", timeout=10)
    assert released.json() == {"released": 1}, released.text
    assert counter(f"{base}/t/run1-a/mcp") == "1"


def test_conflicting_or_invalid_names_are_refused(gateway_factory, tmp_path):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0)})
    base = gw.base_url
    init = json.dumps(rpc("initialize", initialize_params("2025-06-18"), 0))
    with httpx.Client(timeout=10) as client:
        # Path and header name different trajectories.
        r = client.post(f"{base}/t/a/mcp", content=init, headers=headers_for(None, None, **{HEADER: "b"}))
        assert r.status_code == 400, r.text
        assert r.json()["error"]["code"] == -32602
        assert "names trajectory 'a' but X-Toolbridge-Trajectory names 'b'" in r.json()["error"]["message"]
        # A name that breaks the rule, in the path or the header.
        r = client.post(f"{base}/t/..%2Fx/mcp", content=init, headers=headers_for(None, None))
        assert r.status_code == 400 and "is not allowed first" in r.json()["error"]["message"], r.text
        r = client.post(gw.mcp_url, content=init, headers=headers_for(None, None, **{HEADER: "$x"}))
        assert r.status_code == 400 and "character 1 ('$')" in r.json()["error"]["message"], r.text
        # A session opened for one trajectory does not serve another.
        r = client.post(f"{base}/t/a/mcp", content=init, headers=headers_for(None, None))
        sid = r.headers["mcp-session-id"]
        ping = json.dumps(rpc("ping", None, 1))
        r = client.post(f"{base}/t/b/mcp", content=ping, headers=headers_for(sid, "2025-06-18"))
        assert r.status_code == 400 and "opened for 'a'" in r.json()["error"]["message"], r.text
        r = client.post(gw.mcp_url, content=ping, headers=headers_for(sid, "2025-06-18", **{HEADER: "b"}))
        assert r.status_code == 400, r.text
        # ... but requests may leave the name out (the session carries it).
        r = client.post(gw.mcp_url, content=ping, headers=headers_for(sid, "2025-06-18"))
        assert r.status_code == 200, r.text
        # _meta naming another trajectory than the session's: -32602, not a guess.
        call = rpc("tools/call", {"name": "fixture__counter", "arguments": {},
                                  "_meta": {"toolbridge/session": "b"}}, 2)
        r = client.post(f"{base}/t/a/mcp", content=json.dumps(call), headers=headers_for(sid, "2025-06-18"))
        answer = response_for(parse_body(r), 2)
        assert answer["error"]["code"] == -32602, answer
        assert "names trajectory 'b' but this session was opened for trajectory 'a'" in answer["error"]["message"]
        # Unknown endpoints under /t/ are 404; other methods on /t/NAME/mcp are 405.
        assert client.get(f"{base}/t/a/other").status_code == 404
        assert client.put(f"{base}/t/a/mcp").status_code == 405


def test_a_trajectory_belongs_to_the_client_that_named_it_first(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=0)})
    assert counter(gw.mcp_url, {HEADER: "owned", "X-Toolbridge-Tenant": "alice"}) == "1"
    init = json.dumps(rpc("initialize", initialize_params("2025-06-18"), 0))
    for url, extra in [(gw.mcp_url, {HEADER: "owned", "X-Toolbridge-Tenant": "bob"}),
                       (gw.base_url + "/t/owned/mcp", {"X-Toolbridge-Tenant": "bob"})]:
        r = httpx.post(url, content=init, headers=headers_for(None, None, **extra), timeout=10)
        assert r.status_code == 400, r.text
        assert "belongs to another client" in r.json()["error"]["message"]
    r = httpx.get(gw.base_url + "/t/owned/sse", headers={"Accept": "text/event-stream",
                                                         "X-Toolbridge-Tenant": "bob"}, timeout=10)
    assert r.status_code == 400 and "belongs to another client" in r.text, r.text
    assert counter(gw.base_url + "/t/owned/mcp", {"X-Toolbridge-Tenant": "alice"}) == "2"


def run_async(coro_factory):
    return asyncio.run(coro_factory())


def test_official_sdk_and_fastmcp_new_session_per_call_keep_server_memory(gateway_factory, tmp_path):
    from fastmcp import Client
    from fastmcp.client.transports import SSETransport, StreamableHttpTransport
    from mcp import ClientSession
    from mcp.client.sse import sse_client

    gw = memory_gateway(gateway_factory, tmp_path)

    async def fastmcp_call(transport, tool: str, arguments: dict) -> str:
        async with Client(transport) as c:  # a new MCP session for this call, as verl does
            r = await c.call_tool(tool, arguments, raise_on_error=False)
            assert not r.is_error, r
            return "".join(getattr(x, "text", "") for x in r.content)

    async def legacy_call(url: str, tool: str, arguments: dict) -> str:
        async with sse_client(url) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                r = await s.call_tool(tool, arguments)
                assert not r.is_error, r
                return "".join(getattr(x, "text", "") for x in r.content)

    async def main():
        by_url = lambda: StreamableHttpTransport(gw.base_url + "/t/fm-url/mcp")  # noqa: E731
        by_header = lambda: StreamableHttpTransport(gw.mcp_url, headers={HEADER: "fm-header"})  # noqa: E731
        await fastmcp_call(by_url(), "memory__create_entities", entity("url-alice"))
        await fastmcp_call(by_header(), "memory__create_entities", entity("header-bob"))
        url_graph = await fastmcp_call(by_url(), "memory__read_graph", {})
        header_graph = await fastmcp_call(by_header(), "memory__read_graph", {})
        # Legacy transport: /t/NAME/sse, each call its own SSE session.
        await legacy_call(gw.base_url + "/t/sse-carol/sse", "memory__create_entities", entity("sse-carol"))
        sse_graph = await legacy_call(gw.base_url + "/t/sse-carol/sse", "memory__read_graph", {})
        # fastmcp over SSE with the header reaches the URL-named trajectory of the other transport.
        sse_header_graph = await fastmcp_call(
            SSETransport(gw.base_url + "/sse", headers={HEADER: "fm-url"}), "memory__read_graph", {})
        # As verl builds its client: an mcpServers dict, a new Client per call.
        config = {"mcpServers": {"gw": {"url": gw.mcp_url, "headers": {HEADER: "verl-traj"}}}}
        await fastmcp_call(config, "memory__create_entities", entity("verl-dave"))
        config_graph = await fastmcp_call(config, "memory__read_graph", {})
        return url_graph, header_graph, sse_graph, sse_header_graph, config_graph

    url_graph, header_graph, sse_graph, sse_header_graph, config_graph = run_async(main)
    assert "verl-dave" in config_graph and "url-alice" not in config_graph, config_graph
    assert "url-alice" in url_graph and "header-bob" not in url_graph, url_graph
    assert "header-bob" in header_graph and "url-alice" not in header_graph, header_graph
    assert "sse-carol" in sse_graph and "url-alice" not in sse_graph, sse_graph
    assert "url-alice" in sse_header_graph, sse_header_graph
    assert gw.health()["servers"]["memory"]["sessions_bound"] == 4


def langchain(spec: dict) -> dict:
    if not FRAMEWORKS_PYTHON.exists():
        raise AssertionError(f"{FRAMEWORKS_PYTHON} not found: run scripts/setup")
    proc = subprocess.run([str(FRAMEWORKS_PYTHON), str(LANGCHAIN_CLIENT), json.dumps(spec)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"langchain_client failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("how", ["url", "header", "none"])
def test_langchain_get_tools_keeps_server_memory_per_trajectory(gateway_factory, tmp_path, how):
    gw = memory_gateway(gateway_factory, tmp_path)

    def spec(trajectory: str, calls: list) -> dict:
        if how == "url":
            return {"url": f"{gw.base_url}/t/{trajectory}/mcp", "calls": calls}
        if how == "header":
            return {"url": gw.mcp_url, "headers": {HEADER: trajectory}, "calls": calls}
        return {"url": gw.mcp_url, "calls": calls}

    a = langchain(spec("lc-a", [["memory__create_entities", entity("lc-alice")],
                                ["memory__read_graph", {}]]))
    assert "memory__read_graph" in a["tools"]
    b = langchain(spec("lc-b", [["memory__read_graph", {}]]))
    a_again = langchain(spec("lc-a", [["memory__read_graph", {}]]))
    if how == "none":
        # Without a trajectory every call is a new session, so a new server-memory: the bug this
        # feature removes.
        assert "lc-alice" not in a["results"][1], a
        return
    assert "lc-alice" in a["results"][1], a
    assert "lc-alice" not in b["results"][0], b  # isolated
    assert "lc-alice" in a_again["results"][0], a_again  # a later process, the same trajectory


def test_get_without_event_stream_accept_is_406_at_once(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})
    with httpx.Client(base_url=gw.base_url, timeout=2) as client:
        for path in ["/sse", "/t/x/sse", "/mcp", "/t/x/mcp"]:
            for accept in [None, "application/json", "*/*"]:
                headers = {"Accept": accept} if accept else {}
                r = client.get(path, headers=headers)
                assert r.status_code == 406, (path, accept, r.status_code, r.text)
                assert "text/event-stream" in r.json()["error"]["message"]
        assert gw.health()["sessions"] == 0
