"""A whole evaluation, two ways, in one run: N tasks C at a time, each a multi-turn agent loop
(eval_agent.py) against simulated inference workers (tests/llm_worker, scripted agent mode) and
three simulated tool servers (eval_tools.py), through today's stack and through toolbridge, with
ablation rows (toolbridge with one feature turned off). Prints one table; `--json FILE` writes
it, `--table-json` prints it as JSON for `toolbridge-bench eval`.

    .venv/bin/python bench/python/eval_bench.py --short
    .venv/bin/python bench/python/eval_bench.py --tasks 64 --concurrency 32 --max-turns 40 --ablations

The rows run one after another on the same workers (their caches and counters reset between
rows); every row's processes are started for it and stopped after it. Not part of the product.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "llm_worker"))

import worker as llm_worker  # noqa: E402  (the scripted agent: what each turn wrote)
from eval_agent import canonical, digest  # noqa: E402
from eval_tools import TOOLS  # noqa: E402

# Deadlines per server (seconds, before --scale): a hung scrape passes its deadline; a sandbox
# call slowed by contention should not.
DEADLINES = {"search": 30.0, "scrape": 15.0, "sandbox": 300.0}


# ---- processes ----

def cpu_of(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of a live process; (nan, nan) if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan, math.nan
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def machine_ticks() -> tuple[int, int]:
    """(busy, all) CPU ticks of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return sum(v[:8]) - idle, sum(v[:8])


def children_of(pid: int) -> list[int]:
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class Proc:
    """A process this bench started: its own group, stopped (TERM, then KILL) and reaped."""

    def __init__(self, argv: list[str], ready: re.Pattern, timeout: float, stderr_path: str | None = None,
                 stdout_ready: bool = True):
        self.stderr_path = stderr_path
        err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                  start_new_session=True)
        self.match = None
        deadline = time.monotonic() + timeout
        lines = []
        while time.monotonic() < deadline:
            line = self.p.stdout.readline()
            if not line:
                break
            lines.append(line.decode(errors="replace"))
            self.match = ready.search(lines[-1])
            if self.match:
                break
        if not self.match:
            self.stop()
            raise RuntimeError(f"{argv[0]} {' '.join(argv[1:3])}: not ready within {timeout:.0f} s; said: "
                               f"{''.join(lines)[-300:]!r}{self.stderr_tail()}")
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for _ in self.p.stdout:
            pass

    def stderr_tail(self, n: int = 2000) -> str:
        if not self.stderr_path:
            return ""
        try:
            return "\n" + Path(self.stderr_path).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    @property
    def pid(self) -> int:
        return self.p.pid

    def stop(self, grace: float = 10.0) -> int | None:
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.p.wait()
        return self.p.returncode


def http_json(url: str, body: dict | None = None, timeout: float = 10.0):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        raw = r.read()
    return json.loads(raw) if raw else {}


# ---- the workload ----

def make_tasks(n: int, max_turns: int, min_turns: int, prefix: str = "t") -> list[dict]:
    """Task-dependent turn counts (log-normal around 40 % of max_turns), half hermes, half
    MiroFlow's use_mcp_tool."""
    tasks = []
    for i in range(n):
        rng = random.Random(f"eval-task/{i}")
        mid = max(min_turns, 0.4 * max_turns)
        turns = int(round(math.exp(rng.gauss(math.log(mid), 0.5))))
        tasks.append({"id": f"{prefix}{i:04d}", "turns": max(min_turns, min(max_turns, turns)),
                      "format": "hermes" if i % 2 == 0 else "use_mcp_tool"})
    return tasks


def tool_argv(a: argparse.Namespace, state_dir: str) -> list[str]:
    return [a.python, str(HERE / "eval_tools.py"), "--impl", a.tool_impl, "--scale", f"{a.scale:g}",
            "--state-dir", state_dir]


def deadline(a: argparse.Namespace, server: str) -> float:
    return max(DEADLINES[server] * a.scale, a.deadline_floor)


def ms(seconds: float) -> str:
    return f"{max(1, int(round(seconds * 1000)))}ms"


