"""The 2024-11-05 HTTP+SSE transport (GET /sse + POST /messages) on the gateway, driven by the
official Python SDK's unchanged `sse_client`, plus the transport's error paths by raw HTTP."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack, asynccontextmanager

import httpx
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.sse import sse_client

from tb_sdk import only_text, run
from tb_support import fixture_server

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()}, {"tool_naming": "prefixed"}, name="legacy",
                                  ready=["fixture"])


@asynccontextmanager
async def legacy_session(gw, **callbacks):
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(sse_client(gw.base_url + "/sse"))
        session = await stack.enter_async_context(ClientSession(read, write, **callbacks))
        await session.initialize()
        yield session


def test_list_call_progress_error(gw):
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value, total, message):
        progress.append((value, total))

    async def main():
        async with legacy_session(gw) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            echo = await s.call_tool("fixture__echo", {"text": "over legacy sse"})
            steps = await s.call_tool("fixture__progress", {"steps": 3, "delay_ms": 5},
                                      progress_callback=on_progress)
            fail = await s.call_tool("fixture__fail", {"message": "broken on purpose"})
            return tools, echo, steps, fail

    tools, echo, steps, fail = run(main)
    assert {"fixture__echo", "fixture__progress", "fixture__fail"} <= tools, sorted(tools)
    assert not echo.is_error and only_text(echo) == "over legacy sse"
    assert only_text(steps) == "done"
    assert progress == [(1, 3), (2, 3), (3, 3)], progress
    assert fail.is_error is True and "broken on purpose" in only_text(fail)


def test_sampling_and_concurrent_calls(gw):
    async def sampling(context, params):
        content = params.messages[0].content
        prompt = (content[0] if isinstance(content, list) else content).text
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text=f"<{prompt}>"))

    async def main():
        import anyio

        async with legacy_session(gw, sampling_callback=sampling) as s:
            sampled = await s.call_tool("fixture__sample", {"prompt": "hi"})
            echoes: dict[int, str] = {}

            async def one(i):
                r = await s.call_tool("fixture__echo", {"text": f"c{i}"})
                echoes[i] = only_text(r)

            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(one, i)
            return sampled, echoes

    sampled, echoes = run(main)
    assert only_text(sampled) == "<hi>"
    assert echoes == {i: f"c{i}" for i in range(20)}


def test_endpoint_event_and_errors(gw):
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        with client.stream("GET", "/sse", headers={"Accept": "text/event-stream"}) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            lines = resp.iter_lines()
            assert next(lines) == "event: endpoint"
            data = next(lines)
            assert data.startswith("data: /messages?sessionId="), data
            endpoint = data[len("data: "):]
            assert gw.health()["sessions"] >= 1
            bad = client.post(endpoint, content=b"{not json", headers={"Content-Type": "application/json"})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
            batch = client.post(endpoint, content=b"[]", headers={"Content-Type": "application/json"})
            assert batch.status_code == 400
        # Closing the stream ends the session (noticed within about a second): its endpoint is gone.
        deadline = time.monotonic() + 5
        while gw.health()["sessions"] > 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gw.health()["sessions"] == 0, "the session outlived its SSE stream"
        gone = client.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert gone.status_code == 404, gone.text
        assert client.post("/messages", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}).status_code == 400
        assert client.post("/messages?sessionId=nope", json={"jsonrpc": "2.0", "id": 1,
                                                            "method": "ping"}).status_code == 404
        assert client.post("/sse").status_code == 405
        evil = client.get("/sse", headers={"Accept": "text/event-stream", "Origin": "http://evil.example"})
        assert evil.status_code == 403
        rebound = client.get("/sse", headers={"Accept": "text/event-stream", "Host": "evil.example:80"})
        assert rebound.status_code == 403


def test_sigterm_with_an_open_legacy_stream(gateway_factory):
    """A gateway with a legacy session open still stops cleanly (exit 0, no process left)."""
    gw = gateway_factory({"fixture": fixture_server()}, ready=["fixture"])
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        with client.stream("GET", "/sse", headers={"Accept": "text/event-stream"}) as resp:
            lines = resp.iter_lines()
            assert next(lines) == "event: endpoint"
            endpoint = next(lines)[len("data: "):]
            slow = client.post(endpoint, json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                               "params": {"name": "fixture__sleep", "arguments": {"ms": 300}}})
            assert slow.status_code == 202
            gw.close()  # SIGTERM; asserts exit 0 and no leftover process


def test_the_legacy_transport_does_not_offer_tasks(gw):
    # 2025-11-25 sessions on Streamable HTTP get the tasks capability (test_session_tasks.py);
    # this transport does not serve the task methods, so it must not offer them.
    async def main():
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(sse_client(gw.base_url + "/sse"))
            session = await stack.enter_async_context(ClientSession(read, write))
            return await session.initialize()

    result = run(main)
    assert result.protocol_version == "2025-11-25", result.protocol_version
    assert result.capabilities.tools is not None
    assert "tasks" not in result.capabilities.model_dump(exclude_none=True), result.capabilities
