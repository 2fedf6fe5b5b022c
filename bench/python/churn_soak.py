"""Churn soak: one gateway, W agents that open an MCP session, call `fixture__echo` K times under
trajectory names never seen before, and delete the session, over and over at a paced rate. Prints
a Markdown table with one row per minute (calls, sessions, errors, rate, the gateway's RSS and CPU,
the call log's gauges) and a verdict: the gateway's RSS at the end may exceed its RSS at minute 2
(--short: at 30 s) by at most 10 MiB, with no failed call. Exit status 0 on pass, 1 on fail.

Usage: .venv/bin/python bench/python/churn_soak.py [--short] [--minutes M] [--rate N] [--build DIR]
(TOOLBRIDGE_BUILD_DIR or --build selects the binaries; default build/.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

VERSION = "2025-06-18"
SAMPLE_EVERY = 10.0  # seconds between RSS samples
SLACK_MIB = 10.0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=10.0, help="length of the soak (default 10)")
    p.add_argument("--rate", type=float, default=500.0, help="tools/call per second in all (default 500)")
    p.add_argument("--workers", type=int, default=32, help="concurrent agents, one connection each (default 32)")
    p.add_argument("--calls-per-session", type=int, default=50, help="calls before a session is deleted (default 50)")
    p.add_argument("--calls-per-trajectory", type=int, default=1,
                   help="calls under one trajectory name, within a session (default 1: every call a new one)")
    p.add_argument("--short", action="store_true", help="1 minute at 200 calls/s (CI-sized)")
    p.add_argument("--build", default=os.environ.get("TOOLBRIDGE_BUILD_DIR", str(ROOT / "build")))
    args = p.parse_args()
    if args.short:
        args.minutes, args.rate = 1.0, 200.0
    return args


ARGS = parse_args()
os.environ["TOOLBRIDGE_BUILD_DIR"] = str(Path(ARGS.build).resolve())

from tb_support import Gateway, fixture_server, headers_for, initialize_params, parse_body, rpc  # noqa: E402


# ---- pacing and counting -----------------------------------------------------------------------

class Pace:
    """A token bucket shared by all workers: one token per call, `rate` tokens a second, a burst
    of at most 0.1 s worth, so a stall is not made up by a flood afterwards."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self.burst = 0.1
        self.next_due = time.monotonic()

    async def take(self) -> None:
        now = time.monotonic()
        due = max(self.next_due, now - self.burst)
        self.next_due = due + self.interval
        if due > now:
            await asyncio.sleep(due - now)


@dataclass
class Tally:
    calls: int = 0
    sessions: int = 0
    errors: int = 0
    kinds: Counter = field(default_factory=Counter)

    def fail(self, what: str) -> None:
        self.errors += 1
        self.kinds[what[:160]] += 1


# ---- one agent ---------------------------------------------------------------------------------

async def open_session(client: httpx.AsyncClient, url: str, tally: Tally) -> str | None:
    body = json.dumps(rpc("initialize", initialize_params(VERSION, "churn-soak"), 0))
    r = await client.post(url, content=body, headers=headers_for(None, None))
    if r.status_code != 200:
        tally.fail(f"initialize: HTTP {r.status_code} {r.text[:80]!r}")
        return None
    answer = next((m for m in parse_body(r) if isinstance(m, dict) and m.get("id") == 0), {})
    session_id = r.headers.get("mcp-session-id")
    if "result" not in answer or not session_id:
        tally.fail(f"initialize: {json.dumps(answer)[:120]}")
        return None
    tally.sessions += 1
    r = await client.post(url, content=json.dumps(rpc("notifications/initialized")),
                          headers=headers_for(session_id, VERSION))
    if r.status_code != 202:
        tally.fail(f"notifications/initialized: HTTP {r.status_code}")
    return session_id