def gateway_yaml(a: argparse.Namespace, ports: list[int], state_dir: str, routing: str = "prefix_aware",
                 admission: bool = True, cache: bool = True, repair: bool = True) -> str:
    argv = tool_argv(a, state_dir)
    y = ["gateway:", "  log_level: warn", "  max_connections_per_client: 4096", "servers:"]
    for server in TOOLS:
        y += [f"  {server}:", f"    command: {json.dumps(argv[0])}",
              f"    args: {json.dumps(argv[1:] + ['--kind', server])}",
              "    policy: pool", f"    max_instances: {a.pool}",
              f"    call_timeout: {ms(deadline(a, server))}"]
        if not repair:
            y.append("    repair: 'off'")
        if server == "search" and cache:
            y.append("    cache: {tools: [web_search], ttl: 1h}")
        if server == "sandbox" and admission:
            y.append("    concurrency_limit: adaptive")
    y += ["models:", f"  {llm_worker_model()}:", f"    routing: {routing}", "    workers:"]
    y += [f"      - {{url: 'http://127.0.0.1:{p}', name: w{i}}}" for i, p in enumerate(ports)]
    return "\n".join(y) + "\n"


def llm_worker_model() -> str:
    return "sim-model"


# ---- one row ----

ROWS = {
    "today": "today's stack: sglang-router cache_aware, spawn per call (MCP SDK), regex parsing",
    "today-rr": "today's stack, model calls round robin from the client (no router)",
    "toolbridge": "toolbridge: prefix_aware router, POST /v1/parse execute, pools, adaptive sandbox, search cache",
    "tb-round-robin": "toolbridge, router round_robin",
    "tb-no-admission": "toolbridge, no concurrency limit on the sandbox",
    "tb-no-cache": "toolbridge, no result cache on search",
    "tb-no-repair": "toolbridge, repair off on every server",
    "tb-at-once": "toolbridge, --at-once trajectories all at once from this host (short turns, fast tools), "
                  "the agent loop in --agent-procs processes",
}


def at_once_load(a: argparse.Namespace) -> argparse.Namespace:
    """The load of the tb-at-once row: every trajectory at once, few turns, fast tools (deadlines
    no shorter than --at-once-deadline, so a hung page answers before its deadline)."""
    b = argparse.Namespace(**vars(a))
    b.tasks = b.concurrency = a.at_once
    b.max_turns, b.min_turns = a.at_once_turns, min(a.min_turns, a.at_once_turns)
    b.scale, b.deadline_floor, b.agent_procs = a.at_once_scale, a.at_once_deadline, a.agent_procs
    return b


def row_label(a: argparse.Namespace, name: str) -> str:
    return f"tb-{a.at_once}-at-once" if name == "tb-at-once" else name


