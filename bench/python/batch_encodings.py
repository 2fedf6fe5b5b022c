"""POST /v1/batch in JSON against MessagePack: client CPU (encode + request + decode, this
process) and gateway CPU (its /proc/PID/stat) per request, for a small result (fixture echo) and
a 1 MB one (fixture payload), one call per request and batches of 8, sequential requests on one
kept-alive connection. Prints a table.

    python bench/python/batch_encodings.py --toolbridge build/toolbridge --fixture build/toolbridge-fixture

Needs the `msgpack` package (python/requirements-dev.txt)."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import toolbridge  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def run(conn: http.client.HTTPConnection, pid: int, encoding: str, calls: list, n: int) -> tuple[float, float, float]:
    body = {"calls": calls}
    if encoding == "json":
        headers = {"Content-Type": "application/json"}

        def once():
            conn.request("POST", "/v1/batch", json.dumps(body).encode(), headers)
            out = json.loads(conn.getresponse().read())
            assert all(r["outcome"] == "ok" for r in out["results"])
    else:
        headers = {"Content-Type": "application/msgpack"}

        def once():
            conn.request("POST", "/v1/batch", msgpack.packb(body), headers)
            out = msgpack.unpackb(conn.getresponse().read())
            assert all(r["outcome"] == "ok" for r in out["results"])

    for _ in range(5):
        once()
    c0, g0, t0 = own_cpu(), proc_cpu(pid), time.perf_counter()
    for _ in range(n):
        once()
    c1, g1, t1 = own_cpu(), proc_cpu(pid), time.perf_counter()
    return (c1 - c0) / n * 1e6, (g1 - g0) / n * 1e6, (t1 - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--toolbridge", default="build/toolbridge")
    ap.add_argument("--fixture", default="build/toolbridge-fixture")
    ap.add_argument("--small", type=int, default=2000, help="requests per small-result row")
    ap.add_argument("--large", type=int, default=200, help="requests per 1 MB row")
    args = ap.parse_args()
    echo = {"tool": "fixture__echo", "arguments": {"text": "hello"}}
    mb = {"tool": "fixture__payload", "arguments": {"bytes": 1 << 20}}
    cases = [("small result, 1 call", [echo], args.small), ("small results, 8 calls", [echo] * 8, args.small // 4),
             ("1 MB result, 1 call", [mb], args.large), ("1 MB results, 8 calls", [mb] * 8, args.large // 8)]
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "servers.yaml"
        cfg.write_text(f"gateway:\n  max_body_bytes: 64MiB\nservers:\n  fixture:\n    command: {Path(args.fixture).resolve()}\n")
        with toolbridge.Gateway(cfg, binary=str(Path(args.toolbridge).resolve())) as gw:
            conn = http.client.HTTPConnection(gw.host, gw.port)
            rows = []
            for name, calls, n in cases:
                for encoding in ("json", "msgpack"):
                    rows.append((name, encoding, *run(conn, gw.process.pid, encoding, calls, n)))
    print(f"{'case':24} {'encoding':9} {'client CPU µs/req':>18} {'gateway CPU µs/req':>19} {'latency µs/req':>15}")
    for name, enc, client, gateway, lat in rows:
        print(f"{name:24} {enc:9} {client:18.0f} {gateway:19.0f} {lat:15.0f}")


if __name__ == "__main__":
    main()