async def call_echo(client: httpx.AsyncClient, url: str, session_id: str, trajectory: str, req_id: int,
                    tally: Tally) -> bool:
    """One tools/call; False if the session is gone (initialize again)."""
    params = {"name": "fixture__echo", "arguments": {"text": trajectory},
              "_meta": {"toolbridge/session": trajectory}}
    r = await client.post(url, content=json.dumps(rpc("tools/call", params, req_id)),
                          headers=headers_for(session_id, VERSION))
    tally.calls += 1
    if r.status_code != 200:
        tally.fail(f"tools/call: HTTP {r.status_code} {r.text[:80]!r}")
        return r.status_code != 404
    answer = next((m for m in parse_body(r) if isinstance(m, dict) and m.get("id") == req_id), {})
    if "error" in answer or "result" not in answer:
        tally.fail(f"tools/call: {json.dumps(answer.get('error', answer))[:120]}")
    elif answer["result"].get("isError"):
        tally.fail(f"tools/call isError: {json.dumps(answer['result'])[:120]}")
    return True


async def agent(worker: int, url: str, pace: Pace, stop: asyncio.Event, tally: Tally) -> None:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    trajectory_no = 0
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        while not stop.is_set():
            try:
                session_id = await open_session(client, url, tally)
            except httpx.HTTPError as e:
                tally.fail(f"initialize: {type(e).__name__}: {e}")
                session_id = None
            if session_id is None:
                await asyncio.sleep(0.2)
                continue
            alive = True
            for n in range(ARGS.calls_per_session):
                if stop.is_set() or not alive:
                    break
                if n % ARGS.calls_per_trajectory == 0:
                    trajectory_no += 1
                await pace.take()
                try:
                    alive = await call_echo(client, url, session_id, f"soak-{worker}-{trajectory_no}", n + 1, tally)
                except httpx.HTTPError as e:
                    tally.calls += 1
                    tally.fail(f"tools/call: {type(e).__name__}: {e}")
            try:
                r = await client.delete(url, headers=headers_for(session_id, VERSION))
                if r.status_code != 200 and alive:
                    tally.fail(f"DELETE: HTTP {r.status_code}")
            except httpx.HTTPError as e:
                tally.fail(f"DELETE: {type(e).__name__}: {e}")


