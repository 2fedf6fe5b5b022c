"""Record and replay (docs/replay.md) against real gateways, the fixture server (its `counter`
answers a new number at every call) and server-everything: a recorded run of several
trajectories replays in strict mode with no server process, each trajectory getting its recorded
results in order; a call the cassette does not hold is an error naming the nearest recorded call;
fallthrough runs it live and records it into a new run; a gateway killed with SIGKILL while
recording leaves a cassette whose complete records all replay (a torn last line is dropped); and
`toolbridge cassette diff` finds an injected divergence."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import threading
import time
import zlib
from pathlib import Path

import pytest

from tb_support import RawSession, everything_server, fixture_server, metric, text_of, toolbridge_bin

pytestmark = pytest.mark.timeout(180)

TRAJECTORIES = ["traj-a", "traj-b", "traj-c"]
SERVERS = {"fixture": fixture_server(call_timeout="20s")}


def servers_with_everything() -> dict:
    return {"fixture": fixture_server(call_timeout="20s"), "everything": everything_server()}


def call(s: RawSession, tool: str, arguments: dict, trajectory: str | None, req_id: int) -> dict:
    params: dict = {"name": tool, "arguments": arguments}
    if trajectory is not None:
        params["_meta"] = {"toolbridge/session": trajectory}
    return s.request("tools/call", params, req_id)


def answer_text(answer: dict) -> str:
    if "error" in answer:
        return answer["error"]["message"]
    return text_of(answer["result"])


def read_records(run: Path) -> list[dict]:
    """The records of a run, each line's sum (CRC-32, zlib's) checked here, without the gateway."""
    out = []
    for line in (run / "calls.jsonl").read_bytes().split(b"\n"):
        cut = line.rfind(b',"sum":"')
        if cut < 0 or not line.endswith(b'"}'):
            continue
        if int(line[cut + 8:-2], 16) != zlib.crc32(line[:cut]):
            continue
        out.append(json.loads(line))
    return out


def server_processes(gw) -> list[str]:
    """The command lines of the gateway's descendants that are servers (fixture or node)."""
    out = []
    for p in gw.descendants():
        try:
            argv = open(f"/proc/{p.pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        line = " ".join(a.decode(errors="replace") for a in argv)
        if "toolbridge-fixture" in line or "server-everything" in line:
            out.append(line)
    return out


def runs_in(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if (p / "calls.jsonl").exists())


def cassette_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(toolbridge_bin()), "cassette", *args], capture_output=True, text=True,
                          timeout=60)


# The plan of the recorded run: per trajectory, its calls in order.
PLAN = {t: [("fixture__counter", {}), ("everything__echo", {"message": f"hello {t}"}),
            ("fixture__counter", {}), ("fixture__echo", {"text": "same"}), ("fixture__counter", {})]
        for t in TRAJECTORIES}


@pytest.fixture(scope="module")
def recorded(module_gateway_factory, tmp_path_factory):
    """A run of three trajectories, interleaved, recorded; the answers each trajectory got."""
    root = tmp_path_factory.mktemp("cassettes")
    gw = module_gateway_factory(servers_with_everything(), {"tool_naming": "prefixed",
                                                            "record": {"path": str(root)}},
                                name="recorder")
    s = RawSession(gw.mcp_url).initialize()
    got: dict[str, list[str]] = {t: [] for t in TRAJECTORIES}
    req = 1
    try:
        for i in range(len(PLAN[TRAJECTORIES[0]])):
            for t in TRAJECTORIES:
                tool, args = PLAN[t][i]
                answer = call(s, tool, args, t, req)
                req += 1
                assert "result" in answer and not answer["result"].get("isError"), answer
                got[t].append(text_of(answer["result"]))
        assert metric(gw, "toolbridge_recorded_calls_total") == 15
    finally:
        s.close()
    gw.close()  # SIGTERM: the writer writes what is queued
    [run] = runs_in(root)
    return root, run, got


def test_the_run_is_recorded_with_its_key_fields_and_fingerprints(recorded):
    root, run, got = recorded
    records = read_records(run)
    assert records[0]["kind"] == "run"
    servers = {r["server"]: r for r in records if r["kind"] == "server"}
    assert servers["fixture"]["version"] and servers["fixture"]["name"], servers["fixture"]
    assert any(t["name"] == "counter" for t in servers["fixture"]["tools"])
    assert any(t["name"] == "echo" for t in servers["everything"]["tools"])
    calls = [r for r in records if r["kind"] == "call"]
    assert len(calls) == 15
    a = [c for c in calls if c["trajectory"] == "traj-a"]
    assert [(c["server"], c["tool"], c["occurrence"]) for c in a] == [
        ("fixture", "counter", 1), ("everything", "echo", 1), ("fixture", "counter", 2),
        ("fixture", "echo", 1), ("fixture", "counter", 3)]
    assert a[1]["arguments"] == {"message": "hello traj-a"}
    assert all(c["fingerprint"] == servers[c["server"]]["tools_hash"] for c in calls)
    assert [text_of(c["result"]) for c in a] == got["traj-a"]
    # The counter changed at every call: replay has something to prove.
    counters = [text_of(c["result"]) for c in calls if c["tool"] == "counter"]
    assert len(set(counters)) == 9


