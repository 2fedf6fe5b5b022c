"""Rollout driver for toolbridge-bench: N trajectories run concurrently, each making its planned
tool calls in order, with MCP sessions held by the official Python SDK the way agent frameworks
hold them. toolbridge-bench writes the plan as JSON to stdin and reads one JSON object from stdout.

Modes:
  stdio  one persistent stdio session per trajectory (its own server process), opened when the
         trajectory starts and closed when it ends;
  http   one persistent Streamable HTTP session per trajectory to `url` (e.g. toolbridge);
  spawn  a new stdio server process and session for every call (spawn-per-call);
  toolbridge-call   toolbridge.AsyncClient (this checkout's python/ package): one call per
                    POST /v1/batch, all trajectories sharing the client's kept-alive connections;
  toolbridge-batch  the same, each trajectory sending its calls `batch` at a time in one request
                    with sequential: true (the calls still run one after another, as planned).
"""
import asyncio
import json
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

try:
    from mcp.client.streamable_http import streamable_http_client
except ImportError:  # mcp 1.x
    from mcp.client.streamable_http import streamablehttp_client as streamable_http_client


@asynccontextmanager
async def open_session(spec):
    if spec["mode"] == "http":
        async with streamable_http_client(spec["url"]) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                yield session
    else:
        command = spec["command"]
        params = StdioServerParameters(command=command[0], args=command[1:])
        with open("/dev/null", "w") as devnull:
            async with stdio_client(params, errlog=devnull) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    yield session


class Tally:
    def __init__(self):
        self.calls = 0
        self.errors = 0
        self.first_error = ""
        self.overhead_ms = []  # per successful call: latency minus the planned tool time

    def error(self, text):
        self.errors += 1
        if not self.first_error:
            self.first_error = text


async def call(session, spec, ms, tally):
    """One planned call; returns whether it succeeded."""
    result = await session.call_tool(spec["tool"], {"ms": ms})
    tally.calls += 1
    is_error = getattr(result, "is_error", None)  # mcp 2.x
    if is_error is None:
        is_error = result.isError  # mcp 1.x
    if is_error:
        tally.error(f"tool error: {result.content!r:.300}")
    return not is_error


async def trajectory(spec, plan, tally):
    try:
        if spec["mode"] == "spawn":
            for ms in plan:
                # The whole per-call cost: spawn, initialize, call, and the server's exit.
                t0 = time.perf_counter()
                async with open_session(spec) as session:
                    ok = await call(session, spec, ms, tally)
                if ok:
                    tally.overhead_ms.append((time.perf_counter() - t0) * 1000 - ms)
        else:
            async with open_session(spec) as session:
                for ms in plan:
                    t0 = time.perf_counter()
                    ok = await call(session, spec, ms, tally)
                    if ok:
                        tally.overhead_ms.append((time.perf_counter() - t0) * 1000 - ms)
    except BaseException as e:  # a failed trajectory is reported, the others go on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        while isinstance(e, BaseExceptionGroup) and e.exceptions:  # anyio wraps the cause
            e = e.exceptions[0]
        tally.error(f"{type(e).__name__}: {e}"[:300])


async def toolbridge_trajectory(client, spec, plan, tally):
    size = spec.get("batch", 1) if spec["mode"] == "toolbridge-batch" else 1
    try:
        for first in range(0, len(plan), size):
            chunk = plan[first:first + size]
            t0 = time.perf_counter()
            if size == 1:
                results = [await client.call(spec["tool"], {"ms": chunk[0]}, check=False)]
            else:
                results = await client.batch([(spec["tool"], {"ms": ms}) for ms in chunk], sequential=True)
            elapsed = (time.perf_counter() - t0) * 1000
            tally.calls += len(results)
            bad = [r for r in results if not r.ok]
            for r in bad:
                tally.error(f"{r.outcome}: {r.text[:300]}")
            if not bad:
                # A batch's overhead is spread over its calls.
                tally.overhead_ms.extend([(elapsed - sum(chunk)) / len(chunk)] * len(chunk))
    except Exception as e:  # noqa: BLE001 - a failed trajectory is reported, the others go on
        tally.error(f"{type(e).__name__}: {e}"[:300])


async def run_toolbridge(spec, tally):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import toolbridge

    async with toolbridge.AsyncClient(spec["url"]) as client:
        await asyncio.gather(*(toolbridge_trajectory(client, spec, plan, tally) for plan in spec["plan"]))


async def main():
    spec = json.load(sys.stdin)
    tally = Tally()
    start = time.perf_counter()
    cpu_start = time.process_time()
    if spec["mode"].startswith("toolbridge-"):
        await run_toolbridge(spec, tally)
    else:
        await asyncio.gather(*(trajectory(spec, plan, tally) for plan in spec["plan"]))
    makespan = time.perf_counter() - start
    json.dump({"makespan_s": makespan, "cpu_s": time.process_time() - cpu_start,
               "calls": tally.calls, "errors": tally.errors,
               "first_error": tally.first_error, "overhead_ms": tally.overhead_ms}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
