"""The official Python MCP SDK, as a downstream client, against the fixture server behind toolbridge."""

from __future__ import annotations

import json
import re

import anyio
import mcp.types as types
import pytest

from tb_sdk import only_text, run, sdk_session
from tb_support import fixture_server

pytestmark = pytest.mark.timeout(60)

FIXTURE_TOOLS = {"echo", "add", "sleep", "fail", "crash", "hang", "payload", "counter", "busy", "progress",
                 "log", "sample", "elicit"}


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()}, {"tool_naming": "prefixed"}, name="fixture")


def test_initialize_and_list_tools(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            init = s.test_init_result
            assert init.protocol_version in ("2025-03-26", "2025-06-18", "2025-11-25")
            assert init.capabilities.tools is not None, "gateway does not advertise the tools capability"
            tools = (await s.list_tools()).tools
            return {t.name: t for t in tools}

    tools = run(main)
    expected = {f"fixture__{n}" for n in FIXTURE_TOOLS}
    assert expected <= set(tools), f"missing tools: {sorted(expected - set(tools))}; got {sorted(tools)}"
    assert all(name.startswith("fixture__") for name in tools), sorted(tools)
    assert tools["fixture__echo"].input_schema.get("type") == "object"
    assert "text" in tools["fixture__echo"].input_schema.get("properties", {})


def test_echo_add_fail(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            echo = await s.call_tool("fixture__echo", {"text": "héllo wörld ✓"})
            add = await s.call_tool("fixture__add", {"a": 2, "b": 3})
            addf = await s.call_tool("fixture__add", {"a": 1.5, "b": 2.25})
            fail = await s.call_tool("fixture__fail", {"message": "it broke on purpose"})
            return echo, add, addf, fail

    echo, add, addf, fail = run(main)
    assert not echo.is_error
    assert only_text(echo) == "héllo wörld ✓"
    assert float(only_text(add)) == 5
    assert float(only_text(addf)) == 3.75
    assert fail.is_error is True
    assert "it broke on purpose" in only_text(fail)


def test_payload_one_mebibyte(gw):
    size = 1 << 20

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("fixture__payload", {"bytes": size})

    result = run(main)
    text = only_text(result)
    assert len(text) == size
    assert text.count("x") == size


def test_counter_counts_per_instance(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()})

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return [int(only_text(await s.call_tool("fixture__counter", {}))) for _ in range(3)]

    assert run(main) == [1, 2, 3]


def test_progress_notifications(gw):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            result = await s.call_tool("fixture__progress", {"steps": 5}, progress_callback=on_progress)
            with anyio.move_on_after(2):
                while len(seen) < 5:
                    await anyio.sleep(0.01)
            return result

    result = run(main)
    assert only_text(result) == "done"
    assert len(seen) == 5, f"expected 5 progress notifications, got {seen}"
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and len(set(values)) == 5, f"progress not increasing: {values}"


def test_log_notification(gw):
    logs: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params):
        logs.append(params)

    async def main():
        async with sdk_session(gw.mcp_url, logging_callback=on_log) as s:
            result = await s.call_tool("fixture__log", {"level": "warning", "message": "log-line-42"})
            with anyio.move_on_after(2):
                while not logs:
                    await anyio.sleep(0.01)
            return result

    result = run(main)
    assert only_text(result) == "logged"
    matching = [p for p in logs if "log-line-42" in json.dumps(p.data)]
    assert matching, f"no notifications/message with the logged text reached the client: {logs}"
    assert matching[0].level == "warning"


def test_sampling_round_trip(gw):
    requests: list[types.CreateMessageRequestParams] = []

    async def sampling(context, params):
        requests.append(params)
        content = params.messages[0].content
        prompt = (content[0] if isinstance(content, list) else content).text
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text=f"sampled<{prompt}>"))

    async def main():
        async with sdk_session(gw.mcp_url, sampling_callback=sampling) as s:
            return await s.call_tool("fixture__sample", {"prompt": "what is 6*7"})

    result = run(main)
    assert not result.is_error, result
    assert only_text(result) == "sampled<what is 6*7>"
    assert len(requests) == 1


def test_elicitation_round_trip(gw):
    asked: list[types.ElicitRequestParams] = []
    answer = {"answer": "forty-two", "confident": True}

    async def elicitation(context, params):
        asked.append(params)
        return types.ElicitResult(action="accept", content=answer)

    async def main():
        async with sdk_session(gw.mcp_url, elicitation_callback=elicitation) as s:
            return await s.call_tool("fixture__elicit", {"message": "please answer"})

    result = run(main)
    assert not result.is_error, result
    got = json.loads(only_text(result))
    assert got == answer or got.get("content") == answer, got
    assert len(asked) == 1 and asked[0].message == "please answer"


def test_resources(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            resources = (await s.list_resources()).resources
            templates = (await s.list_resource_templates()).resource_templates
            static = [r for r in resources if str(r.uri).endswith("static/hello")]
            assert static, f"fixture://static/hello not listed: {[str(r.uri) for r in resources]}"
            hello = await s.read_resource(str(static[0].uri))
            echo_t = [t for t in templates if t.uri_template.endswith("echo/{text}")]
            assert echo_t, f"fixture://echo/{{text}} not listed: {[t.uri_template for t in templates]}"
            echoed = await s.read_resource(echo_t[0].uri_template.replace("{text}", "abc123"))
            return hello, echoed

    hello, echoed = run(main)
    assert [c.text for c in hello.contents] == ["hello"]
    assert "abc123" in echoed.contents[0].text


def test_prompts(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            prompts = (await s.list_prompts()).prompts
            names = [p.name for p in prompts]
            greet = [n for n in names if n in ("fixture__greet", "greet")]
            assert greet, f"greet prompt not listed: {names}"
            return await s.get_prompt(greet[0], {"name": "Ada"})

    prompt = run(main)
    assert len(prompt.messages) == 1
    assert prompt.messages[0].role == "user"
    assert prompt.messages[0].content.text == "Hello, Ada!"


def test_metrics_count_calls(gw):
    async def main():
        async with sdk_session(gw.mcp_url) as s:
            for i in range(3):
                await s.call_tool("fixture__echo", {"text": f"m{i}"})

    run(main)
    text = gw.metrics()
    calls = [line for line in text.splitlines()
             if line.startswith("toolbridge_calls_total{") and 'server="fixture"' in line
             and ('tool="echo"' in line or 'tool="fixture__echo"' in line)]
    assert calls, "no toolbridge_calls_total series for fixture/echo:\n" + text[:3000]
    assert sum(float(line.rsplit(" ", 1)[1]) for line in calls) >= 3
    for name in ("toolbridge_call_duration_seconds_bucket", "toolbridge_in_flight", "toolbridge_instances"):
        assert re.search(rf"^{name}[{{ ]", text, re.M), f"no {name} sample in /metrics"
    # No restart has happened: the counter must be declared (its samples are checked after a crash).
    assert re.search(r"^# TYPE toolbridge_restarts_total counter$", text, re.M), "toolbridge_restarts_total missing"


def test_unprefixed_when_unique(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, {"tool_naming": "unprefixed_when_unique"})

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            return names, await s.call_tool("echo", {"text": "bare"})

    names, result = run(main)
    assert "echo" in names and "fixture__echo" not in names, sorted(names)
    assert only_text(result) == "bare"


def test_json_mcpservers_config(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, fmt="json")

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("fixture__echo", {"text": "from json config"})

    assert only_text(run(main)) == "from json config"
