"""No process outlives the gateway: not on SIGTERM (orderly stop ladder), not on SIGKILL
(children die by parent-death signal or stdin EOF; they get reparented, so we track them by
pid + start time recorded before the kill)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import pytest

from tb_support import (VENV_BIN, Gateway, ProcInfo, describe, everything_server, fixture_bin, fixture_server,
                        kill_procs, proc_table, time_server, wait_gone)

pytestmark = pytest.mark.timeout(90)


def servers() -> dict:
    # `wrapped` is a Python parent with the fixture as its child: a grandchild of the gateway.
    launcher = ("import subprocess, sys; "
                f"sys.exit(subprocess.call([{str(fixture_bin())!r}]))")
    return {
        "fixture": fixture_server(),
        "everything": everything_server(),
        "time": time_server(),
        "wrapped": {"command": str(VENV_BIN / "python"), "args": ["-c", launcher]},
    }


def start(tmp_path) -> tuple[Gateway, list[ProcInfo]]:
    gw = Gateway(tmp_path, servers())
    gw.start()
    try:
        gw.wait_ready()
        procs = gw.descendants()
    except BaseException:
        gw.kill_quietly()
        raise
    names = " ".join(p.comm for p in procs)
    # fixture, node, time (python), wrapped python + its fixture child: at least five processes.
    if len(procs) < 5:
        gw.kill_quietly()
        pytest.fail(f"expected at least 5 descendants of the gateway, found {len(procs)}: {names}")
    return gw, procs


def test_sigterm_stops_every_descendant(tmp_path):
    gw, procs = start(tmp_path)
    try:
        t0 = time.monotonic()
        gw.proc.send_signal(signal.SIGTERM)
        left = wait_gone(procs, 2.0)
        assert not left, f"still alive 2 s after SIGTERM:\n{describe(left)}\nstderr:\n{gw.stderr_tail()}"
        try:
            rc = gw.proc.wait(max(0.1, 3.0 - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            pytest.fail(f"gateway still running 3 s after SIGTERM\nstderr:\n{gw.stderr_tail()}")
        assert rc == 0, f"gateway exited with {rc} on SIGTERM\nstderr:\n{gw.stderr_tail()}"
    finally:
        kill_procs(procs)
        gw.kill_quietly()


def test_sigkill_leaves_no_descendant(tmp_path):
    gw, procs = start(tmp_path)
    try:
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait(5)
        left = wait_gone(procs, 2.0)
        assert not left, f"still alive 2 s after the gateway was SIGKILLed:\n{describe(left)}"
    finally:
        kill_procs(procs)
        gw.kill_quietly()


def fixture_children(gw: Gateway) -> list[ProcInfo]:
    """Live fixture processes directly under the gateway (ignores helpers such as a reaper)."""
    fixture = str(fixture_bin())
    out = []
    for p in gw.descendants():
        try:
            argv0 = open(f"/proc/{p.pid}/cmdline", "rb").read().split(b"\0")[0].decode()
        except OSError:
            continue
        if p.ppid == gw.proc.pid and argv0 == fixture:
            out.append(p)
    return out


def test_restarted_instance_is_reaped(tmp_path):
    """A crashed child is reaped (no zombie under the gateway) and replaced by a new instance."""
    import anyio

    from tb_sdk import sdk_session

    gw = Gateway(tmp_path, {"fixture": fixture_server(restart_backoff={"initial": "100ms"})})
    gw.start()
    try:
        gw.wait_ready()
        before = fixture_children(gw)
        assert len(before) == 1, describe(before)

        async def crash():
            async with sdk_session(gw.mcp_url) as s:
                try:
                    r = await s.call_tool("fixture__crash", {"code": 3})
                except Exception as exc:  # a JSON-RPC error is a correct answer too
                    return str(exc)
                assert r.is_error, f"crash call returned a success: {r}"
                return str(r.content)

        anyio.run(crash)
        gw.wait_health(lambda h: h["servers"]["fixture"]["restarts"] >= 1
                       and h["servers"]["fixture"]["state"] == "ready", 15, "fixture restarted")
        assert wait_gone(before, 2.0) == [], "crashed instance still present"
        zombies = [p for p in proc_table().values() if p.ppid == gw.proc.pid and p.state == "Z"]
        assert not zombies, f"unreaped children: {describe(zombies)}"
        after = fixture_children(gw)
        assert len(after) == 1 and after[0].pid != before[0].pid, describe(after)
        gw.close()
    finally:
        gw.kill_quietly()


# ---- a grandchild that leaves the process group with setsid() --------------------------------

def escaping_server(marker: str, **extra) -> dict:
    """A Python parent that starts a setsid()'d sleeper (its argv ends with `marker`), then runs
    the fixture as its child: signals to the instance's process group miss the sleeper."""
    sleeper = f"[{str(VENV_BIN / 'python')!r}, '-c', 'import time; time.sleep(600)', {marker!r}]"
    launcher = ("import subprocess, sys; "
                f"subprocess.Popen({sleeper}, start_new_session=True, stdin=subprocess.DEVNULL, "
                "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                f"sys.exit(subprocess.call([{str(fixture_bin())!r}]))")
    return {"command": str(VENV_BIN / "python"), "args": ["-c", launcher], **extra}


def sleepers(marker: str) -> list[ProcInfo]:
    out = []
    for p in proc_table().values():
        try:
            argv = open(f"/proc/{p.pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv and p.state != "Z":
            out.append(p)
    return out


def wait_sleepers(marker: str, count: int, timeout: float = 20.0) -> list[ProcInfo]:
    deadline = time.monotonic() + timeout
    while True:
        found = sleepers(marker)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


NO_CGROUPS = "no cgroup v2 for server instances ("


def gateway_cgroup(gw) -> "Path | None":
    """The gateway's cgroup tree for its instances (toolbridge-PID); None only when the gateway
    said at start that it has no cgroup v2 (docs/limits-and-faults.md), which then fails the
    test if this machine's cgroup v2 is writable by us (the gateway should have used it)."""
    tree = cgroup_tree(gw.proc.pid)
    if tree is not None:
        return tree
    log = gw.stderr_path.read_text()
    assert NO_CGROUPS in log, f"no toolbridge-{gw.proc.pid} cgroup and no word of why:\n{log[-2000:]}"
    assert not cgroup_v2_writable(), f"cgroup v2 is writable here, yet the gateway made no tree:\n{log[-2000:]}"
    return None


def cgroup_v2_writable() -> bool:
    """Can this process make a cgroup v2 group beside its own (as the gateway would)?"""
    from pathlib import Path
    mount = cgroup2_mount()
    try:
        own = next(l[3:].strip() for l in open("/proc/self/cgroup") if l.startswith("0::"))
    except (OSError, StopIteration):
        return False
    if mount is None:
        return False
    probe = Path(mount + own) / f"tb-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    probe.rmdir()
    return True


def cgroup2_mount() -> "str | None":
    mount = None
    for line in open("/proc/self/mountinfo"):
        if " - cgroup2 " in line and line.split()[3] == "/":
            mount = line.split()[4]
    return mount


def cgroup_tree(pid: int):
    """The cgroup tree of gateway `pid` for its instances (toolbridge-PID), or None."""
    from pathlib import Path
    mount = cgroup2_mount()
    try:
        own = next(l[3:].strip() for l in open(f"/proc/{pid}/cgroup") if l.startswith("0::"))
    except (OSError, StopIteration):
        return None
    if mount is None:
        return None
    path = Path(mount + own) / f"toolbridge-{pid}"
    return path if path.exists() else None


def escaping_gateway(tmp_path, marker: str, **extra) -> tuple[Gateway, list[ProcInfo]]:
    gw = Gateway(tmp_path, {"escaper": escaping_server(marker, **extra)})
    gw.start()
    try:
        gw.wait_ready()
        found = wait_sleepers(marker, 1)
        assert found, "the setsid()'d sleeper never started"
        assert all(p.pgrp != gw.proc.pid for p in found)
    except BaseException:
        gw.kill_quietly()
        kill_procs(sleepers(marker))
        raise
    return gw, found


def test_setsid_grandchild_is_killed_on_sigterm(tmp_path):
    marker = f"tb-escaper-{uuid.uuid4().hex}"
    gw, found = escaping_gateway(tmp_path, marker)
    try:
        cgroup = gateway_cgroup(gw)
        gw.proc.send_signal(signal.SIGTERM)
        assert gw.proc.wait(10) == 0, gw.stderr_tail()
        left = wait_gone(found, 3.0)
        assert not left, f"alive 3 s after the gateway stopped:\n{describe(left)}"
        assert cgroup is None or not cgroup.exists(), f"{cgroup} left behind"
    finally:
        kill_procs(sleepers(marker))
        gw.kill_quietly()


def test_setsid_grandchild_is_killed_when_the_gateway_is_sigkilled(tmp_path):
    marker = f"tb-escaper-{uuid.uuid4().hex}"
    gw, found = escaping_gateway(tmp_path, marker)
    try:
        cgroup = gateway_cgroup(gw)
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait(5)
        left = wait_gone(found, 3.0)
        assert not left, f"alive 3 s after the gateway was SIGKILLed:\n{describe(left)}"
        deadline = time.monotonic() + 3.0
        while cgroup is not None and cgroup.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cgroup is None or not cgroup.exists(), f"{cgroup} left behind by the watchdog"
    finally:
        kill_procs(sleepers(marker))
        gw.kill_quietly()


def test_setsid_grandchild_is_killed_on_session_release(tmp_path):
    from tb_support import RawSession, read_proc, text_of

    marker = f"tb-escaper-{uuid.uuid4().hex}"
    gw = Gateway(tmp_path, {"escaper": escaping_server(marker, policy="per_session", spares=0)})
    gw.start()
    try:
        gw.wait_ready()
        sess = RawSession(gw.mcp_url).initialize()
        answer = sess.request("tools/call", {"name": "escaper__pid", "arguments": {},
                                             "_meta": {"toolbridge/session": "traj-1"}}, 1)
        assert "result" in answer and not answer["result"].get("isError"), answer
        launcher = read_proc(int(text_of(answer["result"]))).ppid
        deadline = time.monotonic() + 20
        while not (mine := [p for p in sleepers(marker) if p.ppid == launcher]):
            assert time.monotonic() < deadline, "the trajectory's instance started no sleeper"
            time.sleep(0.05)
        released = sess.request("toolbridge/release", {"session": "traj-1"}, 2)
        assert released["result"] == {"released": 1}, released
        left = wait_gone(mine, 5.0)
        assert not left, f"alive 5 s after its session was released:\n{describe(left)}"
        sess.close()
        gw.close()
    finally:
        kill_procs(sleepers(marker))
        gw.kill_quietly()


def test_allocator_tuning_stays_in_the_gateway(tmp_path):
    """`serve` re-executes itself once with glibc's thread cache deepened (GLIBC_TUNABLES); the
    servers it starts never inherit that variable or its marker."""
    env_file = tmp_path / "server.env"
    script = f"env > {env_file}; exec {fixture_bin()}"
    gw = Gateway(tmp_path, {"fixture": {"command": "/bin/sh", "args": ["-c", script]}})
    gw.start()
    try:
        gw.wait_ready()
        initial = open(f"/proc/{gw.proc.pid}/environ", "rb").read().split(b"\0")
        if not os.environ.get("TOOLBRIDGE_SANITIZED"):  # the sanitizer's allocator is not glibc's
            assert b"GLIBC_TUNABLES=glibc.malloc.tcache_count=256" in initial
        # Executed again by its own path, so it keeps its name in ps and top.
        assert open(f"/proc/{gw.proc.pid}/comm").read().strip() == "toolbridge"
        server_env = env_file.read_text()
        assert "GLIBC_TUNABLES" not in server_env, server_env
        assert "TOOLBRIDGE_ALLOCATOR_TUNED" not in server_env, server_env
    finally:
        gw.close()


def test_operator_tunables_win(tmp_path, monkeypatch):
    """An operator's own GLIBC_TUNABLES (even empty) is kept as it is: no re-execution."""
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=8")
    gw = Gateway(tmp_path, {"fixture": fixture_server()})
    gw.start()
    try:
        gw.wait_ready()
        initial = open(f"/proc/{gw.proc.pid}/environ", "rb").read().split(b"\0")
        assert b"GLIBC_TUNABLES=glibc.malloc.tcache_count=8" in initial
        assert not any(v.startswith(b"TOOLBRIDGE_ALLOCATOR_TUNED") for v in initial)
    finally:
        gw.close()
