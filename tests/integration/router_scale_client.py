"""Streamed chat completions through the gateway's LLM router, all at once: the client side of
test_node_scale.py's router rollout. Run as a program it plays streams FIRST..FIRST+COUNT against
BASE_URL and prints one JSON line ({"problems": [...the first 20...], "failed": N}), so a test can
spread a node's streams over several client processes (one Python process is one core)."""

from __future__ import annotations

import json
import sys

import anyio
import httpx

from llm_support import chat_body, sse_events

SYSTEM = " ".join(f"sys{i}" for i in range(300))


async def stream(client: httpx.AsyncClient, base_url: str, i: int) -> str | None:
    """One streamed completion of trajectory t{i}: None, or what went wrong."""
    body = chat_body([{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": f"task {i}"}], stream=True, max_tokens=8)
    try:
        async with client.stream("POST", base_url + "/v1/chat/completions", json=body,
                                 headers={"X-Toolbridge-Trajectory": f"t{i}"}) as r:
            text = (await r.aread()).decode()
            events = sse_events(text)
            if r.status_code != 200 or not events or events[-1] != "[DONE]":
                return f"stream {i}: HTTP {r.status_code} {text[:200]!r}"
            return None
    except Exception as e:  # noqa: BLE001 - every failure is counted
        return f"stream {i}: {type(e).__name__}: {e}"[:300]


def router_rollout(base_url: str, streams: range) -> list[str]:
    """Every stream of `streams` at once; the problems."""
    problems: list[str] = []

    async def one(client: httpx.AsyncClient, i: int) -> None:
        if (problem := await stream(client, base_url, i)) is not None:
            problems.append(problem)

    async def main() -> None:
        limits = httpx.Limits(max_connections=len(streams), max_keepalive_connections=len(streams))
        async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(300, pool=None)) as client:
            async with anyio.create_task_group() as tg:
                for i in streams:
                    tg.start_soon(one, client, i)

    anyio.run(main)
    return problems


if __name__ == "__main__":
    base, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    found = router_rollout(base, range(first, first + count))
    print(json.dumps({"problems": found[:20], "failed": len(found)}))
