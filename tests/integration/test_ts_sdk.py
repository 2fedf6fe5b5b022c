"""The official TypeScript MCP SDK (Node) as a downstream client of the gateway."""

from __future__ import annotations

import json
import subprocess

import pytest

from tb_support import REPO, everything_server, fixture_server, node_bin

pytestmark = pytest.mark.timeout(90)

CLIENT = REPO / "tests" / "js" / "client.mjs"


def test_typescript_sdk_client(gateway_factory):
    assert CLIENT.exists(), CLIENT
    gw = gateway_factory({"fixture": fixture_server(), "everything": everything_server()})
    # Run from the repo root so `@modelcontextprotocol/sdk` resolves from ./node_modules.
    proc = subprocess.run([node_bin(), str(CLIENT), gw.mcp_url], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, f"client.mjs failed ({proc.returncode}):\n{proc.stderr}\n" \
                                 f"gateway stderr:\n{gw.stderr_tail()}"
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["protocolVersion"] in ("2025-03-26", "2025-06-18", "2025-11-25"), summary
    assert summary["sessionId"], "no Mcp-Session-Id was issued"
    tools = set(summary["tools"])
    assert {"fixture__echo", "fixture__add", "everything__echo"} <= tools, sorted(tools)
    assert summary["fixtureEcho"] == {"isError": False, "text": "from typescript"}
    assert summary["everythingEcho"]["isError"] is False
    assert "ts to everything" in summary["everythingEcho"]["text"]
    assert float(summary["fixtureAdd"]["text"]) == 42
    assert summary["parallel"] == [f"p{i}" for i in range(20)]
