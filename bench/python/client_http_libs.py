"""Client CPU per call of candidate HTTP libraries for the toolbridge Python client, against a
real gateway and the fixture's echo tool: one call per POST /v1/batch, sequentially, on one
kept-alive connection; CPU is this process's own (user + system), so the gateway's and the
fixture's time is not counted. Prints a table.

    python bench/python/client_http_libs.py --toolbridge build/toolbridge --fixture build/toolbridge-fixture

Libraries that are not installed are skipped with a note (http.client is always there)."""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import toolbridge  # noqa: E402

BODY = json.dumps({"calls": [{"tool": "fixture__echo", "arguments": {"text": "hello"}}]}).encode()
HEADERS = {"Content-Type": "application/json"}


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def measure(name: str, n: int, one_call) -> tuple[str, float, float]:
    for _ in range(50):
        one_call()
    start_cpu, start = cpu(), time.perf_counter()
    for _ in range(n):
        one_call()
    return name, (cpu() - start_cpu) / n * 1e6, (time.perf_counter() - start) / n * 1e6


async def measure_async(name: str, n: int, one_call) -> tuple[str, float, float]:
    for _ in range(50):
        await one_call()
    start_cpu, start = cpu(), time.perf_counter()
    for _ in range(n):
        await one_call()
    return name, (cpu() - start_cpu) / n * 1e6, (time.perf_counter() - start) / n * 1e6


def check(payload: bytes) -> None:
    assert json.loads(payload)["results"][0]["outcome"] == "ok", payload[:200]


def run(base: str, host: str, port: int, n: int) -> list[tuple[str, float, float]]:
    rows = []
    conn = http.client.HTTPConnection(host, port)

    def stdlib():
        conn.request("POST", "/v1/batch", BODY, HEADERS)
        check(conn.getresponse().read())

    rows.append(measure("http.client (stdlib, sync)", n, stdlib))

    # The same call over MCP (Streamable HTTP, JSON answers) on the same library: what a single
    # call would cost the client if it went to /mcp instead of /v1/batch.
    mcp_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "0"}}}
    conn.request("POST", "/mcp", json.dumps(init).encode(), mcp_headers)
    resp = conn.getresponse()
    resp.read()
    sid = resp.getheader("Mcp-Session-Id")
    session_headers = {**mcp_headers, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-06-18"}
    conn.request("POST", "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session_headers)
    conn.getresponse().read()
    ids = iter(range(1, 1 << 30))

    def mcp():
        msg = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call",
               "params": {"name": "fixture__echo", "arguments": {"text": "hello"}}}
        conn.request("POST", "/mcp", json.dumps(msg).encode(), session_headers)
        assert "result" in json.loads(conn.getresponse().read())

    rows.append(measure("http.client, MCP tools/call (sync)", n, mcp))
    try:
        import urllib3

        pool = urllib3.HTTPConnectionPool(host, port, maxsize=1)

        def u3():
            check(pool.request("POST", "/v1/batch", body=BODY, headers=HEADERS).data)

        rows.append(measure(f"urllib3 {urllib3.__version__} (sync)", n, u3))
    except ImportError:
        print("urllib3 not installed: skipped", file=sys.stderr)
    try:
        import httpx

        client = httpx.Client(base_url=base)

        def hx():
            check(client.post("/v1/batch", content=BODY, headers=HEADERS).content)

        rows.append(measure(f"httpx {httpx.__version__} (sync)", n, hx))

        async def hx_async():
            async with httpx.AsyncClient(base_url=base) as ac:
                async def one():
                    check((await ac.post("/v1/batch", content=BODY, headers=HEADERS)).content)
                return await measure_async(f"httpx {httpx.__version__} (async)", n, one)

        rows.append(asyncio.run(hx_async()))
    except ImportError:
        print("httpx not installed: skipped", file=sys.stderr)
    try:
        import aiohttp

        async def aio():
            async with aiohttp.ClientSession(base) as s:
                async def one():
                    async with s.post("/v1/batch", data=BODY, headers=HEADERS) as r:
                        check(await r.read())
                return await measure_async(f"aiohttp {aiohttp.__version__} (async)", n, one)

        rows.append(asyncio.run(aio()))
    except ImportError:
        print("aiohttp not installed: skipped", file=sys.stderr)
    # What the toolbridge client itself costs (its chosen transport plus its own work).
    if not hasattr(toolbridge, "Client"):
        return rows
    with toolbridge.Client(base) as c:
        rows.append(measure("toolbridge.Client.call", n, lambda: c.call("fixture__echo", {"text": "hello"})))

    async def tb_async():
        async with toolbridge.AsyncClient(base) as c:
            async def one():
                await c.call("fixture__echo", {"text": "hello"})
            return await measure_async("toolbridge.AsyncClient.call", n, one)

    rows.append(asyncio.run(tb_async()))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolbridge", default="build/toolbridge")
    ap.add_argument("--fixture", default="build/toolbridge-fixture")
    ap.add_argument("-n", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "servers.yaml"
        cfg.write_text(f"servers:\n  fixture:\n    command: {Path(args.fixture).resolve()}\n")
        with toolbridge.Gateway(cfg, binary=str(Path(args.toolbridge).resolve())) as gw:
            rows = run(gw.base_url, gw.host, gw.port, args.n)
    print(f"{'library':34} {'client CPU µs/call':>19} {'latency µs/call':>16}")
    for name, cpu_us, lat_us in rows:
        print(f"{name:34} {cpu_us:19.0f} {lat_us:16.0f}")


if __name__ == "__main__":
    main()
