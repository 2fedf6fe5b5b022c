"""Call repair and validation (src/repair/) through the official Python SDK and raw JSON-RPC:
a repaired call reaches the fixture with repaired arguments, `enforce` answers before the server
is called, and every repair shows in the result's _meta and in /metrics."""

from __future__ import annotations

import json

import pytest

from tb_sdk import only_text, run, sdk_session
from tb_support import RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    servers = {
        "fixture": fixture_server(param_aliases={"q": "query", "code": "code_block"}),
        # The same tools, validated strictly, and one server with repair off.
        "strict": fixture_server(validate="enforce",
                                 tool_repair={"run_code": {"repair": "off"}}),
        "plain": fixture_server(repair="off", validate="off"),
    }
    return module_gateway_factory(servers, {"tool_naming": "prefixed"}, name="repair")


def repairs_of(result) -> list[dict]:
    meta = result.meta or {}
    return meta.get("toolbridge/repairs", [])


def test_a_valid_call_is_untouched_and_carries_no_repairs(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("fixture__search", {"query": "x", "limit": 3})

    result = run(main)
    assert not result.is_error, result
    assert json.loads(only_text(result)) == {"query": "x", "limit": 3}
    assert repairs_of(result) == []


def test_repaired_arguments_reach_the_server(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool(
                "fixture__search",
                {"Query": "cats", "limit": "5", "mode": "News", "tags": "pets", "exact": "true",
                 "unknown_extra": 1})

    result = run(main)
    assert not result.is_error, result
    # The fixture echoes what it received.
    assert json.loads(only_text(result)) == {"query": "cats", "limit": 5, "mode": "news",
                                             "tags": ["pets"], "exact": True}
    kinds = sorted(r["kind"] for r in repairs_of(result))
    assert kinds == ["enum_case", "param_name", "type_coerced", "type_coerced",
                     "unknown_param_dropped", "wrapped_in_array"], repairs_of(result)
    limit = next(r for r in repairs_of(result) if r.get("path") == "/limit")
    assert limit == {"kind": "type_coerced", "path": "/limit", "from": '"5"', "to": "5"}


def test_aliases_defaults_and_tool_names(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            aliased = await s.call_tool("fixture__run_code", {"code": "print(1)"})
            renamed = await s.call_tool("fixture-search", {"q": "x"})
            bare = await s.call_tool("FIXTURE.Search", {"query": "y"})
            return aliased, renamed, bare

    aliased, renamed, bare = run(main)
    assert json.loads(only_text(aliased)) == {"code_block": "print(1)", "language": "python"}
    assert sorted(r["kind"] for r in repairs_of(aliased)) == ["default_filled", "param_alias"]
    assert json.loads(only_text(renamed)) == {"query": "x"}
    assert repairs_of(renamed)[0] == {"kind": "tool_name", "from": "fixture-search",
                                      "to": "fixture__search"}
    assert json.loads(only_text(bare)) == {"query": "y"}


def test_ambiguous_and_unknown_tool_names(gw):
    raw = RawSession(gw.mcp_url).initialize()
    try:
        # search is a tool of three servers: no guess, an isError result naming them.
        ambiguous = raw.call_tool("search", {"query": "x"}, req_id=1)
        unknown = raw.call_tool("fixture__zzzz_qqqq_none", {}, req_id=2)
    finally:
        raw.close()
    assert ambiguous["result"]["isError"] is True, ambiguous
    text = text_of(ambiguous["result"])
    assert "fixture__search" in text and "strict__search" in text, text
    assert "plain__search" not in text, "a server with repair off offers no candidates"
    assert unknown["error"]["code"] == -32602, unknown
    assert "Unknown tool" in unknown["error"]["message"]


def test_arguments_as_a_json_string_are_parsed_and_repaired(gw):
    raw = RawSession(gw.mcp_url).initialize()
    try:
        answer = raw.call_tool("fixture__search", "{'query': 'x', 'limit': 2, 'exact': True,}")
        refused = raw.call_tool("plain__search", "{'query': 'x'}", req_id=2)
    finally:
        raw.close()
    result = answer["result"]
    assert json.loads(text_of(result)) == {"query": "x", "limit": 2, "exact": True}
    kinds = [r["kind"] for r in result["_meta"]["toolbridge/repairs"]]
    assert kinds[0] == "arguments_string" and "single_quotes" in kinds and "python_literal" in kinds
    assert "trailing_comma" in kinds
    # repair: off: the string goes to the server as it was (which then fails on its own).
    assert "toolbridge/repairs" not in refused.get("result", {}).get("_meta", {}), refused


def counter_value(session_call) -> int:
    return int(session_call)


def test_enforce_answers_before_the_server_is_called(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            before = int(only_text(await s.call_tool("strict__counter", {})))
            invalid = await s.call_tool("strict__search", {"limit": "many", "mode": 3})
            # run_code has repair off on strict: "5" is not repaired, so it is refused.
            unrepaired = await s.call_tool("strict__run_code", {"code_block": "x",
                                                                "language": "python",
                                                                "timeout_s": "5"})
            after = int(only_text(await s.call_tool("strict__counter", {})))
            return before, invalid, unrepaired, after

    before, invalid, unrepaired, after = run(main)
    assert invalid.is_error is True
    text = only_text(invalid)
    assert "/limit" in text and "/mode" in text and "query" in text and "not run" in text, text
    assert unrepaired.is_error is True and "/timeout_s" in only_text(unrepaired)
    # The counter tool counts executions on the instance: only the two counter calls ran.
    assert after == before + 1
    metrics = gw.metrics()
    assert 'toolbridge_invalid_calls_total{server="strict",tool="strict__search",mode="enforce"}' \
        in metrics, metrics


def test_warn_passes_invalid_calls_on_and_counts_them(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("fixture__search", {"limit": 2})

    result = run(main)
    assert not result.is_error
    assert json.loads(only_text(result)) == {"limit": 2}
    assert 'toolbridge_invalid_calls_total{server="fixture",tool="fixture__search",mode="warn"}' \
        in gw.metrics()


def test_meta_turns_repair_off_for_one_call(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("fixture__search", {"query": "x", "limit": "5"},
                                     meta={"toolbridge/repair": "off"})

    result = run(main)
    # Not repaired, and the gateway's own key did not reach the server's _meta either.
    assert json.loads(only_text(result)) == {"query": "x", "limit": "5"}
    assert repairs_of(result) == []


def test_a_repair_meta_value_that_is_not_a_mode_is_refused(gw):
    raw = RawSession(gw.mcp_url).initialize()
    try:
        answer = raw.request("tools/call", {"name": "fixture__search", "arguments": {"query": "x"},
                                            "_meta": {"toolbridge/repair": "never"}}, 1)
    finally:
        raw.close()
    assert answer["error"]["code"] == -32602, answer
    assert "toolbridge/repair" in answer["error"]["message"]


def test_repairs_are_counted_by_kind_with_catalog_labels(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            await s.call_tool("fixture__search", {"query": "x", "limit": "7"})
            await s.call_tool("fixture_serch", {"query": "x"})

    run(main)
    metrics = gw.metrics()
    assert 'toolbridge_repairs_total{server="fixture",tool="fixture__search",kind="type_coerced"}' \
        in metrics
    assert 'toolbridge_repairs_total{server="fixture",tool="fixture__search",kind="tool_name"}' \
        in metrics
    assert "fixture_serch" not in metrics, "caller text must never become a label"


def test_a_schema_that_does_not_compile_is_reported_once_and_not_enforced(gateway_factory):
    import sys
    from pathlib import Path

    rogue = str(Path(__file__).resolve().parent / "rogue_server.py")
    gw = gateway_factory({"rogue": {"command": sys.executable, "args": [rogue, "bad-schema"],
                                    "validate": "enforce"}}, name="bad-schema")
    health = gw.health()
    errors = health.get("schema_errors", [])
    assert len(errors) == 1 and errors[0].startswith("rogue__echo: "), health
    raw = RawSession(gw.mcp_url).initialize()
    try:
        answers = [raw.call_tool("rogue__echo", {"text": 5}, req_id=i) for i in range(3)]
    finally:
        raw.close()
    # Not validated (its schema could not be compiled), so enforce does not refuse it.
    for answer in answers:
        assert "result" in answer and not answer["result"].get("isError"), answer
    log = gw.stderr_path.read_text(errors="replace")
    assert log.count("its inputSchema does not compile") == 1, log[-3000:]


def test_a_real_server_gets_repaired_nested_arguments(gateway_factory, tmp_path):
    from tb_support import memory_server

    gw = gateway_factory({"memory": memory_server(tmp_path / "memory.json")}, name="memory")

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            created = await s.call_tool("memory-create_entities", {"entities": [
                {"name": "Ada", "entity_type": "person", "observations": "wrote the first program"}]})
            graph = await s.call_tool("memory__read_graph", {})
            return created, graph

    created, graph = run(main)
    assert not created.is_error, created
    kinds = sorted((r["kind"], r.get("path", "")) for r in repairs_of(created))
    assert kinds == [("param_name", "/entities/0/entity_type"), ("tool_name", ""),
                     ("wrapped_in_array", "/entities/0/observations")], kinds
    entities = json.loads(only_text(graph))["entities"]
    assert entities == [{"type": "entity", "name": "Ada", "entityType": "person",
                         "observations": ["wrote the first program"]}] or \
        [{k: e[k] for k in ("name", "entityType", "observations")} for e in entities] == \
        [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}], entities
