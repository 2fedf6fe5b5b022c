"""The adapters, each exercised the way its framework calls it, against a real gateway with the
fixture and server-memory (one instance per trajectory):

- OpenAI function calling, with the openai SDK's own types (.venv-adapters): the catalog as
  `tools=`, a parsed assistant message's tool_calls executed as one batch, `role: "tool"` replies;
- the MiroFlow/MiroThinker ToolManager interface, awaited as its orchestrator does;
- verl: ToolbridgeTool loaded by verl's own tool_registry from the config it writes, a subclass of
  verl's real BaseTool, driven create -> execute(agent_data) -> release per call (.venv-adapters).

Plus the schema flattening and name mapping they share."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tb_support import REPO, MissingDependency, fixture_server, memory_server

pytestmark = pytest.mark.timeout(180)

ADAPTERS_PYTHON = REPO / ".venv-adapters" / "bin" / "python"
DRIVER = Path(__file__).resolve().parent / "adapter_frameworks.py"


@pytest.fixture(scope="module")
def gw(module_gateway_factory, tmp_path_factory):
    return module_gateway_factory(
        {"fixture": fixture_server(policy="per_session", spares=1),
         "memory": memory_server(Path("${session.dir}/memory.json"), policy="per_session", spares=1)},
        gateway={"session_dir_root": str(tmp_path_factory.mktemp("sessions"))})


def drive(*args: str) -> dict:
    if not ADAPTERS_PYTHON.exists():
        raise MissingDependency(f"{ADAPTERS_PYTHON} not found: run scripts/setup")
    proc = subprocess.run([str(ADAPTERS_PYTHON), str(DRIVER), *args], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-5000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_openai_function_calling_with_the_sdk_types(gw):
    out = drive("openai", gw.base_url)
    assert "fixture__echo" in out["names"] and "memory__create_entities" in out["names"]
    echo = out["schemas"]["fixture__echo"]
    assert echo["type"] == "object" and echo["properties"]["text"]["type"] == "string"
    assert echo["required"] == ["text"]
    replies = out["replies"]
    assert [r["tool_call_id"] for r in replies] == ["call_a", "call_b", "call_c", "call_d"]
    assert all(r["role"] == "tool" for r in replies)
    assert replies[0]["content"] == "slept 200 ms" and replies[1]["content"] == "hi"
    assert replies[2]["content"].startswith("Error: the arguments of fixture__echo are not valid JSON")
    assert replies[3]["content"] == "the fixture failed on purpose"
    assert out["replies_from_dict"] == replies
    # One batch: the calls ran together, not one after another.
    assert out["elapsed"] < 1.0
    assert out["async"] == [{"role": "tool", "tool_call_id": "x", "content": "async"}]


def test_verl_tool_in_verls_own_classes(gw, tmp_path):
    out = drive("verl", gw.base_url, str(tmp_path))
    assert out["tool_names"] == ["fixture__add", "fixture__counter", "fixture__echo", "fixture__fail",
                                 "fixture__sleep", "memory__create_entities", "memory__read_graph"]
    # One trajectory per rollout (request_id), kept across verl's create/execute/release per call.
    assert out["counts"] == ["1", "2", "3", "1"]
    assert "Alice" in out["graph_a"] and "Alice" not in out["graph_b"]
    assert out["echo"][0] == "verl" and out["echo"][1] == 0.0
    assert out["echo"][2]["outcome"] == "ok" and out["echo"][2]["total_ms"] > 0
    assert out["failed"][0] == "bad" and out["failed"][2]["outcome"] == "tool_error"
    # Fault classes where a trainer masks: per call in the metrics, per rollout from the gateway.
    assert out["echo"][2]["fault"] == "ok" and out["echo"][2]["infra_failed"] is False
    assert out["failed"][2]["fault"] == "tool" and out["failed"][2]["infra_failed"] is False
    assert out["slept"][2]["outcome"] == "timeout" and out["slept"][2]["fault"] == "infra"
    assert out["slept"][2]["infra_failed"] is True
    assert out["infra_failed"] == {"a": False, "b": True}
    assert out["added"] == "7"
    assert out["alone"] == "1"
    # The schema built from the catalog when the config gave none.
    assert out["add_schema"]["function"]["name"] == "fixture__add"
    assert set(out["add_schema"]["function"]["parameters"]["properties"]) == {"a", "b"}
    # The ended rollout's trajectory was released; the one still running was not.
    assert out["bound_after"] == out["bound_before"] - 1


def test_miroflow_tool_manager_as_its_orchestrator_calls_it(gw):
    import toolbridge
    from toolbridge.adapters.miroflow import ToolbridgeToolManager

    async def main():
        async with toolbridge.AsyncClient(gw.base_url) as client:
            async with ToolbridgeToolManager(client, tool_blacklist={("fixture", "crash")}) as manager:
                defs = await manager.get_all_tool_definitions()
                servers = {d["name"]: d["tools"] for d in defs}
                assert set(servers) == {"fixture", "memory"}
                fixture_tools = {t["name"]: t for t in servers["fixture"]}
                assert "echo" in fixture_tools and "crash" not in fixture_tools
                assert set(fixture_tools["echo"]) == {"name", "description", "schema"}
                assert fixture_tools["echo"]["schema"]["properties"]["text"]["type"] == "string"
                ok = await manager.execute_tool_call(server_name="fixture", tool_name="echo",
                                                     arguments={"text": "miro"})
                assert ok == {"server_name": "fixture", "tool_name": "echo", "result": "miro"}
                # State across calls of one task (its own trajectory): per_session memory.
                await manager.execute_tool_call(server_name="memory", tool_name="create_entities", arguments={
                    "entities": [{"name": "Dora", "entityType": "person", "observations": ["x"]}]})
                graph = await manager.execute_tool_call(server_name="memory", tool_name="read_graph", arguments={})
                assert "Dora" in graph["result"]
                missing = await manager.execute_tool_call(server_name="nowhere", tool_name="x", arguments={})
                assert missing == {"server_name": "nowhere", "tool_name": "x", "error": "Server 'nowhere' not found."}
                unknown = await manager.execute_tool_call(server_name="fixture", tool_name="no_such", arguments={})
                assert set(unknown) == {"server_name", "tool_name", "error"}
                assert unknown["error"].startswith("Tool execution failed: ") and "no_such" in unknown["error"]
                blocked = await manager.execute_tool_call(server_name="fixture", tool_name="crash", arguments={})
                assert "error" in blocked
                # A tool's isError answer is its result, as the MCP SDK hands it to ToolManager.
                failed = await manager.execute_tool_call(server_name="fixture", tool_name="fail",
                                                         arguments={"message": "nope"})
                assert failed == {"server_name": "fixture", "tool_name": "fail", "result": "nope"}
                other = ToolbridgeToolManager(client)
                graph = await other.execute_tool_call(server_name="memory", tool_name="read_graph", arguments={})
                assert "Dora" not in graph["result"]
                await other.release()

    asyncio.run(main())


def test_miroflow_manager_reports_an_unreachable_gateway_as_its_errors():
    from toolbridge.adapters.miroflow import ToolbridgeToolManager

    async def main():
        manager = ToolbridgeToolManager("http://127.0.0.1:9", servers=["search"])
        defs = await manager.get_all_tool_definitions()
        assert defs[0]["name"] == "search" and "Unable to fetch tools" in defs[0]["tools"][0]["error"]
        out = await manager.execute_tool_call(server_name="search", tool_name="q", arguments={})
        assert out["error"].startswith("Tool call failed")
        await manager.client.close()

    asyncio.run(main())


def test_schemas_are_flattened_for_the_apis():
    from toolbridge.adapters._schema import api_name, api_names, flatten_schema

    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "$defs": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "properties": {
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "d"},
            "listed": {"type": ["integer", "null"]},
            "point": {"$ref": "#/$defs/Point"},
            "untyped_enum": {"enum": [1, 2]},
            "tags": {"items": {"oneOf": [{"type": "null"}, {"type": "boolean"}]}},
            "merged": {"allOf": [{"properties": {"a": {"type": "string"}}, "required": ["a"]},
                                 {"properties": {"b": {"type": "string"}}}]},
        },
        "required": ["maybe", "gone"],
    }
    flat = flatten_schema(schema)
    props = flat["properties"]
    assert props["maybe"] == {"type": "string", "description": "d"}
    assert props["listed"] == {"type": "integer"}
    assert props["point"] == {"type": "object", "properties": {"x": {"type": "number"}}}
    assert props["untyped_enum"]["type"] == "integer"
    assert props["tags"] == {"type": "array", "items": {"type": "boolean"}}
    assert props["merged"]["type"] == "object" and set(props["merged"]["properties"]) == {"a", "b"}
    assert flat["required"] == ["maybe"]
    assert "$schema" not in flat and "$defs" not in flat
    # A recursive schema is cut off, not followed forever; a non-object one becomes an object.
    recursive = {"type": "object", "properties": {"n": {"$ref": "#"}}}
    assert flatten_schema(recursive)["type"] == "object"
    assert flatten_schema({"type": "string"}) == {"type": "object", "properties": {}, "required": []}
    assert flatten_schema(None) == {"type": "object", "properties": {}, "required": []}

    assert api_name("fixture__echo") == "fixture__echo"
    assert api_name("git.log/show") == "git_log_show"
    long = "s" * 80
    assert len(api_name(long)) == 64
    names = api_names(["a.b", "a_b", long, long + "x"])
    assert len(set(names.values())) == 4
    assert all(len(n) <= 64 for n in names.values())


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))
