"""Installing toolbridge. scripts/setup run installs only what building and running needs.

The platform wheel, installed as a user installs it: a fresh virtualenv in a temporary folder,
a clean PATH, no LD_LIBRARY_PATH, the repository and its build/ out of reach. `toolbridge` must
be on the venv's PATH, `toolbridge.Gateway` must start the bundled binary, a call must go through
`toolbridge.Client`, and stopping must leave no process behind. The wheel's tag must match the
binary's glibc floor.

The wheel is TOOLBRIDGE_WHEEL (scripts/build-wheel prints it; .ci/run sets it). Without it the
tests are skipped: building the wheel is not part of scripts/test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tb_support import REPO, fixture_bin

WHEEL = os.environ.get("TOOLBRIDGE_WHEEL")
needs_wheel = pytest.mark.skipif(not WHEEL, reason="TOOLBRIDGE_WHEEL not set (scripts/build-wheel)")

# What scripts/setup run must not install: test-only tools.
TEST_ONLY_DEBS = {"chromium", "chromium-driver", "nginx", "haproxy", "redis-server", "clang-16",
                  "libclang-rt-16-dev", "libfuzzer-16-dev", "mmdebstrap", "umoci", "linux-perf",
                  "nodejs", "npm", "clang-format"}
BUILD_DEBS = {"g++", "cmake", "ninja-build", "libboost1.81-dev", "libboost-json1.81-dev",
              "libboost-url1.81-dev", "libyaml-cpp-dev", "libspdlog-dev", "libfmt-dev", "libcli11-dev",
              "libvalijson-dev", "libssl-dev", "liblmdb-dev", "libhiredis-dev"}

# glibc's own libraries: the only shared libraries a manylinux binary may need from the host.
GLIBC_LIBS = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
              "ld-linux-x86-64.so.2"}

# Runs inside the fresh venv (python -I: no PYTHONPATH, no user site, no current folder).
CLIENT_SCRIPT = r"""
import json, os, sys
import toolbridge
config = sys.argv[1]
report = {"module": toolbridge.__file__, "version": toolbridge.__version__,
          "found": toolbridge.find_binary(), "bundled": toolbridge.bundled_binary()}
with toolbridge.Gateway(config) as gw:
    report["pid"] = gw.process.pid
    report["binary"] = gw.binary
    with toolbridge.Client(gw.base_url) as client:
        report["tools"] = sorted(t["name"] for t in client.tools())
        report["echo"] = client.call("fixture__echo", {"text": "from the wheel"}).text
        report["sum"] = client.call("fixture__add", {"a": 2, "b": 3}).text
    report["exit"] = None
report["exit"] = gw.process is None
print(json.dumps(report))
"""


def wheel_tag_floor(wheel: Path) -> tuple[int, int]:
    """(2, 28) for a manylinux_2_28 wheel: the oldest glibc its tag claims to support."""
    m = re.search(r"manylinux_(\d+)_(\d+)_x86_64", wheel.name)
    assert m, f"{wheel.name}: not a manylinux wheel"
    return int(m[1]), int(m[2])


def glibc_needs(binary: Path) -> tuple[set[tuple[int, int]], set[str], set[str]]:
    """The binary's required GLIBC_ versions, its GLIBCXX_/CXXABI_ needs, and its NEEDED libraries."""
    dyn = subprocess.run(["objdump", "-T", "-p", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    versions = {tuple(int(p) for p in v.split(".")[:2])
                for v in re.findall(r"\bGLIBC_(\d+\.\d+(?:\.\d+)?)\b", dyn)}
    cxx = set(re.findall(r"\b(GLIBCXX_[\d.]+|CXXABI_[\d.]+)\b", dyn))
    needed = set(re.findall(r"^\s*NEEDED\s+(\S+)", dyn, re.M))
    return versions, cxx, needed


def processes_under(folder: Path) -> list[str]:
    """Running processes whose executable lies under `folder` (a leaked gateway or server)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        if exe.startswith(str(folder) + "/"):
            found.append(f"{entry.name} {exe}")
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv outside the repository with the wheel installed, and its clean environment."""
    wheel = Path(WHEEL).resolve()
    assert wheel.is_file(), f"TOOLBRIDGE_WHEEL={WHEEL}: no such file"
    home = tmp_path_factory.mktemp("wheel-user")
    assert REPO not in home.parents
    venv = home / "venv"
    base_python = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base_python, "-m", "venv", str(venv)], check=True)
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    pip = subprocess.run([str(venv / "bin" / "python"), "-I", "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", "--no-index", "--no-deps", str(wheel)],
                         cwd=home, env=env, capture_output=True, text=True)
    assert pip.returncode == 0, pip.stderr
    yield wheel, home, venv, env
    assert processes_under(home) == []


