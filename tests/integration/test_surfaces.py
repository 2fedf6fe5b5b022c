"""Tool surfaces (docs/surfaces.md) with the real gateway, the C++ fixture server and the official
Python MCP SDK: a session on /s/NAME/mcp lists exactly the surface (renamed, re-described, hidden
arguments gone), refuses calls outside it as unknown tools, reaches the real tool by a renamed
name with the hidden defaults filled in; the fingerprint is stable across starts and moves when a
description override does."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import mcp.types as types
import pytest
from mcp import ClientSession

from tb_sdk import only_text, run, sdk_session

try:  # SDK 2.x
    import httpx2
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError:  # SDK 1.x
    httpx2 = None
    from mcp.shared.exceptions import MCPError as MCPError
from tb_support import Gateway, RawSession, fixture_server, headers_for, initialize_params, rpc, to_yaml

pytestmark = pytest.mark.timeout(120)

SAY = "Repeats the text it is given."


def surfaces(say_description: str = SAY) -> dict:
    return {
        "bench": {
            "include": [{"annotation": "readOnlyHint"}],
            "tools": {
                "fixture__echo": {"name": "say", "description": say_description, "title": "Say"},
                "fixture__add": {"name": "plus", "defaults": {"b": 40}},
            },
        },
        "other": {"include": [{"server": "fixture", "glob": "*__crash"}]},
    }


class SurfaceGateways:
    """Gateways whose config has a `surfaces` section (the factory writes servers and gateway)."""

    def __init__(self, base: Path):
        self.base = base
        self.started: list[Gateway] = []

    def start(self, surface_section: dict, gateway: dict | None = None) -> Gateway:
        gw = Gateway(self.base / f"gw{len(self.started)}", {"fixture": fixture_server()}, gateway)
        gw.config_path.write_text(gw.config_path.read_text() + to_yaml({"surfaces": surface_section}))
        gw.start()
        self.started.append(gw)
        gw.wait_ready(["fixture"], 60)
        return gw

    def close(self) -> None:
        for gw in self.started:
            gw.close()


@pytest.fixture
def gateways(tmp_path, binaries):
    g = SurfaceGateways(tmp_path)
    yield g
    g.close()


def schema_of(tool: types.Tool) -> dict:
    return getattr(tool, "input_schema", None) or tool.inputSchema


async def listed(url: str, headers: dict | None = None) -> types.ListToolsResult:
    if not headers:
        async with sdk_session(url) as session:
            return await session.list_tools()
    if httpx2 is None:
        pytest.skip("headers on the SDK client are tested with SDK 2.x")
    client = httpx2.AsyncClient(headers=headers)
    async with client, streamable_http_client(url, http_client=client) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await session.list_tools()


def fingerprint_of(result: types.ListToolsResult) -> str:
    meta = result.meta or {}
    return meta["toolbridge/surface"]["fingerprint"]


def test_the_sdk_sees_exactly_the_surface_and_calls_through_it(gateways):
    gw = gateways.start(surfaces())
    url = f"{gw.base_url}/s/bench/mcp"

    async def scenario():
        async with sdk_session(url) as session:
            result = await session.list_tools()
            tools = {t.name: t for t in result.tools}
            # Exactly the surface: the annotated tool, and the two picked by name, renamed.
            assert sorted(tools) == ["fixture__lookup", "plus", "say"], sorted(tools)
            assert tools["say"].description == SAY
            assert tools["say"].title == "Say"
            assert tools["fixture__lookup"].description  # as the server describes it
            # The hidden argument is gone from the schema the model sees.
            assert "b" not in schema_of(tools["plus"])["properties"]
            assert "b" not in schema_of(tools["plus"]).get("required", [])
            assert "a" in schema_of(tools["plus"])["properties"]
            meta = result.meta["toolbridge/surface"]
            assert meta["name"] == "bench" and len(meta["fingerprint"]) == 16
            # A renamed call reaches the real tool; the hidden default is filled in.
            assert only_text(await session.call_tool("say", {"text": "hi"})) == "hi"
            assert only_text(await session.call_tool("plus", {"a": 2})) == "42"
            # Even a value for a hidden argument is pinned by the surface.
            assert only_text(await session.call_tool("plus", {"a": 2, "b": 1})) == "42"
            # Outside the surface: refused as an unknown tool (the gateway names too).
            for name in ("fixture__crash", "fixture__echo", "fixture__add"):
                with pytest.raises(MCPError) as refused:
                    await session.call_tool(name, {"text": "x"})
                assert refused.value.error.code == -32602
                assert refused.value.error.message.startswith(f"Unknown tool: '{name}'")
                assert "tools/list shows the 3 available tools." in refused.value.error.message
            # A mistyped name is repaired within the surface only.
            assert json.loads(only_text(await session.call_tool("fixture__lookp", {"query": "q"})))["query"] == "q"
            with pytest.raises(MCPError) as typo:
                await session.call_tool("sya", {"text": "x"})
            assert "did you mean 'say'" in typo.value.error.message
            return meta["fingerprint"]

    fingerprint = run(scenario)
    # The gateway's own catalog is untouched on /mcp.
    whole = run(listed, gw.mcp_url)
    assert {"fixture__echo", "fixture__crash", "fixture__add"} <= {t.name for t in whole.tools}
    assert "say" not in {t.name for t in whole.tools}
    # /healthz lists every surface with the fingerprint tools/list showed.
    health = gw.health()["surfaces"]
    assert health["bench"] == {"fingerprint": fingerprint, "tools": 3}
    assert health["other"]["tools"] == 1
    # The log records the fingerprint each surface showed.
    log = gw.stderr_path.read_text()
    assert "surface bench: fingerprint" in log and f"{fingerprint} (3 tools)" in log, log[-2000:]


def test_header_and_trajectory_prefix_reach_the_same_surface(gateways):
    gw = gateways.start(surfaces())
    by_path = fingerprint_of(run(listed, f"{gw.base_url}/s/bench/mcp"))
    by_header = run(listed, gw.mcp_url, {"X-Toolbridge-Surface": "bench"})
    assert fingerprint_of(by_header) == by_path
    assert sorted(t.name for t in by_header.tools) == ["fixture__lookup", "plus", "say"]
    composed = run(listed, f"{gw.base_url}/t/run-7/s/other/mcp")
    assert [t.name for t in composed.tools] == ["fixture__crash"]
    assert fingerprint_of(composed) == gw.health()["surfaces"]["other"]["fingerprint"]


def test_unknown_surfaces_and_mismatches_are_clear_errors(gateways):
    gw = gateways.start(surfaces())
    body = json.dumps(rpc("initialize", initialize_params("2025-06-18"), 0))
    with httpx.Client(timeout=10) as client:
        resp = client.post(f"{gw.base_url}/s/benc/mcp", content=body, headers=headers_for(None, None))
        assert resp.status_code == 404, resp.text
        assert "Unknown surface: 'benc'; did you mean 'bench'?" in resp.json()["error"]["message"]
        resp = client.post(gw.mcp_url, content=body,
                           headers=headers_for(None, None, **{"X-Toolbridge-Surface": "nope"}))
        assert resp.status_code == 400, resp.text
        error = resp.json()["error"]
        assert error["code"] == -32602 and "Unknown surface: 'nope'" in error["message"]
        resp = client.post(f"{gw.base_url}/s/a%2Fb/mcp", content=body, headers=headers_for(None, None))
        assert resp.status_code == 404, resp.text
        assert "1-64 characters of [A-Za-z0-9_-]" in resp.json()["error"]["message"]
    # A session opened on one surface cannot be used through another.
    sess = RawSession(f"{gw.base_url}/s/bench/mcp").initialize()
    try:
        # The path and the header disagree.
        resp = sess.post(rpc("tools/list", {}, 1), **{"X-Toolbridge-Surface": "other"})
        assert resp.status_code == 400 and "name one surface" in resp.text, resp.text
        # The session's surface is not the one this URL names; nor is the whole catalog's /mcp
        # allowed to name another by header.
        for url, extra in ((f"{gw.base_url}/s/other/mcp", {}),
                           (gw.mcp_url, {"X-Toolbridge-Surface": "other"})):
            sess.url = url
            resp = sess.post(rpc("tools/list", {}, 1), **extra)
            assert resp.status_code == 400, resp.text
            assert "its session was opened on 'bench'" in resp.text, resp.text
        # Plain /mcp with the session: still the session's surface.
        sess.url = gw.mcp_url
        assert len(sess.request("tools/list", {}, 2)["result"]["tools"]) == 3
    finally:
        sess.close()


def test_fingerprint_is_stable_across_starts_and_follows_the_description(gateways):
    first = gateways.start(surfaces())
    a = fingerprint_of(run(listed, f"{first.base_url}/s/bench/mcp"))
    first.close()
    gateways.started.remove(first)
    second = gateways.start(surfaces())
    assert fingerprint_of(run(listed, f"{second.base_url}/s/bench/mcp")) == a
    # The other surface did not change with it either way.
    other = second.health()["surfaces"]["other"]["fingerprint"]
    third = gateways.start(surfaces("Repeats the text it is given, unchanged."))
    changed = run(listed, f"{third.base_url}/s/bench/mcp")
    assert fingerprint_of(changed) != a
    assert {t.name: t.description for t in changed.tools}["say"] == "Repeats the text it is given, unchanged."
    assert third.health()["surfaces"]["other"]["fingerprint"] == other


def test_an_api_key_restricted_to_a_surface_reaches_only_it(gateways):
    token = "0123456789abcdef-bench"
    gw = gateways.start(surfaces(), gateway={
        "auth": {"keys": [{"name": "bench", "token": token, "tenant": "bench", "surfaces": ["bench"]}]}})
    gw.headers = {"Authorization": f"Bearer {token}"}
    auth = {"Authorization": f"Bearer {token}"}
    assert sorted(t.name for t in run(listed, f"{gw.base_url}/s/bench/mcp", auth).tools) == [
        "fixture__lookup", "plus", "say"]
    body = json.dumps(rpc("initialize", initialize_params("2025-06-18"), 0))
    with httpx.Client(timeout=10) as client:
        for url, extra in ((gw.mcp_url, {}), (f"{gw.base_url}/s/other/mcp", {}),
                           (gw.mcp_url, {"X-Toolbridge-Surface": "other"})):
            resp = client.post(url, content=body, headers=headers_for(None, None, **auth, **extra))
            assert resp.status_code == 403, (url, resp.text)
            assert "may only use the tool surfaces bench" in resp.json()["error"]["message"]
        resp = client.post(f"{gw.base_url}/v1/batch", headers=auth,
                           json={"calls": [{"tool": "fixture__echo", "arguments": {"text": "x"}}]})
        assert resp.status_code == 403, resp.text
        resp = client.post(f"{gw.base_url}/v1/batch", headers=auth,
                           json={"surface": "bench", "calls": [{"tool": "say", "arguments": {"text": "x"}}]})
        assert resp.status_code == 200, resp.text
        assert resp.json()["results"][0]["result"]["content"][0]["text"] == "x"
        resp = client.post(gw.mcp_url, content=body,
                           headers=headers_for(None, None, **auth, **{"X-Toolbridge-Surface": "bench"}))
        assert resp.status_code == 200, resp.text


def test_a_batch_names_its_tools_as_its_surface_shows_them(gateways):
    gw = gateways.start(surfaces())
    calls = [{"tool": "say", "arguments": {"text": "hi"}}, {"tool": "plus", "arguments": {"a": 1}},
             {"tool": "fixture__echo", "arguments": {"text": "hi"}}]
    with httpx.Client(timeout=30) as client:
        for body, headers in (({"surface": "bench", "calls": calls}, {}),
                              ({"calls": calls}, {"X-Toolbridge-Surface": "bench"})):
            resp = client.post(f"{gw.base_url}/v1/batch", json=body, headers=headers)
            assert resp.status_code == 200, resp.text
            results = resp.json()["results"]
            assert results[0]["result"]["content"][0]["text"] == "hi"
            assert results[1]["result"]["content"][0]["text"] == "41"
            # Outside the surface: the same refusal as an unknown tool.
            assert "Unknown tool: 'fixture__echo'" in json.dumps(results[2]), results[2]
        listed_tools = client.get(f"{gw.base_url}/v1/tools", headers={"X-Toolbridge-Surface": "bench"}).json()
        assert sorted(t["name"] for t in listed_tools["tools"]) == ["fixture__lookup", "plus", "say"]
        assert listed_tools["_meta"]["toolbridge/surface"]["name"] == "bench"
        resp = client.post(f"{gw.base_url}/v1/batch", json={"surface": "benc", "calls": calls})
        assert resp.status_code == 400 and "did you mean 'bench'" in resp.text, resp.text
        resp = client.post(f"{gw.base_url}/v1/batch", json={"surface": "other", "calls": calls},
                           headers={"X-Toolbridge-Surface": "bench"})
        assert resp.status_code == 400 and "name one" in resp.text, resp.text


def hermes(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_parse_resolves_and_repairs_names_within_the_surface_only(gateways):
    gw = gateways.start(surfaces())
    text = (hermes("say", {"text": "hi"}) + hermes("fixture__lookp", {"query": "q"}) +
            hermes("fixture__ech", {"text": "x"}) + hermes("echo", {"text": "x"}))
    with httpx.Client(timeout=30) as client:
        # Without a surface the catalog repairs both misspellings of the echo tool.
        whole = client.post(f"{gw.base_url}/v1/parse", json={"text": text, "format": "hermes"}).json()
        assert [c["name"] for c in whole["calls"]][2:] == ["fixture__echo", "fixture__echo"]
        for body, headers in (({"text": text, "format": "hermes", "execute": True, "surface": "bench"}, {}),
                              ({"text": text, "format": "hermes", "execute": True},
                               {"X-Toolbridge-Surface": "bench"})):
            resp = client.post(f"{gw.base_url}/v1/parse", json=body, headers=headers)
            assert resp.status_code == 200, resp.text
            say, lookup, ech, echo = resp.json()["calls"]
            assert say["name"] == "say" and say["outcome"] == "ok"
            assert say["result"]["content"][0]["text"] == "hi"
            # Repaired to the surface's tool...
            assert lookup["name"] == "fixture__lookup" and lookup["outcome"] == "ok"
            assert {"kind": "tool_name", "path": "", "from": "fixture__lookp",
                    "to": "fixture__lookup"} in lookup["repairs"]
            # ...never to a tool outside it.
            for call, name in ((ech, "fixture__ech"), (echo, "echo")):
                assert call["outcome"] == "invalid_params", call
                assert call["problem"].startswith(f"Unknown tool: '{name}'"), call
        resp = client.post(f"{gw.base_url}/v1/parse", json={"text": text, "surface": "a/b"})
        assert resp.status_code == 400 and "1-64 characters" in resp.text, resp.text


def test_the_trace_and_the_trajectory_view_record_the_surface_seen(gateways, tmp_path):
    trace = tmp_path / "trace.jsonl"
    gw = gateways.start(surfaces(), gateway={"trace": str(trace)})

    async def scenario():
        async with sdk_session(f"{gw.base_url}/t/run-9/s/bench/mcp") as session:
            listed_now = await session.list_tools()
            assert only_text(await session.call_tool("say", {"text": "traced"})) == "traced"
            return fingerprint_of(listed_now)

    fingerprint = run(scenario)
    # A call through the whole catalog records no surface.
    with httpx.Client(timeout=30) as client:
        resp = client.post(f"{gw.base_url}/v1/batch",
                           json={"calls": [{"tool": "fixture__echo", "arguments": {"text": "plain"}}]})
        assert resp.status_code == 200, resp.text
        view = client.get(f"{gw.base_url}/v1/trajectories/run-9").json()
    [record] = [c for c in view["calls"] if c["tool"] == "fixture__echo"]
    assert record["surface"] == "bench" and record["surface_fingerprint"] == fingerprint
    deadline = time.monotonic() + 10
    lines: list[dict] = []
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
        if len(lines) >= 2:
            break
        time.sleep(0.05)
    surfaced = [line for line in lines if line.get("surface") == "bench"]
    assert len(surfaced) == 1 and surfaced[0]["surface_fingerprint"] == fingerprint, lines
    assert any(line["tool"] == "fixture__echo" and "surface" not in line for line in lines), lines
