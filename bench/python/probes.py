"""Hostile-input soak: every probe of the hardening issue, run one after another against ONE
gateway while a bystander agent keeps calling a tool. Prints a Markdown table: what each probe
sent, what it got back, whether the gateway stayed up and healthy, the bystander's latency during
the probe as a ratio to its own baseline, the gateway's resident memory after the probe settled,
and the gateway's descendant processes (nothing may be left behind).

Usage: .venv/bin/python bench/python/probes.py [--short] [--build DIR]
(TOOLBRIDGE_BUILD_DIR or --build selects the binaries; default build/.)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

ROGUE = str(ROOT / "tests" / "integration" / "rogue_server.py")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--short", action="store_true", help="smaller floods (CI-sized)")
    p.add_argument("--build", default=os.environ.get("TOOLBRIDGE_BUILD_DIR", str(ROOT / "build")))
    return p.parse_args()


ARGS = parse_args()
os.environ["TOOLBRIDGE_BUILD_DIR"] = str(Path(ARGS.build).resolve())
SCALE = 0.1 if ARGS.short else 1.0

from tb_support import (Gateway, RawSession, descendants, fixture_bin, fixture_server,  # noqa: E402
                        initialize_params, rpc)


def rogue(mode: str, *args: str, **extra) -> dict:
    return {"command": sys.executable, "args": [ROGUE, mode, *args], **extra}


def setsid_server() -> dict:
    # A per_session server whose process starts a grandchild that leaves the process group.
    code = ("import os, subprocess, sys; "
            "subprocess.Popen([sys.executable, '-c', 'import os,time; os.setsid(); time.sleep(3600)',"
            " 'probe-setsid-orphan']); "
            f"os.execv({str(fixture_bin())!r}, [{str(fixture_bin())!r}])")
    return {"command": sys.executable, "args": ["-c", code], "policy": "per_session", "spares": 0}


SERVERS = {
    "bystander": fixture_server(),  # the bystander's own server: what it measures is the gateway
    "fixture": fixture_server(call_timeout="10s", max_in_flight=64),
    "big": fixture_server(max_line_bytes="32MiB"),
    "initff": rogue("init-error-ff", startup_timeout="10s"),
    "pingff": rogue("ping-error-ff", call_timeout="300ms"),
    "deep": rogue("deep-schema", "15"),
    "latin": rogue("latin1"),
    "surrogate": rogue("lone-surrogate"),
    "huge": rogue("huge-number"),
    "flood": rogue("list-changed", str(int(20000 * SCALE))),
    "garbage": rogue("garbage", str(int(100000 * SCALE))),
    "stderr": rogue("stderr", str(int(100000 * SCALE))),
    "deaf": rogue("deaf", max_write_queue_bytes="1MiB", call_timeout="2s"),
    "sampling": rogue("sampling", call_timeout="2s", server_request_timeout="1s"),
    "session": setsid_server(),
}
GATEWAY = {"max_connections": 6000, "max_connections_per_client": 6000, "write_timeout": "3s",
           "idle_timeout": "10s", "max_sessions": 2000, "max_sessions_per_client": 1000}


# ---- the bystander -----------------------------------------------------------------------------

class Bystander(threading.Thread):
    """An agent that calls fixture__echo back to back on its own session and connection."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.samples: list[tuple[float, float, bool]] = []  # (when, seconds, ok)
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        session = RawSession(self.url).initialize()
        n = 0
        while not self.stop.is_set():
            n += 1
            began = time.monotonic()
            try:
                answer = session.call_tool("bystander__echo", {"text": "x"}, n)
                ok = "result" in answer and not answer["result"].get("isError")
                if not ok:
                    self.errors.append(json.dumps(answer)[:200])
            except Exception as e:  # noqa: BLE001 - a failed call is a sample too
                ok = False
                self.errors.append(f"{type(e).__name__}: {e}"[:200])
                time.sleep(0.05)
            self.samples.append((began, time.monotonic() - began, ok))
            time.sleep(0.005)
        session.close()

    def window(self, start: float, end: float) -> tuple[float | None, int, int]:
        inside = [(s, ok) for (t, s, ok) in list(self.samples) if start <= t <= end]
        good = [s for s, ok in inside if ok]
        p50 = statistics.median(good) if good else None
        return p50, len(inside), sum(1 for _, ok in inside if not ok)


# ---- probes: each returns what the attacker saw, in a few words -------------------------------

def raw_post(gw: Gateway, body: bytes, headers: dict | None = None, path: str = "/mcp") -> httpx.Response:
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    return httpx.post(gw.base_url + path, content=body, headers=h, timeout=30)


