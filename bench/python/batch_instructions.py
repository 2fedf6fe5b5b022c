"""The gateway's user-space instructions per call in POST /v1/batch, proxied to the fixture and
answered from the memory cache: 4 clients post batches of 16 identical `fixture__lookup` calls
(the workload of `toolbridge-bench cache`'s batch rows), and `perf stat -e instructions:u` counts
the gateway while an exact number of batches runs. Instructions, unlike CPU time, hardly move
with the machine's load, so two builds compare within about 1 %. Prints a table.

    python bench/python/batch_instructions.py --build build [--build OTHER_BUILD] [--batches 1200]

Needs `perf` (Debian's linux-perf, installed by scripts/setup) and httpx (.venv)."""

from __future__ import annotations

import argparse
import json
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import httpx

CLIENTS = 4
CALLS_PER_BATCH = 16


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config(build: Path, port: int, cached: bool) -> str:
    text = f"gateway:\n  listen: 127.0.0.1:{port}\n"
    if cached:
        text += "  cache: {}\n"
    text += f"servers:\n  fixture:\n    command: {build / 'toolbridge-fixture'}\n    call_timeout: 120s\n"
    if cached:
        text += "    cache: {tools: [lookup], ttl: 1h, tier: memory}\n"
    return text


def post_batches(url: str, body: str, total: int) -> None:
    def worker(count: int) -> None:
        with httpx.Client() as client:
            for _ in range(count):
                r = client.post(url, content=body, headers={"Content-Type": "application/json"})
                if r.status_code != 200:
                    raise RuntimeError(f"{r.status_code}: {r.text[:200]}")

    threads = [threading.Thread(target=worker, args=(total // CLIENTS,)) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def instructions_per_call(build: Path, cached: bool, batches: int) -> float:
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "config.yaml"
        cfg.write_text(config(build, port, cached))
        gateway = subprocess.Popen(
            [str(build / "toolbridge"), "serve", "-c", str(cfg), "--wait-ready", "--log-level", "error"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            gateway.stdout.readline()  # ready
            url = f"http://127.0.0.1:{port}/v1/batch"
            call = {"tool": "fixture__lookup", "arguments": {"query": "cpu", "delay_ms": 0}}
            body = json.dumps({"calls": [call] * CALLS_PER_BATCH})
            post_batches(url, body, 200)  # warm up (and fill the cache)
            perf = subprocess.Popen(["perf", "stat", "-x,", "-e", "instructions:u", "-p", str(gateway.pid)],
                                    stderr=subprocess.PIPE, text=True)
            time.sleep(0.3)
            done = batches // CLIENTS * CLIENTS
            post_batches(url, body, done)
            time.sleep(0.2)
            perf.send_signal(signal.SIGINT)
            err = perf.communicate()[1]
            counted = [line for line in err.splitlines() if "instructions" in line]
            if not counted or not counted[0].split(",")[0].isdigit():
                raise RuntimeError(f"perf stat counted nothing: {err.strip()[:300]}")
            return int(counted[0].split(",")[0]) / (done * CALLS_PER_BATCH)
        finally:
            gateway.send_signal(signal.SIGTERM)
            gateway.wait(timeout=30)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", type=Path, required=True,
                    help="a build folder with toolbridge and toolbridge-fixture (repeatable)")
    ap.add_argument("--batches", type=int, default=1200, help="batches counted per row")
    args = ap.parse_args()
    print("| build | proxied instr/call | memory hit instr/call | hit ÷ proxied |")
    print("| --- | --- | --- | --- |")
    for build in args.build:
        proxied = instructions_per_call(build, False, args.batches)
        hit = instructions_per_call(build, True, args.batches)
        print(f"| {build} | {proxied:,.0f} | {hit:,.0f} | {hit / proxied:.2f} |")


if __name__ == "__main__":
    main()