def test_strict_replay_answers_every_trajectory_in_order_with_no_server(recorded, gateway_factory):
    root, run, got = recorded
    gw = gateway_factory(servers_with_everything(),
                         {"tool_naming": "prefixed", "replay": {"path": str(run), "mode": "strict"}},
                         ready=[])
    assert server_processes(gw) == [], "strict replay started a server process"
    s = RawSession(gw.mcp_url).initialize()
    try:
        listed = {t["name"] for t in s.request("tools/list", {}, 1)["result"]["tools"]}
        assert {"fixture__counter", "everything__echo", "fixture__echo"} <= listed
        req = 2
        # Trajectory by trajectory, not interleaved as recorded: each gets its own results.
        for t in reversed(TRAJECTORIES):
            for i, (tool, args) in enumerate(PLAN[t]):
                answer = call(s, tool, args, t, req)
                req += 1
                assert "result" in answer, answer
                assert text_of(answer["result"]) == got[t][i], (t, i, answer)
                meta = answer["result"]["_meta"]["toolbridge/replay"]
                assert meta["trajectory"] == t and meta["run"] == run.name
        # A fourth counter call in traj-a is not in the cassette: an error naming the nearest.
        miss = call(s, "fixture__counter", {}, "traj-a", req)
        why = answer_text(miss)
        assert "replay (strict)" in why and "fixture__counter" in why, miss
        assert "nearest recorded call: fixture__counter" in why and "call 3" in why, why
        assert "error" in miss or miss["result"].get("isError"), miss
        assert metric(gw, "toolbridge_replayed_calls_total", result="hit") == 15
        assert metric(gw, "toolbridge_replayed_calls_total", result="miss") == 1
        assert server_processes(gw) == []
    finally:
        s.close()


def test_other_trajectory_names_replay_in_the_order_of_first_use(recorded, gateway_factory):
    root, run, got = recorded
    gw = gateway_factory(SERVERS | {"everything": everything_server()},
                         {"tool_naming": "prefixed", "replay": {"path": str(root)}}, ready=[])
    s = RawSession(gw.mcp_url).initialize()
    try:
        req = 1
        renamed = {"other-1": "traj-a", "other-2": "traj-b", "other-3": "traj-c"}
        for new, old in renamed.items():  # first uses in the recorded order
            answer = call(s, "fixture__counter", {}, new, req)
            req += 1
            assert text_of(answer["result"]) == got[old][0], (new, answer)
        answer = call(s, "fixture__counter", {}, "other-2", req)
        assert text_of(answer["result"]) == got["traj-b"][2]
    finally:
        s.close()


def test_fallthrough_runs_a_miss_live_and_records_it_beside(recorded, gateway_factory, tmp_path):
    root, run, got = recorded
    # A copy of the run, so the new run is made beside it (no gateway.record: the default).
    base = tmp_path / "runs"
    base.mkdir()
    shutil.copytree(run, base / run.name)
    gw = gateway_factory(SERVERS, {"tool_naming": "prefixed",
                                   "replay": {"path": str(base / run.name), "mode": "fallthrough"}})
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i in range(3):
            answer = call(s, "fixture__counter", {}, "traj-a", 10 + i)
            expected = got["traj-a"][[0, 2, 4][i]]
            assert text_of(answer["result"]) == expected
        live = call(s, "fixture__counter", {}, "traj-a", 20)
        assert "toolbridge/replay" not in live["result"].get("_meta", {}), live
        assert text_of(live["result"]) == "1"  # a fresh fixture's first execution
        assert metric(gw, "toolbridge_replayed_calls_total", result="live") == 1
    finally:
        s.close()
    gw.close()
    new_runs = [r for r in runs_in(base) if r.name != run.name]
    assert len(new_runs) == 1, runs_in(base)
    calls = [r for r in read_records(new_runs[0]) if r["kind"] == "call"]
    assert [(c["tool"], c["occurrence"], text_of(c["result"])) for c in calls] == [
        ("counter", 1, got["traj-a"][0]), ("counter", 2, got["traj-a"][2]),
        ("counter", 3, got["traj-a"][4]), ("counter", 4, "1")]
    # The new run replays strictly on its own, the live call included.
    dump = cassette_cli("dump", str(base))  # the latest run of the directory: the new one
    assert dump.returncode == 0, dump.stderr
    assert "4 calls in 1 trajectories" in dump.stdout, dump.stdout