# ---- watching the gateway ----------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_text()
    rest = raw[raw.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / TICK  # utime + stime


def own_cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def gauge(text: str | None, name: str) -> str:
    if text is None:
        return "-"
    m = re.search(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.MULTILINE)
    return f"{float(m.group(1)):.0f}" if m else "-"


@dataclass
class Sample:
    at: float  # seconds since the soak began
    calls: int
    sessions: int
    errors: int
    rss: float
    cpu: float
    log_bytes: str
    log_trajectories: str


async def take_sample(gw: Gateway, client: httpx.AsyncClient, began: float, tally: Tally) -> Sample:
    try:
        r = await client.get(gw.base_url + "/metrics")
        text = r.text if r.status_code == 200 else None
    except httpx.HTTPError:
        text = None
    pid = gw.proc.pid
    return Sample(time.monotonic() - began, tally.calls, tally.sessions, tally.errors, rss_mib(pid),
                  cpu_seconds(pid), gauge(text, "toolbridge_call_log_bytes"),
                  gauge(text, "toolbridge_call_log_trajectories"))


async def soak(gw: Gateway) -> tuple[Sample, list[Sample], Tally, float]:
    tally = Tally()
    stop = asyncio.Event()
    pace = Pace(ARGS.rate)
    async with httpx.AsyncClient(timeout=10) as admin:
        began = time.monotonic()
        first = await take_sample(gw, admin, began, tally)
        workers = [asyncio.create_task(agent(w, gw.mcp_url, pace, stop, tally)) for w in range(ARGS.workers)]
        samples: list[Sample] = []
        total = ARGS.minutes * 60
        k = 1
        while k * SAMPLE_EVERY <= total + 1e-9:
            await asyncio.sleep(max(0.0, began + k * SAMPLE_EVERY - time.monotonic()))
            if gw.proc.poll() is not None:
                break
            samples.append(await take_sample(gw, admin, began, tally))
            print(f"{samples[-1].at:6.0f} s: {tally.calls} calls, {tally.sessions} sessions, "
                  f"{tally.errors} errors, RSS {samples[-1].rss:.1f} MiB", file=sys.stderr)
            k += 1
        elapsed = time.monotonic() - began
        stop.set()
        done = await asyncio.gather(*workers, return_exceptions=True)
        for d in done:
            if isinstance(d, BaseException):
                tally.fail(f"worker crashed: {type(d).__name__}: {d}")
    return first, samples, tally, elapsed


# ---- the run -----------------------------------------------------------------------------------

def main() -> int:
    load_before = os.getloadavg()
    cpu_before = own_cpu()
    workdir = Path(tempfile.mkdtemp(prefix="toolbridge-churn-soak-"))
    gw = Gateway(workdir, {"fixture": fixture_server()})
    gw.start()
    try:
        gw.wait_ready(["fixture"], timeout=60)
        first, samples, tally, elapsed = asyncio.run(soak(gw))
        alive = gw.proc.poll() is None
    finally:
        gw.close(check=False)
    bench_cpu = own_cpu() - cpu_before
    load_after = os.getloadavg()

    print(f"Churn soak: {ARGS.workers} workers, {ARGS.calls_per_session} calls per session, "
          f"{ARGS.calls_per_trajectory} per trajectory, target {ARGS.rate:.0f} calls/s for "
          f"{ARGS.minutes:g} min; gateway RSS at start {first.rss:.1f} MiB.\n")
    print("| minute | calls | sessions | errors | calls/s | gw RSS MiB | gw CPU s | call log bytes | call log trajectories |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    per_minute = int(60 / SAMPLE_EVERY)
    prev = first
    rows = [s for i, s in enumerate(samples, 1) if i % per_minute == 0]
    if samples and (not rows or rows[-1] is not samples[-1]):
        rows.append(samples[-1])  # a run that ends between two minutes
    for s in rows:
        rate = (s.calls - prev.calls) / (s.at - prev.at)
        minute = f"{s.at / 60:.1f}".removesuffix(".0")
        print(f"| {minute} | {s.calls} | {s.sessions} | {s.errors} | {rate:.0f} | {s.rss:.1f} | "
              f"{s.cpu - prev.cpu:.1f} | {s.log_bytes} | {s.log_trajectories} |")
        prev = s
    print("\nRSS MiB every 10 s: " + ", ".join(f"{s.rss:.1f}" for s in samples))

    mark = 30.0 if ARGS.short else 120.0
    at_mark = next((s for s in samples if s.at >= mark - 1.0), None)
    end = samples[-1] if samples else None
    problems = []
    if not alive:
        problems.append("the gateway exited during the soak")
    elif gw.returncode != 0:
        problems.append(f"the gateway exited with {gw.returncode} after SIGTERM")
    if tally.errors:
        problems.append(f"{tally.errors} errors")
    if at_mark is None or end is None or end.at < mark:
        problems.append("the soak ended before the reference sample")
        growth = slope = float("nan")
    else:
        growth = end.rss - at_mark.rss
        slope = growth / ((end.at - at_mark.at) / 60) if end.at > at_mark.at else 0.0
        if growth > SLACK_MIB:
            problems.append(f"RSS grew {growth:.1f} MiB (limit {SLACK_MIB:.0f})")
    ref = "30 s" if ARGS.short else "minute 2"
    end_rss = end.rss if end else float("nan")
    mark_rss = at_mark.rss if at_mark else float("nan")
    print(f"\nVerdict: RSS at the end {end_rss:.1f} MiB − at {ref} {mark_rss:.1f} MiB = {growth:+.1f} MiB "
          f"({slope:+.2f} MiB/min; limit +{SLACK_MIB:.0f}), "
          f"{tally.calls} calls in {elapsed:.0f} s ({tally.calls / elapsed:.0f}/s), {tally.sessions} sessions, "
          f"{tally.errors} errors: {'FAIL — ' + '; '.join(problems) if problems else 'pass'}.")
    print(f"Machine: load average {load_before[0]:.2f} at start, {load_after[0]:.2f} at the end "
          f"({os.cpu_count()} CPUs); the bench's own CPU {bench_cpu:.1f} s.")
    for what, n in tally.kinds.most_common(5):
        print(f"error ×{n}: {what}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