class Bench:
    def __init__(self, a: argparse.Namespace):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="tb-eval-")
        self.workers: list[Proc] = []
        self.ports: list[int] = []
        self.tasks = make_tasks(a.tasks, a.max_turns, a.min_turns)
        self.at_once = at_once_load(a)
        self.at_once_tasks = make_tasks(self.at_once.tasks, self.at_once.max_turns, self.at_once.min_turns, "s")
        self.problems: list[str] = []
        self.findings: list[str] = []

    def start_workers(self) -> None:
        a = self.a
        for i in range(a.workers):
            argv = [a.python, str(REPO / "tests" / "llm_worker" / "worker.py"), "--port", "0", "--name", f"w{i}",
                    "--model", llm_worker_model(),
                    "--prefill-us-per-token", f"{200 * a.scale:g}", "--decode-ms-per-token", f"{20 * a.scale:g}",
                    "--max-running", str(a.worker_max_running), "--cache-tokens", str(a.cache_tokens), "--block", "16"]
            w = Proc(argv, re.compile(r"PORT (\d+)"), 30)
            self.workers.append(w)
            self.ports.append(int(w.match.group(1)))

    def worker_stats(self) -> list[dict]:
        return [http_json(f"http://127.0.0.1:{p}/stats") for p in self.ports]

    def reset_workers(self) -> None:
        for p in self.ports:
            http_json(f"http://127.0.0.1:{p}/reset", {})

    def workers_cpu(self) -> float:
        return sum(self.each_worker_cpu())

    def each_worker_cpu(self) -> list[float]:
        return [cpu_of(w.pid)[0] for w in self.workers]

    def stop(self) -> None:
        for w in self.workers:
            w.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # The agent loop of one row, in its own process(es): their CPU and their children's are theirs.
    # With procs > 1 the tasks are dealt out to that many processes, started together, each with
    # its share of the concurrency; the row's makespan runs from the first start to the last end.
    def run_agent(self, spec: dict, procs: int = 1) -> dict:
        procs = max(1, min(procs, len(spec["tasks"])))
        specs = [{**spec, "tasks": spec["tasks"][i::procs],
                  "concurrency": math.ceil(spec["concurrency"] / procs)} for i in range(procs)]
        ps = [subprocess.Popen([self.a.python, str(HERE / "eval_agent.py")], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
              for _ in specs]
        results: list = [None] * len(ps)

        def talk(i: int) -> None:
            try:
                results[i] = ps[i].communicate(json.dumps(specs[i]).encode(), timeout=self.a.row_timeout)
            except subprocess.TimeoutExpired:
                ps[i].kill()
                results[i] = ps[i].communicate()
        threads = [threading.Thread(target=talk, args=(i,)) for i in range(len(ps))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        outs = []
        for p, (out, err) in zip(ps, results):
            if p.returncode != 0:
                raise RuntimeError(f"eval_agent.py exited {p.returncode}: {err.decode(errors='replace')[-1500:]}")
            outs.append(json.loads(out))
        by_id = {t["id"]: t for o in outs for t in o["tasks"]}
        return {"makespan_s": max(o["t_end"] for o in outs) - min(o["t_start"] for o in outs),
                "agent_cpu_s": sum(o["agent_cpu_s"] for o in outs),
                "agent_max_cpu_s": max(o["agent_cpu_s"] for o in outs), "agent_procs": len(outs),
                "children_cpu_s": sum(o["children_cpu_s"] for o in outs),
                "spawned": sum(o["spawned"] for o in outs),
                "tasks": [by_id[t["id"]] for t in spec["tasks"]]}

    def spec(self, a: argparse.Namespace, tasks: list[dict], stack: str, llm_urls: list[str], state_dir: str,
             gateway_url: str = "") -> dict:
        return {"stack": stack, "llm_urls": llm_urls, "gateway_url": gateway_url, "tenant": "eval",
                "system_words": a.system_words, "max_turns": a.max_turns, "concurrency": a.concurrency,
                "tool_command": tool_argv(a, state_dir),
                "deadlines": {s: deadline(a, s) for s in DEADLINES}, "tasks": tasks}

    def row(self, name: str) -> dict:
        a, tasks, procs = (self.at_once, self.at_once_tasks, self.a.agent_procs) if name == "tb-at-once" else \
            (self.a, self.tasks, 1)
        state_dir = tempfile.mkdtemp(prefix=f"{name}-", dir=self.tmp)
        self.reset_workers()
        w_cpu0 = self.workers_cpu()
        each0 = self.each_worker_cpu()
        m0 = machine_ticks()
        row = {"row": row_label(self.a, name), "load": {"tasks": a.tasks, "concurrency": a.concurrency,
                                                          "max_turns": a.max_turns, "scale": a.scale}}
        if name.startswith("today"):
            router = None
            if name == "today":
                router = self.start_router()
                urls = [f"http://127.0.0.1:{router[1]}/v1"]
                self.reset_workers()
            else:
                urls = [f"http://127.0.0.1:{p}/v1" for p in self.ports]
            r_cpu0 = cpu_of(router[0].pid)[0] if router else math.nan
            try:
                out = self.run_agent(self.spec(a, tasks, "today", urls, state_dir))
            finally:
                r_cpu1 = cpu_of(router[0].pid)[0] if router else math.nan
                if router:
                    router[0].stop()
            row.update(router_cpu_s=r_cpu1 - r_cpu0, servers_cpu_s=out["children_cpu_s"],
                       spawned=out["spawned"])
        else:
            kw = {"tb-round-robin": {"routing": "round_robin"}, "tb-no-admission": {"admission": False},
                  "tb-no-cache": {"cache": False}, "tb-no-repair": {"repair": False}}.get(name, {})
            cfg = Path(self.tmp) / f"{name}.yaml"
            cfg.write_text(gateway_yaml(a, self.ports, state_dir, **kw))
            log = str(Path(self.tmp) / f"{name}.stderr")
            gw = Proc([self.a.toolbridge, "serve", "--config", str(cfg), "--listen", "127.0.0.1:0", "--wait-ready"],
                      re.compile(r"listening on (http://\S+)"), 60, stderr_path=log)
            base = gw.match.group(1).rstrip("/")
            seen: set[int] = set()
            stop_sampling = threading.Event()

            def sample() -> None:  # the tool server processes the gateway runs, over the row
                while not stop_sampling.is_set():
                    seen.update(c for c in children_of(gw.pid) if "eval_tools.py" in cmdline(c))
                    stop_sampling.wait(0.25)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            g0, _ = cpu_of(gw.pid)
            pools0 = sum(cpu_of(c)[0] for c in children_of(gw.pid) if "eval_tools.py" in cmdline(c))  # start-up
            try:
                out = self.run_agent(self.spec(a, tasks, "toolbridge", [f"{base}/v1"], state_dir, base), procs)
            finally:
                g1, gc1 = cpu_of(gw.pid)
                servers = sum(cpu_of(c)[0] for c in children_of(gw.pid) if "eval_tools.py" in cmdline(c))
                stop_sampling.set()
                sampler.join()
                rc = gw.stop()
                tail = gw.stderr_tail(4000).strip()
                if rc not in (0, None) or re.search(r"\b(error|critical)\b", tail, re.I):
                    self.findings.append(f"{name}: gateway exit {rc}; stderr tail:\n{tail[-1500:]}")
            row.update(router_cpu_s=g1 - g0, servers_cpu_s=servers + (gc1 if not math.isnan(gc1) else 0),
                       servers_run_cpu_s=servers - pools0, spawned=len(seen))
        stats = self.worker_stats()
        row.update(self.summarise(out, stats, tasks, a.max_turns))
        row["workers_cpu_s"] = self.workers_cpu() - w_cpu0
        m1 = machine_ticks()
        row["machine_busy"] = (m1[0] - m0[0]) / max(1, m1[1] - m0[1])  # every process's, ours or not
        row["worker_max_cpu_s"] = max((x - y for x, y in zip(self.each_worker_cpu(), each0)), default=0.0)
        row["at_once"] = name == "tb-at-once"
        row["agent_cpu_s"] = out["agent_cpu_s"]
        row["agent_max_cpu_s"] = out["agent_max_cpu_s"]
        row["agent_procs"] = out["agent_procs"]
        row["_out"] = out
        return row

    def start_router(self) -> tuple[Proc, int]:
        py = self.a.peers_python
        if not os.access(py, os.X_OK):
            raise RuntimeError(f"no {py}: sglang-router is installed in .venv-bench by scripts/setup")
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        argv = [py, "-m", "sglang_router.launch_router", "--host", "127.0.0.1", "--port", str(port),
                "--policy", "cache_aware", "--log-level", "warn",
                "--worker-urls", *[f"http://127.0.0.1:{p}" for p in self.ports]]
        log = str(Path(self.tmp) / "router.stderr")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=open(log + ".out", "wb"),
                             stderr=open(log, "wb"), start_new_session=True)
        proc = Proc.__new__(Proc)
        proc.p, proc.stderr_path, proc.match = p, log, None
        body = {"model": llm_worker_model(), "messages": [{"role": "user", "content": "ping"}], "max_tokens": 1}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # it registers its workers after it listens
            try:
                http_json(f"http://127.0.0.1:{port}/v1/chat/completions", body, timeout=5)
                return proc, port
            except Exception:  # noqa: BLE001 - not routing yet
                if p.poll() is not None:
                    break
                time.sleep(0.3)
        proc.stop()
        raise RuntimeError(f"sglang-router did not route within 60 s{proc.stderr_tail()}")

    # ---- what a row's records say ----

    def summarise(self, out: dict, stats: list[dict], script_tasks: list[dict], max_turns: int) -> dict:
        tasks = out["tasks"]
        by_id = {x["id"]: x for x in script_tasks}
        times = sorted(t["seconds"] for t in tasks)
        executed = sum(len(turn["executed"]) for t in tasks for turn in t["turns"])
        errors: dict[str, int] = {}
        lost = fenced_run = ended_early = repaired_ran = other_text = 0
        examples: list[str] = []
        for t in tasks:
            task = by_id[t["id"]]
            if len(t["turns"]) < min(task["turns"], max_turns) and not t["error"]:
                ended_early += 1
            for i, turn in enumerate(t["turns"]):
                for k, v in turn["errors"].items():
                    errors[k] = errors.get(k, 0) + v
                for text in turn.get("error_texts", ()):
                    if len(examples) < 12:
                        examples.append(f"{t['id']} turn {i}: {text}")
                script = llm_worker.script_turn(task["id"], i, task["turns"], task["format"])
                other_text += turn.get("model") != digest(script["text"])  # the model wrote its script
                written = [c for c in script["calls"] if not c["fenced"]]
                written_keys = {canonical(c["name"], c["arguments"]) for c in written}
                fenced_keys = {canonical(c["name"], c["arguments"]) for c in script["calls"] if c["fenced"]}
                ran = [e for e in turn["executed"] if e["key"] in written_keys]
                fenced_run += sum(1 for e in turn["executed"] if e["key"] in fenced_keys and e["key"] not in written_keys)
                lost += max(0, len(written) - len(ran) - turn["reported"])
                mistaken = {canonical(c["name"], c["arguments"]) for c in written if c["mistake"] in ("no_server", "wrong_case")}
                repaired_ran += sum(1 for e in ran if e["key"] in mistaken)
            if t["error"]:
                errors["task_failed"] = errors.get("task_failed", 0) + 1
        turns = sum(len(t["turns"]) for t in tasks)
        requests = sum(s["requests"] for s in stats)
        consistent = (requests == turns and sum(s.get("scripted", 0) for s in stats) == turns and
                      all(s["prompt_tokens"] == s["cached_tokens"] + s["computed_tokens"] for s in stats))
        return {"makespan_s": out["makespan_s"], "task_p50_s": pct(times, 50), "task_p99_s": pct(times, 99),
                "turns": turns, "worker_requests": requests, "workers_consistent": consistent,
                "uncached_tokens": sum(s["computed_tokens"] for s in stats),
                "prompt_tokens": sum(s["prompt_tokens"] for s in stats),
                "executed": executed, "lost": lost, "other_model_text": other_text,
                "fenced_run": fenced_run, "mistakes_ran": repaired_ran,
                "ended_early": ended_early, "deadline_hits": errors.get("timeout", 0),
                "errors": errors, "error_examples": examples, "failed_tasks": sum(1 for t in tasks if t["error"]),
                "first_task_error": next((t["error"] for t in tasks if t["error"]), "")}

    def compare(self, ref: dict, other: dict) -> dict:
        """Per task: both stacks made the same model turns, and every call the model wrote
        correctly (or with numbers as strings) ran in both with the same result; deadline hits
        are counted apart, by stack."""
        by_id = {t["id"]: t for t in ref["_out"]["tasks"]}
        differ, checked, deadline_ref, deadline_other, examples = 0, 0, 0, 0, []
        other_turns = 0
        for t in other["_out"]["tasks"]:
            r = by_id[t["id"]]
            task = next(x for x in self.tasks if x["id"] == t["id"])
            bad = len(t["turns"]) != len(r["turns"])
            if bad:
                other_turns += 1
                if len(examples) < 3:
                    examples.append(f"{t['id']}: {len(r['turns'])} turns in {ref['row']}, {len(t['turns'])} here")
            for i in range(min(len(t["turns"]), len(r["turns"]))):
                script = llm_worker.script_turn(task["id"], i, task["turns"], task["format"])
                ra = {e["key"]: e for e in r["turns"][i]["executed"]}
                ob = {e["key"]: e for e in t["turns"][i]["executed"]}
                for c in script["calls"]:
                    if c["fenced"] or c["mistake"] not in ("none", "num_string"):
                        continue
                    key = canonical(c["name"], c["arguments"])
                    checked += 1
                    x, y = ra.get(key), ob.get(key)
                    timed_out = False
                    if x and x["outcome"] == "timeout":
                        deadline_ref += 1
                        timed_out = True
                    if y and y["outcome"] == "timeout":
                        deadline_other += 1
                        timed_out = True
                    if timed_out:
                        continue
                    if not x or not y or x["outcome"] != y["outcome"] or x["text"] != y["text"]:
                        bad = True
                        if len(examples) < 3:
                            examples.append(f"{t['id']} turn {i} {key}: {x} vs {y}")
            differ += bad
        return {"tasks_differing": differ, "other_turns": other_turns, "checked_calls": checked,
                "deadline_ref": deadline_ref, "deadline_this": deadline_other, "examples": examples}


def limits_note(r: dict, a: argparse.Namespace) -> str:
    """What limited the tb-at-once row: each process's CPU as cores busy over the makespan (one
    process can keep at most one core busy with its event loop), and the machine's share."""
    span = r["makespan_s"] or math.nan
    cores = os.cpu_count() or 1
    agents = f"agents ({r['agent_procs']} process{'es' if r['agent_procs'] != 1 else ''})"
    parts = {"gateway": r["router_cpu_s"], agents: r["agent_cpu_s"],
             f"workers ({a.workers})": r["workers_cpu_s"],
             "tool servers": r.get("servers_run_cpu_s", r["servers_cpu_s"])}
    busy = {k: v / span for k, v in parts.items()}
    total = sum(v for v in busy.values() if v == v)
    machine = r["machine_busy"] * cores
    one_proc = {"gateway": r["router_cpu_s"] / span, "one agent process": r["agent_max_cpu_s"] / span,
                "one worker": r["worker_max_cpu_s"] / span}
    top = max(busy, key=lambda k: busy[k] if busy[k] == busy[k] else -1)
    hot = [k for k, v in one_proc.items() if v >= 0.85]
    if machine >= 0.85 * cores:
        verdict = (f"the machine's {cores} cores ({100 * r['machine_busy']:.0f} % busy: this run's processes "
                   f"{total:.2f} cores, the largest share {top}; other processes {max(0.0, machine - total):.2f})")
    elif hot:
        verdict = f"{', '.join(hot)} (a core busy)"
    else:
        verdict = "no CPU: the simulated model and tool time"
    shares = ", ".join(f"{k} {v:.2f}" for k, v in busy.items())
    singles = ", ".join(f"{k} {v:.2f}" for k, v in one_proc.items())
    return (f"{r['row']}: {r['load']['tasks']} trajectories at once, up to {r['load']['max_turns']} turns, scale "
            f"{r['load']['scale']:g}, through one gateway from this host; {r['turns']} turns and "
            f"{r['executed']} calls in {r['makespan_s']:.1f} s, {r['failed_tasks']} task(s) failed. Cores busy over "
            f"the makespan: {shares} (busiest single process: {singles}). Limited by: {verdict}.")


def pct(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return math.nan
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


COLUMNS = [("stack", 0), ("makespan s", 2), ("vs today", 2), ("task p50 s", 2), ("task p99 s", 2),
           ("model turns", 0), ("uncached prompt tokens", 0), ("tool calls executed", 0),
           ("spawned processes", 0), ("calls lost", 0), ("fenced calls run", 0), ("mistyped calls run", 0),
           ("tasks ended early", 0), ("deadline hits", 0), ("tool errors by kind", 0),
           ("tasks differing", 0), ("router/gw CPU ms/turn", 2), ("agent CPU s", 2),
           ("tool servers CPU s", 2), ("workers CPU s", 2)]


def table_rows(rows: list[dict]) -> list[list]:
    ref = rows[0]["makespan_s"] if rows and rows[0]["row"].startswith("today") else math.nan
    out = []
    for r in rows:
        errs = " ".join(f"{k}:{v}" for k, v in sorted(r["errors"].items())) or "-"
        cmp_ = r.get("compare")
        vs = r["makespan_s"] / ref if ref == ref and not r.get("at_once") else None
        out.append([r["row"], r["makespan_s"], vs,
                    r["task_p50_s"], r["task_p99_s"], r["turns"], r["uncached_tokens"], r["executed"],
                    r["spawned"], r["lost"], r["fenced_run"], r["mistakes_ran"], r["ended_early"],
                    r["deadline_hits"], errs,
                    cmp_["tasks_differing"] if cmp_ else ("(reference)" if r["row"].startswith("today") else None),
                    1000 * r["router_cpu_s"] / r["turns"] if r["turns"] and r["router_cpu_s"] == r["router_cpu_s"] else None,
                    r["agent_cpu_s"], r["servers_cpu_s"], r["workers_cpu_s"]])
    return out


def finite(v):
    """NaN and infinities as null (JSON has no NaN), in any nesting."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, list):
        return [finite(x) for x in v]
    if isinstance(v, dict):
        return {k: finite(x) for k, x in v.items()}
    return v


def print_table(title: str, rows: list[list], notes: list[str]) -> None:
    def cell(v, d):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.{d}f}"
        return str(v)
    head = [c for c, _ in COLUMNS]
    body = [[cell(v, d) for v, (_, d) in zip(r, COLUMNS)] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    print(f"#### eval: {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(head, widths)) + " |")
    print("| " + " | ".join("-" * w for w in widths) + " |")
    for b in body:
        print("| " + " | ".join(x.ljust(w) for x, w in zip(b, widths)) + " |")
    print()
    for n in notes:
        print(n)
        print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--short", action="store_true", help="a few tasks, seconds (CI)")
    ap.add_argument("--tasks", type=int, help="tasks in all (default 32; short 4)")
    ap.add_argument("--concurrency", type=int, help="tasks at once (default 16; short 4)")
    ap.add_argument("--max-turns", type=int, help="model turns per task at most (default 40; short 6)")
    ap.add_argument("--min-turns", type=int, default=3)
    ap.add_argument("--scale", type=float, help="every simulated time × this (default 0.1; short 0.05)")
    ap.add_argument("--deadline-floor", type=float, default=0.0,
                    help="no deadline shorter than this many seconds (for tiny --scale: the scale row)")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--system-words", type=int, default=4000, help="tokens of the shared system prompt")
    ap.add_argument("--cache-tokens", type=int, default=256_000, help="each worker's KV prefix cache")
    ap.add_argument("--pool", type=int, default=2, help="toolbridge: max_instances of each server's pool")
    ap.add_argument("--tool-impl", choices=("sdk", "plain"), default="sdk",
                    help="tool servers on the official MCP SDK (default) or a stdlib JSON-RPC loop")
    ap.add_argument("--at-once", type=int, help="tb-at-once row: trajectories, all at once (default 1024; short 64)")
    ap.add_argument("--at-once-turns", type=int, help="tb-at-once row: turns per task at most (default 6; short 4)")
    ap.add_argument("--at-once-scale", type=float, default=0.01, help="tb-at-once row: the time scale (fast tools)")
    ap.add_argument("--at-once-deadline", type=float, default=2.0,
                    help="tb-at-once row: no deadline shorter than this many seconds")
    ap.add_argument("--agent-procs", type=int, default=4, help="tb-at-once row: agent loop processes")
    ap.add_argument("--worker-max-running", type=int, default=256, help="requests each worker decodes at once")
    ap.add_argument("--rows", default=None, help=f"comma-separated rows of {', '.join(ROWS)}")
    ap.add_argument("--ablations", action="store_true", help="add the tb-* rows")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--peers-python", default=str(REPO / ".venv-bench" / "bin" / "python"))
    ap.add_argument("--toolbridge", default=str(REPO / "build" / "toolbridge"))
    ap.add_argument("--row-timeout", type=float, default=3600)
    ap.add_argument("--json", dest="json_path", help="also write the rows to FILE")
    ap.add_argument("--table-json", action="store_true", help="print the table as JSON (toolbridge-bench eval)")
    a = ap.parse_args()
    a.tasks = a.tasks or (4 if a.short else 32)
    a.concurrency = a.concurrency or (4 if a.short else 16)
    a.max_turns = a.max_turns or (6 if a.short else 40)
    a.scale = a.scale or (0.05 if a.short else 0.1)
    a.at_once = a.at_once or (64 if a.short else 1024)
    a.at_once_turns = a.at_once_turns or (4 if a.short else 6)
    rows_wanted = (a.rows.split(",") if a.rows else
                   ["today", "toolbridge"] + (["tb-round-robin", "tb-no-admission", "tb-no-cache", "tb-no-repair"]
                                              if a.ablations else []) + ["tb-at-once"])
    for r in rows_wanted:
        if r not in ROWS:
            ap.error(f"unknown row {r!r}; rows: {', '.join(ROWS)}")

    load0 = os.getloadavg()[0]
    bench = Bench(a)
    rows: list[dict] = []
    ok = True
    try:
        bench.start_workers()
        for name in rows_wanted:
            print(f"eval: {name}: {ROWS[name]}", file=sys.stderr, flush=True)
            try:
                row = bench.row(name)
            except Exception as e:  # noqa: BLE001 - a row that cannot run is a problem, the others go on
                ok = False
                bench.problems.append(f"{name}: {type(e).__name__}: {e}")
                continue
            ref = next((r for r in rows if r["row"].startswith("today")), None)
            if ref is not None and row is not ref and name != "tb-at-once":
                row["compare"] = bench.compare(ref, row)
            rows.append(row)
            print(f"  {row['row']}: makespan {row['makespan_s']:.2f} s, {row['turns']} turns, {row['executed']} calls, "
                  f"{row['lost']} lost, errors {row['errors']}", file=sys.stderr, flush=True)
    finally:
        bench.stop()
    for r in rows:
        if r["ended_early"]:
            bench.problems.append(f"{r['row']}: {r['ended_early']} task(s) ended before their script's final answer")
        if r["row"] == row_label(a, "tb-at-once"):
            run_errors = {k: v for k, v in r["errors"].items() if k != "unparsed"}
            if run_errors:
                bench.problems.append(f"{r['row']}: errors {run_errors} (must be none: fast tools, deadlines "
                                      f"of {a.at_once_deadline:g} s at least)")
        if r["other_model_text"]:
            bench.problems.append(f"{r['row']}: {r['other_model_text']} turn(s) where the model's text was not its "
                                  f"script's for that task and turn")
        if r["failed_tasks"]:
            bench.problems.append(f"{r['row']}: {r['failed_tasks']} task(s) failed; first: {r['first_task_error']}")
        if not r["workers_consistent"]:
            bench.problems.append(f"{r['row']}: the workers' counters disagree with the turns the agents made")
        if not r["row"].startswith("today"):
            if r["lost"]:
                bench.problems.append(f"{r['row']}: {r['lost']} call(s) lost")
            c = r.get("compare")
            if c and c["tasks_differing"]:
                bench.problems.append(f"{r['row']}: {c['tasks_differing']} task(s) executed other calls or got other "
                                      f"results than today's stack; e.g. {c['examples']}")
    ok = ok and not bench.problems
    title = (f"{a.tasks} tasks, {a.concurrency} at once, up to {a.max_turns} turns, scale {a.scale:g}, "
             f"{a.workers} workers, {a.system_words}-token system prompt, tool servers: {a.tool_impl}, "
             f"load {load0:.1f} at start")
    notes = [
        "Rows run one after another on the same simulated workers (caches and counters reset between rows). "
        "uncached prompt tokens: summed from the workers' own counters. calls lost: calls the model wrote "
        "(outside code fences) that neither ran nor came back as an error the agent could read. fenced calls run: "
        "example calls inside a code fence that were executed (must be 0). mistyped calls run: calls written "
        "without their server or in the wrong case that still ran. Both agent loops end a task on the model's "
        "final answer (\\boxed{}), never on a turn whose calls a reader dropped, so every stack makes the same "
        "model turns and the model writes the same text per task and turn: tasks ended early (fewer turns than "
        "the task's script) must be 0 everywhere. tasks differing: against the first today row, tasks that made "
        "other model turns, or where a call written correctly (or with numbers as strings) did not run with "
        "the same result in both; deadline hits are counted apart, by stack (the notes below). router/gw CPU: the sglang-router's or the gateway's own CPU per model turn (the gateway also "
        "parses and runs the calls). tool servers CPU: spawned servers (today) or the pools (toolbridge). "
        "agent CPU: the agent loop's process. A toolbridge row's makespan starts with the gateway ready "
        "(`serve --wait-ready`: its pools started, as a gateway serves a run warm); the pools' start-up CPU "
        "is in its tool servers CPU. A today row's makespan includes every spawn.",
    ]
    for r in rows:
        c = r.get("compare")
        if c:
            notes.append(f"{r['row']}: {c['checked_calls']} calls checked against today's stack; deadline hits "
                         f"there {c['deadline_ref']}, here {c['deadline_this']}; tasks with other turns "
                         f"{c['other_turns']}.")
    for r in rows:
        if r.get("at_once"):
            notes.append(limits_note(r, a))
    notes += bench.findings
    trows = table_rows(rows)
    doc = finite({"title": title, "columns": COLUMNS, "rows": trows, "notes": notes, "problems": bench.problems,
                  "ok": ok, "detail": [{k: v for k, v in r.items() if k != "_out"} for r in rows]})
    if a.json_path:
        Path(a.json_path).write_text(json.dumps(doc, indent=1) + "\n")
    if a.table_json:
        json.dump(doc, sys.stdout)
        print()
    else:
        print_table(title, trows, notes)
        for p in bench.problems:
            print(f"! {p}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
