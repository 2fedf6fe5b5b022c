"""The tool servers of the `eval` bench: three MCP servers modelled on the kinds a BrowseComp-style
evaluation uses (web search, page scraping, a code sandbox), with simulated latency and
deterministic answers, so two stacks running the same calls get the same results.

    python eval_tools.py --kind search|scrape|sandbox [--scale S] [--state-dir DIR] [--impl sdk|plain]

- search  `web_search(query, num_results=5)`: log-normal latency, median 1 s (fixed per query, so
          a query repeated by another task takes as long), a page of result lines.
- scrape  `scrape_page(url, max_chars=4000)`: 2-3 s; a few percent of the pages (fixed by URL)
          hang for 100 s, past any sane deadline.
- sandbox `run_python_code(code, timeout=30)`: 2 s × (1 + (n/8)²) where n is the number of sandbox
          calls in progress across every sandbox process sharing --state-dir (a file counter under
          a lock): it slows with its own concurrency, as a shared sandbox service does.

Every time is multiplied by --scale. Answers depend only on the arguments (after integer
coercion), never on timing. `--impl sdk` (default) serves through the official Python SDK's
MCPServer (FastMCP), as real Python tool servers do, and pays its start-up (~1 s of CPU);
`--impl plain` is a stdlib-only stdio JSON-RPC loop with the same tools, for runs where that
start-up would swamp a 2-core machine. Not part of the product.
"""
from __future__ import annotations

import argparse
import asyncio
import fcntl
import hashlib
import json
import math
import os
import random
import sys

# name → (server, description, JSON schema); the bench's agents and checks import this table.
TOOLS = {
    "search": ("web_search", "Search the web; returns result lines (title, url, snippet).",
               {"type": "object", "properties": {
                   "query": {"type": "string", "description": "what to search for"},
                   "num_results": {"type": "integer", "description": "results wanted (1-10)", "default": 5}},
                "required": ["query"]}),
    "scrape": ("scrape_page", "Fetch a web page and return its text.",
               {"type": "object", "properties": {
                   "url": {"type": "string", "description": "the page's URL"},
                   "max_chars": {"type": "integer", "description": "cut the text at this length", "default": 4000}},
                "required": ["url"]}),
    "sandbox": ("run_python_code", "Run Python code in a sandbox; returns its stdout.",
                {"type": "object", "properties": {
                    "code": {"type": "string", "description": "Python source"},
                    "timeout": {"type": "integer", "description": "seconds", "default": 30}},
                 "required": ["code"]}),
}
INT_PARAMS = {"num_results", "max_chars", "timeout"}
HANG_PERCENT = 4          # scrape: pages that hang
HANG_S = 100.0
SANDBOX_BASE_S = 2.0
SANDBOX_K = 8.0

WORDS = ("model agent answer paper dataset benchmark result method study archive report table "
         "figure source author year survey index record value page section reference claim").split()


def _rng(*parts: object) -> random.Random:
    return random.Random("/".join(str(p) for p in parts))


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) + str(rng.randrange(100)) for _ in range(n))


