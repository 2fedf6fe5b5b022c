"""What authentication and TLS cost the gateway per call: the fixture's echo through
POST /v1/batch, one call per request, sequentially on one kept-alive connection, against
gateways that differ only in `auth` and `tls`; variants interleaved over rounds in one run. The
figure is the gateway process's own CPU per call (all its threads, from /proc/PID/task/*/
schedstat, nanoseconds), so the client's and the fixture's time is not counted. Prints a table.

    .venv/bin/python bench/python/auth_overhead.py --toolbridge build/toolbridge \\
        --fixture build/toolbridge-fixture [--calls 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import ssl
import subprocess
import tempfile
from pathlib import Path

BODY = json.dumps({"calls": [{"tool": "fixture__echo", "arguments": {"text": "hello"}}]}).encode()
TOKEN = "bench-token-0123456789abcdef"


def gateway_cpu_ns(pid: int) -> int:
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def make_pki(d: Path) -> tuple[Path, Path, Path]:
    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=bench-ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    (d / "ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "server.pem", "-days", "1", "-extfile", "ext")
    return d / "ca.pem", d / "server.pem", d / "server.key"


def variants(d: Path, fixture: str) -> dict[str, tuple[str, bool, bool]]:
    """name -> (config text, sends a token, TLS)"""
    ca, cert, key = make_pki(d)
    servers = f"servers:\n  fixture:\n    command: {fixture}\n"
    many = "".join(f"      - {{token: other-key-{i:06d}-0123456789, tenant: t{i}}}\n" for i in range(1000))
    one = f"      - {{token: {TOKEN}, tenant: bench}}\n"
    allow = f"      - {{token: {TOKEN}, tenant: bench, allow: [fixture]}}\n"
    tls = f"  tls: {{cert: {cert}, key: {key}}}\n"
    return {
        "no auth (the default)": (f"gateway:\n  log_level: warn\n{servers}", False, False),
        "auth, 1 key": (f"gateway:\n  auth:\n    keys:\n{one}{servers}", True, False),
        "auth, 1,001 keys": (f"gateway:\n  auth:\n    keys:\n{one}{many}{servers}", True, False),
        "auth, 1 key with an allowlist": (f"gateway:\n  auth:\n    keys:\n{allow}{servers}", True, False),
        "TLS, no auth": (f"gateway:\n{tls}{servers}", False, True),
    }, ca


def run(binary: str, config: Path, token: bool, tls: bool, ca: Path, calls: int) -> float:
    proc = subprocess.Popen([binary, "serve", "--config", str(config), "--listen", "127.0.0.1:0",
                             "--wait-ready", "--log-level", "warn"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        port = int(re.search(r":(\d+)$", line.strip()).group(1))
        if tls:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                "127.0.0.1", port, context=ssl.create_default_context(cafile=str(ca)))
        else:
            conn = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {TOKEN}"

        def call() -> None:
            conn.request("POST", "/v1/batch", BODY, headers)
            resp = conn.getresponse()
            data = resp.read()
            assert resp.status == 200 and b'"outcome":"ok"' in data, data[:200]

        for _ in range(200):
            call()
        start = gateway_cpu_ns(proc.pid)
        for _ in range(calls):
            call()
        return (gateway_cpu_ns(proc.pid) - start) / calls / 1000
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolbridge", default="build/toolbridge")
    ap.add_argument("--fixture", default="build/toolbridge-fixture")
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        table, ca = variants(d, str(Path(args.fixture).resolve()))
        results: dict[str, list[float]] = {name: [] for name in table}
        for _ in range(args.rounds):
            for i, (name, (text, token, tls)) in enumerate(table.items()):
                config = d / f"v{i}.yaml"
                config.write_text(text)
                results[name].append(run(str(Path(args.toolbridge).resolve()), config, token, tls, ca, args.calls))
    print(f"{'variant':32} {'gateway CPU µs/call, rounds':>30} {'mean':>6}")
    for name, values in results.items():
        rounds = " / ".join(f"{v:.1f}" for v in values)
        print(f"{name:32} {rounds:>30} {sum(values) / len(values):6.1f}")


if __name__ == "__main__":
    main()