def test_sigkill_while_recording_leaves_every_complete_record_replayable(gateway_factory, tmp_path):
    root = tmp_path / "killed"
    gw = gateway_factory(SERVERS, {"tool_naming": "prefixed", "record": {"path": str(root)}})
    got: list[str] = []
    stop = threading.Event()

    def caller() -> None:
        s = RawSession(gw.mcp_url).initialize()
        try:
            for i in range(10_000):
                if stop.is_set():
                    return
                answer = call(s, "fixture__counter", {}, "k", i + 1)
                got.append(text_of(answer["result"]))
        except Exception:  # noqa: BLE001 - the gateway is killed under it
            return
        finally:
            s.close()

    t = threading.Thread(target=caller)
    t.start()
    [run] = [None]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = runs_in(root) if root.exists() else []
        if runs and len(read_records(runs[0])) > 40:
            run = runs[0]
            break
        time.sleep(0.05)
    assert run is not None, "nothing recorded"
    gw.proc.send_signal(signal.SIGKILL)  # mid-record: calls keep coming
    gw.proc.wait()
    stop.set()
    t.join(30)
    gw.proc = None  # already gone; nothing to stop at teardown
    # A crash inside a write leaves a torn last line: add one, as a cut-short write would.
    with open(run / "calls.jsonl", "ab") as f:
        f.write(b'{"kind":"call","seq":99999,"trajectory":"k","server":"fixture","tool":"coun')
    calls = [r for r in read_records(run) if r["kind"] == "call"]
    assert len(calls) >= 40
    recorded_results = [text_of(c["result"]) for c in calls]
    n = min(len(calls), len(got))  # answered but not yet written, or written but not answered
    assert recorded_results[:n] == got[:n]
    dump = cassette_cli("dump", str(run))
    assert dump.returncode == 0, dump.stderr
    assert f"{len(calls)} calls in 1 trajectories; the last record was cut short" in dump.stdout

    gw2 = gateway_factory(SERVERS, {"tool_naming": "prefixed",
                                    "replay": {"path": str(run), "mode": "strict"}}, ready=[])
    s = RawSession(gw2.mcp_url).initialize()
    try:
        for i in range(len(calls)):
            answer = call(s, "fixture__counter", {}, "k", 1000 + i)
            assert text_of(answer["result"]) == recorded_results[i], (i, answer)
        assert "replay (strict)" in answer_text(call(s, "fixture__counter", {}, "k", 5000))
    finally:
        s.close()


def test_cassette_diff_finds_an_injected_divergence(recorded, tmp_path):
    root, run, got = recorded
    changed = tmp_path / "changed"
    changed.mkdir()
    lines = (run / "calls.jsonl").read_bytes().split(b"\n")
    out = []
    injected = False
    for line in lines:
        if not line:
            continue
        record = json.loads(line)
        if (not injected and record.get("kind") == "call" and record["trajectory"] == "traj-b"
                and record["tool"] == "counter" and record["occurrence"] == 2):
            record["result"]["content"][0]["text"] = "999"
            injected = True
        del record["sum"]
        body = json.dumps(record, separators=(",", ":")).encode()[:-1]
        out.append(body + b',"sum":"%08x"}' % zlib.crc32(body))
    (changed / "calls.jsonl").write_bytes(b"\n".join(out) + b"\n")
    assert injected
    same = cassette_cli("diff", str(run), str(run))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "0 of the trajectories diverge" in same.stdout
    d = cassette_cli("diff", str(run), str(changed))
    assert d.returncode == 1, d.stdout + d.stderr
    assert "trajectory traj-b: diverges at call 3: fixture/counter {}: different result" in d.stdout, d.stdout
    assert "trajectory traj-a: same (5 calls)" in d.stdout
    assert "fixture/counter: 1 / 9" in d.stdout, d.stdout
    assert "everything/echo: 0 / 3" in d.stdout


def test_opt_outs_and_a_full_cassette(gateway_factory, tmp_path):
    root = tmp_path / "capped"
    servers = {"fixture": fixture_server(call_timeout="20s", record={"counter": False}),
               "other": fixture_server("--name", "other", record=False)}
    gw = gateway_factory(servers, {"tool_naming": "prefixed",
                                   "record": {"path": str(root), "max_bytes": 16384}})
    s = RawSession(gw.mcp_url).initialize()
    try:
        call(s, "fixture__counter", {}, "o", 1)  # opted out by tool
        call(s, "other__echo", {"text": "x"}, "o", 2)  # opted out by server
        for i in range(60):
            answer = call(s, "fixture__echo", {"text": f"call {i} " + "y" * 1000}, "o", 10 + i)
            assert text_of(answer["result"]).startswith(f"call {i}")  # never failed by recording
        recorded_calls = metric(gw, "toolbridge_recorded_calls_total")
        dropped = metric(gw, "toolbridge_record_dropped_total", reason="full")
        assert 0 < recorded_calls < 60 and dropped == 60 - recorded_calls, (recorded_calls, dropped)
    finally:
        s.close()
    gw.close()
    [run] = runs_in(root)
    assert (run / "calls.jsonl").stat().st_size <= 16384
    calls = [r for r in read_records(run) if r["kind"] == "call"]
    assert len(calls) == recorded_calls
    assert {(c["server"], c["tool"]) for c in calls} == {("fixture", "echo")}
    log = gw.stderr_path.read_text()
    assert log.count("is full") == 1, log[-2000:]