def as_int(value, name: str) -> int:
    """Integer arguments as a pydantic model in lax mode reads them ("5" is 5)."""
    if isinstance(value, bool):
        raise ValueError(f"{name}: expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    raise ValueError(f"{name}: expected an integer, got {value!r}")


# ---- what each tool answers (pure) and how long it takes ----

def search_answer(query: str, num_results: int) -> str:
    n = max(1, min(10, num_results))
    rng = _rng("search", query, n)
    lines = [f"Search results for {query!r} ({n}):"]
    for i in range(n):
        lines.append(f"{i + 1}. {_words(rng, 4)} - https://example.org/page/{rng.randrange(500)} - {_words(rng, 14)}")
    return "\n".join(lines)


def search_seconds(query: str) -> float:
    z = _rng("search-latency", query).gauss(0.0, 1.0)
    return min(8.0, math.exp(0.6 * z))  # median 1 s


def scrape_answer(url: str, max_chars: int) -> str:
    rng = _rng("scrape", url)
    text = f"Page {url}\n" + _words(rng, 220 + rng.randrange(120))
    return text[:max(1, max_chars)]


def scrape_hangs(url: str) -> bool:
    return int(hashlib.sha256(url.encode()).hexdigest(), 16) % 100 < HANG_PERCENT


def scrape_seconds(url: str) -> float:
    return HANG_S if scrape_hangs(url) else 2.0 + _rng("scrape-latency", url).random()


def sandbox_answer(code: str, timeout: int) -> str:
    digest = hashlib.sha256(code.encode()).hexdigest()
    return f"exit 0\nstdout:\n{int(digest[:8], 16) % 100000}\n(ran {len(code)} bytes, limit {timeout} s)"


class SandboxLoad:
    """Calls in progress across every sandbox process sharing one directory."""

    def __init__(self, state_dir: str | None):
        self.path = os.path.join(state_dir, "sandbox-running") if state_dir else None
        self.local = 0

    def _add(self, delta: int) -> int:
        if not self.path:
            self.local += delta
            return self.local
        with open(self.path, "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            f.seek(0)
            text = f.read().strip()
            n = max(0, (int(text) if text else 0) + delta)
            f.seek(0)
            f.truncate()
            f.write(str(n))
            return n

    def enter(self) -> int:
        return self._add(1)

    def leave(self) -> None:
        self._add(-1)


def required_str(args: dict, name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ValueError(f"{name}: required string")
    return value


async def run_tool(kind: str, args: dict, scale: float, load: SandboxLoad) -> str:
    """The tool's answer after its simulated time; ValueError for bad arguments."""
    if kind == "search":
        query = required_str(args, "query")
        n = as_int(args.get("num_results", 5), "num_results")
        await asyncio.sleep(search_seconds(query) * scale)
        return search_answer(query, n)
    if kind == "scrape":
        url = required_str(args, "url")
        m = as_int(args.get("max_chars", 4000), "max_chars")
        await asyncio.sleep(scrape_seconds(url) * scale)
        return scrape_answer(url, m)
    code = required_str(args, "code")
    t = as_int(args.get("timeout", 30), "timeout")
    n = load.enter()
    try:
        await asyncio.sleep(SANDBOX_BASE_S * (1 + (n / SANDBOX_K) ** 2) * scale)
    finally:
        load.leave()
    return sandbox_answer(code, t)


# ---- the two ways to serve them ----

def serve_sdk(kind: str, scale: float, load: SandboxLoad) -> None:
    from mcp.server.mcpserver import MCPServer

    app = MCPServer(f"eval-{kind}", log_level="WARNING")
    name, description, _ = TOOLS[kind]
    if kind == "search":
        async def web_search(query: str, num_results: int = 5) -> str:
            return await run_tool(kind, {"query": query, "num_results": num_results}, scale, load)
        fn = web_search
    elif kind == "scrape":
        async def scrape_page(url: str, max_chars: int = 4000) -> str:
            return await run_tool(kind, {"url": url, "max_chars": max_chars}, scale, load)
        fn = scrape_page
    else:
        async def run_python_code(code: str, timeout: int = 30) -> str:
            return await run_tool(kind, {"code": code, "timeout": timeout}, scale, load)
        fn = run_python_code
    app.tool(name=name, description=description)(fn)
    app.run()


async def serve_plain(kind: str, scale: float, load: SandboxLoad) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer
    name, description, schema = TOOLS[kind]
    running: dict = {}

    def send(obj: dict) -> None:
        out.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        out.flush()

    async def call(mid, params: dict) -> None:
        try:
            if params.get("name") != name:
                send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"Unknown tool: {params.get('name')}"}})
                return
            try:
                text, is_error = await run_tool(kind, params.get("arguments") or {}, scale, load), False
            except ValueError as e:
                text, is_error = f"Error executing tool {name}: {e}", True
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}], "isError": is_error}})
        except asyncio.CancelledError:
            pass
        finally:
            running.pop(mid, None)

    while True:
        line = await reader.readline()
        if not line:
            return
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            version = (msg.get("params") or {}).get("protocolVersion", "2025-06-18")
            send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": version, "capabilities": {"tools": {}},
                                                          "serverInfo": {"name": f"eval-{kind}", "version": "1"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [{"name": name, "description": description, "inputSchema": schema}]}})
        elif method == "tools/call":
            running[mid] = asyncio.ensure_future(call(mid, msg.get("params") or {}))
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "notifications/cancelled":
            task = running.get((msg.get("params") or {}).get("requestId"))
            if task:
                task.cancel()
        elif mid is not None:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kind", choices=sorted(TOOLS), required=True)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--state-dir", default=None)
    ap.add_argument("--impl", choices=("sdk", "plain"), default="sdk")
    a = ap.parse_args()
    load = SandboxLoad(a.state_dir)
    if a.impl == "sdk":
        serve_sdk(a.kind, a.scale, load)
    else:
        try:
            asyncio.run(serve_plain(a.kind, a.scale, load))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