@needs_wheel
def test_binary_is_on_the_venv_path_and_prints_its_version(installed):
    wheel, home, venv, env = installed
    assert shutil.which("toolbridge", path=env["PATH"]) == str(venv / "bin" / "toolbridge")
    out = subprocess.run(["toolbridge", "--version"], cwd=home, env=env, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    version = wheel.name.split("-")[1]
    assert out.stdout.strip() == f"toolbridge {version}"


@needs_wheel
def test_binary_glibc_floor_matches_the_wheel_tag(installed):
    wheel, _, venv, _ = installed
    major, minor = wheel_tag_floor(wheel)
    assert (major, minor) <= (2, 28), f"{wheel.name}: the floor must be manylinux_2_28 or older"
    versions, cxx, needed = glibc_needs(venv / "bin" / "toolbridge")
    assert versions and max(versions) <= (major, minor), sorted(versions)[-3:]
    assert cxx == set(), f"a C++ runtime of the host is required: {sorted(cxx)}"
    assert needed <= GLIBC_LIBS, f"host libraries needed beyond glibc: {sorted(needed - GLIBC_LIBS)}"
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".data/scripts/toolbridge") for n in names), names


@needs_wheel
def test_gateway_starts_the_bundled_binary_serves_a_call_and_stops_clean(installed):
    wheel, home, venv, env = installed
    # The fixture server, copied out of the build tree (it is not part of the wheel).
    server_dir = home / "servers"
    server_dir.mkdir()
    fixture = server_dir / "toolbridge-fixture"
    shutil.copy2(fixture_bin(), fixture)
    config = home / "servers.yaml"
    config.write_text(f"servers:\n  fixture:\n    command: {fixture}\n")
    script = home / "use_wheel.py"
    script.write_text(CLIENT_SCRIPT)
    run = subprocess.run([str(venv / "bin" / "python"), "-I", str(script), str(config)], cwd=home,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert Path(report["module"]).is_relative_to(venv), report["module"]
    bundled = str((venv / "bin" / "toolbridge").resolve())
    assert report["found"] == report["bundled"] == report["binary"] == bundled
    assert report["version"] == wheel.name.split("-")[1]
    assert "fixture__echo" in report["tools"]
    assert report["echo"] == "from the wheel"
    assert report["sum"] == "5"
    assert report["exit"] is True
    assert not Path(f"/proc/{report['pid']}").exists()
    assert processes_under(home) == []


def fake_machine(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    """A copy of scripts/setup in an empty checkout, on a PATH where dpkg knows no package and
    apt-get only writes down what it is asked: what a fresh machine would get installed."""
    checkout = tmp_path / "checkout"
    (checkout / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "setup", checkout / "scripts" / "setup")
    msgpack = checkout / ".deps" / "msgpack-cxx" / "usr" / "include"
    msgpack.mkdir(parents=True)
    (msgpack / "msgpack.hpp").write_text("")
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "apt-get.log"
    scripts = {"dpkg": "exit 1", "apt-get": f'echo "$*" >> {log}', "sudo": 'exec "$@"'}
    for name, body in scripts.items():
        (fake / name).write_text(f"#!/bin/sh\n{body}\n")
        (fake / name).chmod(0o755)
    env = {"PATH": f"{fake}:/usr/bin:/bin", "HOME": str(tmp_path)}
    return checkout, env, log


def test_setup_run_installs_only_build_and_run_dependencies(tmp_path):
    checkout, env, log = fake_machine(tmp_path)
    run = subprocess.run(["bash", "scripts/setup", "run"], cwd=checkout, env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    installs = [line.split() for line in log.read_text().splitlines() if " install " in f" {line} "]
    assert len(installs) == 1, log.read_text()
    debs = {word for word in installs[0] if not word.startswith("-") and word != "install"}
    assert BUILD_DEBS <= debs, sorted(BUILD_DEBS - debs)
    assert debs & TEST_ONLY_DEBS == set()
    # No npm package and no virtualenv either.
    assert sorted(p.name for p in checkout.iterdir()) == [".deps", "scripts"]


def test_setup_test_adds_the_test_only_dependencies(tmp_path):
    checkout, env, log = fake_machine(tmp_path)
    # It goes on to npm and the virtualenvs after the Debian packages: stop it there.
    (tmp_path / "bin" / "npm").write_text("#!/bin/sh\nexit 7\n")
    (tmp_path / "bin" / "npm").chmod(0o755)
    (checkout / "package.json").write_text("{}")
    run = subprocess.run(["bash", "scripts/setup", "test"], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 7, run.stderr
    install = next(line.split() for line in log.read_text().splitlines() if " install " in f" {line} ")
    assert TEST_ONLY_DEBS - {"nodejs", "npm"} <= set(install), sorted(TEST_ONLY_DEBS - set(install))


def test_setup_refuses_an_unknown_mode(tmp_path):
    checkout, env, _ = fake_machine(tmp_path)
    run = subprocess.run(["bash", "scripts/setup", "everything"], cwd=checkout, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "'run' or 'test'" in run.stderr
