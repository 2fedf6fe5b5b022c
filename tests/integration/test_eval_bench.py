"""The `eval` bench's invariants, on real processes: a short run of bench/python/eval_bench.py
(simulated workers in scripted-agent mode, the three tool servers, sglang-router when installed,
a real gateway) and the scripted agent itself. Timings are not asserted; the accounting is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "llm_worker"))
sys.path.insert(0, str(REPO / "bench" / "python"))

import worker as llm_worker  # noqa: E402
from eval_bench import make_tasks  # noqa: E402
from llm_support import start_workers  # noqa: E402

PEERS_PYTHON = REPO / ".venv-bench" / "bin" / "python"


def test_the_scripted_agent_is_a_function_of_task_and_turn():
    workers = start_workers(1)
    try:
        w = workers[0]
        marker = "[eval-task id=t0042 turns=5 format=use_mcp_tool] find it"
        history = [{"role": "system", "content": "s " * 50}, {"role": "user", "content": marker}]
        texts = []
        for extra in ([], [{"role": "assistant", "content": "x"}, {"role": "user", "content": "results"}]):
            for _ in range(2):
                body = json.dumps({"model": "sim", "messages": history + extra}).encode()
                req = urllib.request.Request(f"{w.url}/v1/chat/completions", body,
                                             {"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=30) as r:
                    texts.append(json.loads(r.read())["choices"][0]["message"]["content"])
        assert texts[0] == texts[1] and texts[2] == texts[3]  # same (task, turn): same text
        assert texts[0] == llm_worker.script_turn("t0042", 0, 5, "use_mcp_tool")["text"]
        assert texts[2] == llm_worker.script_turn("t0042", 1, 5, "use_mcp_tool")["text"]
        assert "<use_mcp_tool>" in texts[0] and texts[0] != texts[2]
        assert w.stats()["scripted"] == 4
        final = llm_worker.script_turn("t0042", 4, 5, "use_mcp_tool")
        assert final["final"] and not final["calls"] and "<use_mcp_tool>" not in final["text"]
    finally:
        for w in workers:
            w.kill()


def test_the_script_makes_every_kind_of_mistake():
    kinds = {}
    for task in range(40):
        for turn in range(8):
            for fmt in ("hermes", "use_mcp_tool"):
                for c in llm_worker.script_turn(f"t{task}", turn, 9, fmt)["calls"]:
                    k = "fenced" if c["fenced"] else c["mistake"]
                    kinds[k] = kinds.get(k, 0) + 1
    assert set(kinds) == {"none", "no_server", "wrong_case", "num_string", "unparseable", "fenced"}
    total = sum(kinds.values())
    assert 0.6 < kinds["none"] / total < 0.85


@pytest.mark.serial
@pytest.mark.timeout(600)
def test_short_eval_run_keeps_every_call(binaries, tmp_path):
    toolbridge, _ = binaries
    rows = "today,toolbridge" if os.access(PEERS_PYTHON, os.X_OK) else "today-rr,toolbridge"
    out = tmp_path / "eval.json"
    # 8 tasks so that every kind of mistake occurs; plain tool servers keep it to seconds.
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "python" / "eval_bench.py"), "--short", "--tasks", "8",
         "--tool-impl", "plain", "--rows", rows, "--toolbridge", toolbridge, "--json", str(out)],
        capture_output=True, text=True, timeout=580)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    detail = {r["row"]: r for r in doc["detail"]}
    today, tb = detail[rows.split(",")[0]], detail["toolbridge"]
    assert today["failed_tasks"] == 0 and tb["failed_tasks"] == 0, doc["problems"]

    # The workers' own counters agree with what the agents did, in both stacks.
    for r in (today, tb):
        assert r["workers_consistent"], r
        assert r["worker_requests"] == r["turns"]

    # toolbridge: nothing lost, no fenced call run, no task cut short, and the calls written
    # correctly ran with the same results as in today's stack.
    assert tb["lost"] == 0
    assert tb["fenced_run"] == 0
    assert tb["ended_early"] == 0
    assert tb["compare"]["tasks_differing"] == 0, tb["compare"]["examples"]
    assert tb["compare"]["checked_calls"] > 0

    # The script's mistakes, as each stack handles them.
    n_tasks = 8
    tasks = make_tasks(n_tasks, 6, 3)
    expected_turns = sum(t["turns"] for t in tasks)
    assert tb["turns"] == expected_turns
    written = {"unparseable": 0, "fenced": 0, "no_server": 0, "no_server/use_mcp_tool": 0, "wrong_case": 0}
    for t in tasks:
        for i in range(t["turns"]):
            for c in llm_worker.script_turn(t["id"], i, t["turns"], t["format"])["calls"]:
                k = "fenced" if c["fenced"] else c["mistake"]
                if k == "no_server" and t["format"] == "use_mcp_tool":
                    k = "no_server/use_mcp_tool"
                if k in written:
                    written[k] += 1
    assert written["unparseable"] > 0 and written["fenced"] > 0
    # toolbridge repairs a name written without its server, a name in the wrong case, and a
    # use_mcp_tool call naming the tool as its server (`<server_name>web_search</server_name>`:
    # the tool's own name is unique, so it is the one; before, "Unknown tool").
    assert tb["mistakes_ran"] == (written["no_server"] + written["no_server/use_mcp_tool"] +
                                  written["wrong_case"])
    assert tb["errors"].get("invalid_params", 0) == 0
    # Today's regex reader drops an unparseable call without a word (lost) and runs fenced
    # examples; its task goes on to the final answer all the same, so both stacks made the same
    # model turns, and the model wrote its script's text in every one of them.
    assert today["lost"] == written["unparseable"]
    assert today["fenced_run"] == written["fenced"]
    for r in (today, tb):
        assert r["turns"] == expected_turns and r["ended_early"] == 0, r
        assert r["other_model_text"] == 0, r
    assert tb["compare"]["other_turns"] == 0
    assert tb["spawned"] <= 6  # pools of at most 2 per server, never a process per call
    assert today["spawned"] == today["executed"] + 3 * n_tasks


@pytest.mark.timeout(120)
def test_todays_loop_goes_on_past_a_turn_whose_calls_it_dropped(tmp_path):
    # Task t0006's turns 5 and 6 (hermes) hold only unparseable calls: the regex reader finds
    # none. The loop used to take "no call found" as the final answer and end the task there,
    # so today's stack made fewer model turns than toolbridge and the makespans compared unequal
    # work. It must now go on to the script's final answer, the dropped calls lost.
    task = {"id": "t0006", "turns": 8, "format": "hermes"}
    script = [llm_worker.script_turn(task["id"], i, task["turns"], task["format"]) for i in range(8)]
    for i in (5, 6):
        written = [c for c in script[i]["calls"] if not c["fenced"]]
        assert written and all(c["mistake"] == "unparseable" for c in written)
    workers = start_workers(1, "--decode-ms-per-token", "0", "--prefill-us-per-token", "0")
    try:
        spec = {"stack": "today", "llm_urls": [f"{workers[0].url}/v1"], "system_words": 200, "max_turns": 20,
                "concurrency": 1, "tasks": [task],
                "tool_command": [sys.executable, str(REPO / "bench" / "python" / "eval_tools.py"), "--impl",
                                 "plain", "--scale", "0.01", "--state-dir", str(tmp_path)],
                "deadlines": {"search": 5.0, "scrape": 0.5, "sandbox": 5.0}}
        proc = subprocess.run([sys.executable, str(REPO / "bench" / "python" / "eval_agent.py")],
                              input=json.dumps(spec), capture_output=True, text=True, timeout=110)
        assert proc.returncode == 0, proc.stderr[-2000:]
        rec = json.loads(proc.stdout)["tasks"][0]
        assert rec["error"] == ""
        assert len(rec["turns"]) == 8  # to the final answer, not to turn 5
        assert workers[0].stats()["requests"] == 8
        for i in (5, 6):
            assert rec["turns"][i]["executed"] == [] and rec["turns"][i]["reported"] == 0  # lost, silently
    finally:
        for w in workers:
            w.kill()


@pytest.mark.serial
@pytest.mark.timeout(300)
def test_many_trajectories_at_once_from_several_agent_processes(binaries, tmp_path):
    # The scale row, small: every trajectory at once, the agent loop dealt out to 3 processes
    # (the tasks split between them, the makespan from the first start to the last end); no
    # error but the script's own unparseable calls, nothing lost, every task to its final answer.
    toolbridge, _ = binaries
    out = tmp_path / "at_once.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "python" / "eval_bench.py"), "--short", "--rows", "tb-at-once",
         "--at-once", "96", "--at-once-turns", "4", "--agent-procs", "3", "--tool-impl", "plain",
         "--toolbridge", toolbridge, "--json", str(out)],
        capture_output=True, text=True, timeout=280)
    assert out.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["ok"], doc["problems"]
    (row,) = doc["detail"]
    assert row["row"] == "tb-96-at-once" and row["at_once"]
    assert row["agent_procs"] == 3
    tasks = make_tasks(96, 4, 3, "s")
    assert row["turns"] == sum(t["turns"] for t in tasks) == row["worker_requests"]
    assert row["failed_tasks"] == 0 and row["lost"] == 0 and row["ended_early"] == 0
    assert set(row["errors"]) <= {"unparsed"}
    assert 0 < row["makespan_s"] < 120
    assert any(n.startswith("tb-96-at-once:") and "Limited by:" in n for n in doc["notes"])
    assert doc["rows"][0][2] is None  # no "vs today": another load
