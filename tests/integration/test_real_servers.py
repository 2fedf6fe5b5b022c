"""Real reference MCP servers (Node and Python) behind one gateway, driven by the official Python SDK."""

from __future__ import annotations

import json

import anyio
import pytest

from tb_support import everything_server, filesystem_server, fixture_server, memory_server, time_server
from tb_sdk import only_text, sdk_session

pytestmark = pytest.mark.timeout(120)

# A few tools each real server is known to have (checked against the installed versions).
EXPECTED = {
    "fixture": {"echo", "add"},
    "everything": {"echo", "get-sum"},
    "fs": {"read_file", "write_file", "list_directory"},
    "memory": {"create_entities", "read_graph"},
    "time": {"get_current_time", "convert_time"},
}


@pytest.fixture(scope="module")
def real(module_gateway_factory, tmp_path_factory):
    data = tmp_path_factory.mktemp("real")
    allowed = (data / "allowed").resolve()
    allowed.mkdir()
    note = allowed / "note.txt"
    note.write_text("toolbridge reads this file\nline two\n")
    servers = {
        "fixture": fixture_server(),
        "everything": everything_server(),
        "fs": filesystem_server(allowed),
        "memory": memory_server(data / "memory.json"),
        "time": time_server(),
    }
    gw = module_gateway_factory(servers, name="real", ready_timeout=90)
    return gw, note, data


def test_health_reports_every_server(real):
    gw, _, _ = real
    health = gw.health()
    assert health["status"] == "ok", health
    for name, tools in EXPECTED.items():
        entry = health["servers"][name]
        assert entry["state"] == "ready"
        assert entry["tools"] >= len(tools), (name, entry)


def test_tools_of_every_server_are_listed(real):
    gw, _, _ = real

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return {t.name for t in (await s.list_tools()).tools}

    names = anyio.run(main)
    for server, tools in EXPECTED.items():
        missing = {f"{server}__{t}" for t in tools} - names
        assert not missing, f"{server}: missing {sorted(missing)}; listed {sorted(names)}"
    servers_seen = {n.split("__", 1)[0] for n in names}
    assert servers_seen == set(EXPECTED), sorted(names)


def test_call_one_tool_of_each_server(real):
    gw, note, _ = real

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            out = {}
            out["fixture"] = await s.call_tool("fixture__echo", {"text": "fixture says hi"})
            out["everything"] = await s.call_tool("everything__echo", {"message": "everything says hi"})
            out["fs"] = await s.call_tool("fs__read_file", {"path": str(note)})
            out["memory_create"] = await s.call_tool("memory__create_entities", {"entities": [
                {"name": "toolbridge", "entityType": "project", "observations": ["is a C++20 MCP gateway"]}]})
            out["memory_read"] = await s.call_tool("memory__read_graph", {})
            out["time"] = await s.call_tool("time__get_current_time", {"timezone": "UTC"})
            return out

    out = anyio.run(main)
    for key, result in out.items():
        assert not result.is_error, f"{key}: {result}"
    assert only_text(out["fixture"]) == "fixture says hi"
    assert "everything says hi" in only_text(out["everything"])
    assert only_text(out["fs"]) == note.read_text()
    graph_text = only_text(out["memory_read"])
    assert "toolbridge" in graph_text and "is a C++20 MCP gateway" in graph_text, graph_text
    now = json.loads(only_text(out["time"]))
    assert now["timezone"] == "UTC", now
    assert "datetime" in now, now


def test_concurrent_calls_across_servers(real):
    gw, note, _ = real
    results: dict[tuple[str, int], str] = {}

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            async def one(kind: str, i: int):
                if kind == "everything":
                    r = await s.call_tool("everything__echo", {"message": f"e{i}"})
                elif kind == "fixture":
                    r = await s.call_tool("fixture__echo", {"text": f"f{i}"})
                else:
                    r = await s.call_tool("fs__read_file", {"path": str(note)})
                assert not r.is_error, r
                results[(kind, i)] = only_text(r)

            async with anyio.create_task_group() as tg:
                for i in range(20):
                    for kind in ("everything", "fixture", "fs"):
                        tg.start_soon(one, kind, i)

    anyio.run(main)
    assert len(results) == 60
    for (kind, i), text in results.items():
        if kind == "everything":
            assert f"e{i}" in text
        elif kind == "fixture":
            assert text == f"f{i}"
        else:
            assert text == note.read_text()
