"""The client command the conformance suite runs for its client scenarios: our upstream client is
the gateway, so this starts `toolbridge serve` with the suite's server URL (appended to the
command) as a remote server, then lists and calls every tool through the gateway.

Usage: conformance_client.py SERVER_URL   (MCP_CONFORMANCE_SCENARIO names the scenario)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tb_sdk import sdk_session  # noqa: E402
from tb_support import toolbridge_bin  # noqa: E402


def arguments_for(schema: dict) -> dict:
    """Plain values of each property's type (the suite's add_numbers wants numbers)."""
    out = {}
    for name, prop in (schema or {}).get("properties", {}).items():
        kind = prop.get("type")
        out[name] = {"number": 5, "integer": 5, "boolean": True, "string": "test"}.get(kind, "test")
    return out


async def confirm(context, params):
    """Accepts every elicitation (the 2026-07-28 MRTR scenario asks to confirm)."""
    import mcp.types as types
    return types.ElicitResult(action="accept", content={"confirmed": True})


async def drive(url: str) -> None:
    async with sdk_session(url, elicitation_callback=confirm) as s:
        tools = (await s.list_tools()).tools
        for tool in tools:
            result = await s.call_tool(tool.name, arguments_for(getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)))
            print(f"{tool.name}: {result.model_dump_json()[:500]}", flush=True)


def main() -> int:
    server_url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "toolbridge.json"
        config.write_text(json.dumps({
            "mcpServers": {"remote": {"url": server_url, "timeout": 20}},
            "gateway": {"tool_naming": "unprefixed_when_unique"},
        }))
        proc = subprocess.Popen([str(toolbridge_bin()), "serve", "--config", str(config),
                                 "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE)
        try:
            line = proc.stdout.readline().decode().strip()
            if not line.startswith("listening on "):
                print(f"gateway did not start: {line!r}", file=sys.stderr)
                return 1
            base = line.split()[-1]
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                health = httpx.get(base + "/healthz", timeout=5).json()
                remote = health["servers"]["remote"]
                if remote.get("state") == "ready":
                    break
                time.sleep(0.05)
            else:
                print(f"remote server not ready: {health}", file=sys.stderr)
                return 1
            print(f"scenario {scenario}: gateway ready at {base}", flush=True)
            anyio.run(drive, base + "/mcp")
            return 0
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
