"""`toolbridge stdio`: the official Python SDK's unchanged `stdio_client` launches the shim as
its server command and reaches the gateway through it."""

from __future__ import annotations

import os
from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tb_sdk import only_text, run
from tb_support import fixture_server, toolbridge_bin

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    # Two servers with the same tool names: --server must pick one and hide the other.
    return module_gateway_factory({"fixture": fixture_server(), "other": fixture_server("--name", "other")},
                                  {"tool_naming": "unprefixed_when_unique"}, name="shim", ready=["fixture", "other"])


@asynccontextmanager
async def shim_session(args: list[str], env: dict | None = None, **callbacks):
    params = StdioServerParameters(command=str(toolbridge_bin()), args=["stdio", *args], env=env)
    async with AsyncExitStack() as stack:
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write, **callbacks))
        await session.initialize()
        yield session


def test_list_call_progress_error(gw):
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    async def main():
        async with shim_session(["--url", gw.mcp_url]) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            echo = await s.call_tool("fixture__echo", {"text": "through the shim"})
            steps = await s.call_tool("other__progress", {"steps": 3, "delay_ms": 5}, progress_callback=on_progress)
            fail = await s.call_tool("fixture__fail", {"message": "shim failure"})
            return tools, echo, steps, fail

    tools, echo, steps, fail = run(main)
    # Both servers have every tool, so unprefixed_when_unique keeps the prefixes.
    assert {"fixture__echo", "other__echo", "other__progress"} <= tools, sorted(tools)
    assert only_text(echo) == "through the shim" and not echo.is_error
    assert only_text(steps) == "done" and progress == [1, 2, 3]
    assert fail.is_error is True and "shim failure" in only_text(fail)


def test_server_option_exposes_one_server_unprefixed(gw):
    async def sampling(context, params):
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="sampled"))

    async def main():
        # The URL from the environment, as a framework's config would set it.
        env = {**os.environ, "TOOLBRIDGE_URL": gw.mcp_url}
        async with shim_session(["--server", "other"], env=env, sampling_callback=sampling) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            echo = await s.call_tool("echo", {"text": "bare name"})
            sampled = await s.call_tool("sample", {"prompt": "x"})
            results = {}

            async def one(i):
                results[i] = only_text(await s.call_tool("add", {"a": i, "b": 1}))

            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(one, i)
            return tools, echo, sampled, results

    tools, echo, sampled, results = run(main)
    assert {"echo", "add", "sample", "progress"} <= tools, sorted(tools)
    assert not any("__" in t for t in tools), sorted(tools)
    assert only_text(echo) == "bare name"
    assert only_text(sampled) == "sampled"
    assert {i: float(v) for i, v in results.items()} == {i: i + 1 for i in range(10)}


def test_unreachable_gateway_is_an_error_not_a_hang(gw):
    async def main():
        params = StdioServerParameters(command=str(toolbridge_bin()),
                                       args=["stdio", "--url", "http://127.0.0.1:9/mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                with anyio.fail_after(20):
                    await s.initialize()

    with pytest.raises(Exception) as info:
        run(main)
    assert "cannot reach the gateway" in repr(info.value) + str(getattr(info.value, "exceptions", "")), info.value


def test_session_survives_a_gateway_restart(tmp_path):
    """A long-lived stdio client outlives a gateway restart: the shim opens a new session."""
    import socket
    import subprocess
    import time

    import httpx

    from tb_support import write_config

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = write_config(tmp_path, {"fixture": fixture_server()})
    base = f"http://127.0.0.1:{port}"

    def start_gateway() -> subprocess.Popen:
        proc = subprocess.Popen([str(toolbridge_bin()), "serve", "--config", str(config), "--listen",
                                 f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert proc.stdout.readline().decode().startswith("listening on"), "gateway did not start"
        deadline = time.monotonic() + 30
        while httpx.get(base + "/healthz").json()["status"] != "ok":
            assert time.monotonic() < deadline, "fixture not ready"
            time.sleep(0.05)
        return proc

    def stop(proc: subprocess.Popen) -> None:
        proc.terminate()
        assert proc.wait(15) == 0

    gateways = [start_gateway()]

    async def main():
        async with shim_session(["--url", base + "/mcp"]) as s:
            first = only_text(await s.call_tool("fixture__echo", {"text": "before"}))
            stop(gateways[0])
            gateways.append(start_gateway())
            second = only_text(await s.call_tool("fixture__echo", {"text": "after"}))
            tools = {t.name for t in (await s.list_tools()).tools}
            return first, second, tools

    try:
        first, second, tools = run(main)
    finally:
        for g in gateways:
            if g.poll() is None:
                stop(g)
    assert (first, second) == ("before", "after")
    assert "fixture__echo" in tools
