"""The official MCP conformance suite's client scenarios against our upstream client: the suite
starts its test server and runs conformance_client.py with its URL, which serves that URL through
the gateway as a remote server and lists and calls its tools. Known failures, with reasons, live
in conformance_client_expected_failures.txt (empty now)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_conformance import suite_cmd
from tb_support import REPO

pytestmark = pytest.mark.timeout(180)

HERE = Path(__file__).resolve().parent
EXPECTED_FILE = HERE / "conformance_client_expected_failures.txt"
SCENARIOS = ["initialize", "tools_call", "sse-retry"]


def expected_failures() -> dict[str, str]:
    out = {}
    for n, line in enumerate(EXPECTED_FILE.read_text().splitlines(), 1):
        line = line.strip()
        if line and not line.startswith("#"):
            parts = line.split(None, 1)
            assert len(parts) == 2, f"{EXPECTED_FILE.name}:{n}: want 'SCENARIO REASON', got {line!r}"
            out[parts[0]] = parts[1]
    return out


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_scenario(scenario, tmp_path, binaries):
    command = f"{sys.executable} {HERE / 'conformance_client.py'}"
    proc = subprocess.run(suite_cmd("client", "--command", command, "--scenario", scenario,
                                    "-o", str(tmp_path)),
                          capture_output=True, text=True, timeout=150, cwd=REPO)
    checks = [c for f in tmp_path.glob("*/checks.json") for c in json.loads(f.read_text())]
    failed = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    passed = proc.returncode == 0 and checks and not failed
    known = expected_failures()
    if scenario in known:
        assert not passed, f"{scenario} passes now: delete its line from {EXPECTED_FILE.name}"
        return
    logs = "\n".join(f.read_text()[-3000:] for f in tmp_path.glob("*/stderr.txt"))
    assert passed, (f"{scenario}: exit {proc.returncode}; failed checks: "
                    f"{json.dumps(failed, indent=1)[:3000]}\n{proc.stdout[-3000:]}\nclient stderr:\n{logs}")