def probe_malformed_batches(gw: Gateway) -> str:
    bodies = [b"[]", b"[", b"[1,2", b'[{"jsonrpc":"2.0",', b"[" * 650 + b"]" * 650]
    return "HTTP " + ",".join(str(raw_post(gw, b).status_code) for b in bodies)


def probe_deep_arguments(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    out = []
    for depth in (40, 200):
        value: object = "leaf"
        for _ in range(depth):
            value = [value]
        answer = s.call_tool("fixture__echo", {"text": "x", "deep": value}, depth)
        out.append(str(answer.get("error", {}).get("code", "ok")))
    s.close()
    return "depth 40/200: " + "/".join(out)


def probe_bad_bytes_from_client(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    r = s.client.post(gw.mcp_url, content=b'{"jsonrpc":"2.0","id":"\xff","method":"x\xff"}',
                      headers={"Content-Type": "application/json",
                               "Accept": "application/json, text/event-stream",
                               "Mcp-Session-Id": s.session_id})
    s.close()
    echoed = b"\xff" in r.content
    return f"HTTP {r.status_code}, raw 0xff echoed: {echoed}"


def probe_server_bytes(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    tools = {t["name"] for t in s.request("tools/list", {}, 1)["result"]["tools"]}
    listed = [n for n in ("deep", "latin", "surrogate", "huge") if f"{n}__echo" in tools]
    hung = s.call_tool("pingff__hang", {}, 2)
    time.sleep(1.0)
    back = s.call_tool("pingff__echo", {"text": "back"}, 3)
    s.close()
    health = gw.health()["servers"]["initff"]
    return (f"listed {len(listed)}/4 odd servers; initff {health.get('state')}; "
            f"ping-error timeout→{'recovered' if 'result' in back else 'not recovered'}"
            f"{'' if 'result' in hung or 'error' in hung else '?'}")


def probe_list_changed_flood(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    answer = s.call_tool("flood__echo", {"text": "x"}, 1)
    time.sleep(1.0)
    relists = s.call_tool("flood__list_calls", {}, 2)
    s.close()
    text = relists.get("result", {}).get("content", [{}])[0].get("text", "?")
    return f"{int(20000 * SCALE)} notifications: call {'ok' if 'result' in answer else 'failed'}, re-lists {text}"


def probe_log_floods(gw: Gateway) -> str:
    before = gw.stderr_path.stat().st_size
    s = RawSession(gw.mcp_url).initialize()
    s.call_tool("garbage__echo", {"text": "x"}, 1)
    s.call_tool("stderr__echo", {"text": "x"}, 2)
    s.close()
    time.sleep(1.0)
    grown = gw.stderr_path.stat().st_size - before
    return f"{int(200000 * SCALE)} garbage+stderr lines → {grown / 1024:.0f} KiB of log"


def probe_deaf_server(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    s.call_tool("deaf__echo", {"text": "x"}, 1)  # the listing is done: it stops reading now
    codes = {}
    for i in range(40):
        answer = s.call_tool("deaf__echo", {"text": "y" * 100_000}, 10 + i)
        code = answer.get("error", {}).get("code") or ("isError" if answer.get("result", {}).get("isError") else "ok")
        codes[code] = codes.get(code, 0) + 1
    s.close()
    return "40 × 100 kB to a server that stopped reading: " + ", ".join(f"{k}×{v}" for k, v in codes.items())


def probe_unanswered_sampling(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    outcomes = []
    for i in range(20):
        r = s.post(rpc("tools/call", {"name": "sampling__echo", "arguments": {}}, 100 + i))
        outcomes.append(r.status_code)
    s.close()
    return f"20 sampling requests never answered: HTTP {sorted(set(outcomes))}"


def probe_slow_readers(gw: Gateway) -> str:
    socks = []
    body = json.dumps(rpc("tools/call", {"name": "big__payload", "arguments": {"bytes": 20_000_000}}, 1))
    for _ in range(10):
        s = RawSession(gw.mcp_url).initialize()
        sock = socket.create_connection(("127.0.0.1", gw.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {s.session_id}\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
        socks.append((sock, s))
    time.sleep(6.0)  # past write_timeout (3 s): the gateway drops them
    for sock, s in socks:
        sock.close()
        s.close()
    return "10 clients never read a 20 MB answer"


def probe_disconnects_mid_call(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    socks = []
    for i in range(100):
        body = json.dumps(rpc("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 8000}}, i))
        sock = socket.create_connection(("127.0.0.1", gw.port))
        sock.sendall((f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {s.session_id}\r\n"
                      f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
        socks.append(sock)
    time.sleep(0.5)
    for sock in socks:
        sock.close()
    time.sleep(1.5)
    answer = s.call_tool("fixture__echo", {"text": "x"}, 999)  # max_in_flight is 64
    s.close()
    return f"100 callers hung up (max_in_flight 64): next call {'ok' if 'result' in answer else answer.get('error')}"


def probe_idle_connections(gw: Gateway, count: int) -> str:
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(("127.0.0.1", gw.port)))
        except OSError:
            break
    began = time.monotonic()
    ok = httpx.get(gw.base_url + "/healthz", timeout=10).status_code
    took = time.monotonic() - began
    for s in socks:
        s.close()
    return f"{len(socks)} idle connections: /healthz {ok} in {took * 1000:.0f} ms"


def probe_slowloris(gw: Gateway, count: int) -> str:
    socks = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", gw.port))
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(s)
        except OSError:
            break
    for _ in range(3):
        time.sleep(1.0)
        for s in socks:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                pass
    ok = httpx.get(gw.base_url + "/healthz", timeout=10).status_code
    for s in socks:
        s.close()
    return f"{len(socks)} slowloris connections: /healthz {ok}"


def probe_session_flood(gw: Gateway, count: int) -> str:
    client = httpx.Client(timeout=10)
    statuses: dict[int, int] = {}
    body = json.dumps(rpc("initialize", initialize_params("2025-06-18"), 1))
    for _ in range(count):
        r = client.post(gw.mcp_url, content=body, headers={"Content-Type": "application/json",
                                                           "Accept": "application/json, text/event-stream"})
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
    client.close()
    other = RawSession(gw.mcp_url).initialize()  # another agent still gets in
    fine = "result" in other.call_tool("fixture__echo", {"text": "x"}, 1)
    other.close()
    return f"{count} sessions from one client: {statuses}; another agent {'served' if fine else 'refused'}"


def probe_trajectory_names(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    codes = []
    for name in ("../../tmp/x", "--config=/etc/shadow", "a\u0000b", "${session.dir}"):
        answer = s.request("tools/call", {"name": "session__echo", "arguments": {"text": "x"},
                                          "_meta": {"toolbridge/session": name}}, 1)
        codes.append(str(answer.get("error", {}).get("code", "ok")))
    s.close()
    return "../, --option, NUL, ${session.dir}: " + "/".join(codes)


def probe_foreign_release(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    owner = {"X-Toolbridge-Tenant": "owner"}
    s.client.headers.update(owner)
    s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"},
                             "_meta": {"toolbridge/session": "probe-owned"}}, 1)
    r = httpx.delete(gw.base_url + "/sessions/probe-owned", headers={"X-Toolbridge-Tenant": "thief"}, timeout=10)
    s.close()
    return f"DELETE of another client's trajectory: HTTP {r.status_code}"


def probe_rebinding(gw: Gateway) -> str:
    codes = [httpx.get(gw.base_url + p, headers={"Host": "evil.example:80"}, timeout=10).status_code
             for p in ("/healthz", "/metrics", "/sessions")]
    return f"Host: evil.example on /healthz,/metrics,/sessions: {codes}"


def probe_setsid_grandchild(gw: Gateway) -> str:
    s = RawSession(gw.mcp_url).initialize()
    s.request("tools/call", {"name": "session__echo", "arguments": {"text": "x"},
                             "_meta": {"toolbridge/session": "probe-setsid"}}, 1)
    time.sleep(0.5)
    started = orphans()
    s.request("toolbridge/release", {"session": "probe-setsid"}, 2)
    deadline = time.monotonic() + 10
    while orphans() and time.monotonic() < deadline:
        time.sleep(0.2)
    s.close()
    return f"setsid() grandchild: {len(started)} started, {len(orphans())} left after release"


def orphans() -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if b"probe-setsid-orphan" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(int(pid))
        except OSError:
            pass
    return out


def probe_configs(workdir: Path) -> str:
    exe = str(Path(ARGS.build) / "toolbridge")
    cases = {
        "env": "servers:\n  a:\n    command: /bin/cat\n    env: {X: \"${env:PROBE_UNSET_VAR}\"}\n",
        "duration": "servers:\n  a:\n    command: /bin/cat\n    call_timeout: 2562048h\n",
        "alias bomb": "a: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(7)),
        "self alias": "a: &a [*a]\n",
        "missing command": "servers:\n  a:\n    command: /nonexistent/probe-server\n",
    }
    out = []
    for what, text in cases.items():
        f = workdir / f"probe-{what.replace(' ', '-')}.yaml"
        f.write_text(text)
        began = time.monotonic()
        r = subprocess.run([exe, "check-config", str(f)], capture_output=True, timeout=60)
        out.append(f"{what}: exit {r.returncode} in {time.monotonic() - began:.1f} s")
    return "; ".join(out)


# ---- the run -----------------------------------------------------------------------------------

def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    # The connection floods need descriptors: raise our own soft limit to the hard one.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = Path(tempfile.mkdtemp(prefix="toolbridge-probes-"))
    gw = Gateway(workdir, SERVERS, GATEWAY)
    gw.start()
    failures = 0
    rows = []
    bystander: Bystander | None = None
    try:
        gw.wait_ready([n for n in SERVERS if n not in ("initff", "session")], timeout=60)
        bystander = Bystander(gw.mcp_url)
        bystander.start()
        time.sleep(3.0)
        base_p50, _, _ = bystander.window(time.monotonic() - 2.5, time.monotonic())
        base_rss = rss_mib(gw.proc.pid)
        base_procs = len(gw.descendants())
        probes = [
            ("malformed batches (`[]`, `[`, `[1,2`, `[{…`, 650 deep)", lambda: probe_malformed_batches(gw)),
            ("arguments nested 40 and 200 deep", lambda: probe_deep_arguments(gw)),
            ("invalid UTF-8 in a method and an id", lambda: probe_bad_bytes_from_client(gw)),
            ("servers: \\xff in initialize/ping errors, 15-deep schema, Latin-1, lone surrogate, 1e999",
             lambda: probe_server_bytes(gw)),
            ("`tools/list_changed` flood", lambda: probe_list_changed_flood(gw)),
            ("garbage stdout and stderr floods", lambda: probe_log_floods(gw)),
            ("a server that stops reading its stdin", lambda: probe_deaf_server(gw)),
            ("sampling requests the agent never answers", lambda: probe_unanswered_sampling(gw)),
            ("clients that never read a 20 MB answer", lambda: probe_slow_readers(gw)),
            ("callers that hang up mid-call", lambda: probe_disconnects_mid_call(gw)),
            ("idle connections", lambda: probe_idle_connections(gw, int(5000 * SCALE))),
            ("idle connections, again (what the first flood left is reused, not added to)",
             lambda: probe_idle_connections(gw, int(5000 * SCALE))),
            ("slowloris connections", lambda: probe_slowloris(gw, int(1000 * SCALE))),
            ("sessions from one client", lambda: probe_session_flood(gw, int(3000 * SCALE))),
            ("trajectory names as paths, options, NUL, `${…}`", lambda: probe_trajectory_names(gw)),
            ("releasing another client's trajectory", lambda: probe_foreign_release(gw)),
            ("DNS rebinding (foreign Host) on admin endpoints", lambda: probe_rebinding(gw)),
            ("a grandchild that calls `setsid()`", lambda: probe_setsid_grandchild(gw)),
            ("hostile configs through `check-config`", lambda: probe_configs(workdir)),
        ]
        for name, probe in probes:
            began = time.monotonic()
            try:
                saw = probe()
            except Exception as e:  # noqa: BLE001 - a probe that breaks is a row too
                saw = f"probe failed: {type(e).__name__}: {e}"[:160]
                failures += 1
            ended = time.monotonic()
            time.sleep(1.0)  # settle
            alive = gw.proc.poll() is None
            try:
                healthy = httpx.get(gw.base_url + "/healthz", timeout=10).status_code == 200
            except httpx.HTTPError:
                healthy = False
            p50, calls, errors = bystander.window(began, ended + 1.0)
            ratio = f"{p50 / base_p50:.1f}×" if p50 and base_p50 else "–"
            procs = len(gw.descendants()) if alive else -1
            rss = rss_mib(gw.proc.pid) if alive else 0.0
            if not alive or not healthy:
                failures += 1
            rows.append((name, saw, "yes" if alive else "**no**", "ok" if healthy else "**no**",
                         f"{ratio} ({calls} calls, {errors} failed)", f"{rss:.0f}", f"{procs}"))
            print(f"probe done: {name}", file=sys.stderr)
        bystander.stop.set()
        bystander.join(timeout=10)
        print(f"Baseline: bystander p50 {base_p50 * 1000:.2f} ms, gateway RSS {base_rss:.0f} MiB, "
              f"{base_procs} descendant processes; load average {os.getloadavg()[0]:.1f}.\n")
        print("| probe | what the prober saw | gateway up | /healthz | bystander p50 vs baseline | RSS MiB after | descendants after |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for row in rows:
            print("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
    finally:
        gw.close(check=False)
    left = orphans()
    for e in sorted(set(bystander.errors if bystander else []))[:5]:
        print(f"bystander error: {e}", file=sys.stderr)
    print(f"\nAfter the gateway stopped: {len(left)} stray probe processes.")
    return 1 if failures or left else 0


if __name__ == "__main__":
    sys.exit(main())
