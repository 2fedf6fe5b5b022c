"""The container image is real: scripts/build-image builds deploy/container/Dockerfile's image
without an engine (mmdebstrap + umoci; this machine has no Docker daemon), and the image's own
root filesystem, unpacked from its OCI layout, runs the gateway with the image's own command and
user (unshare + chroot: new PID and mount namespaces, the host's loopback network), answering
/healthz, refusing a call without the token and serving one with it, and stopping cleanly on the
image's stop signal.

The fast tests check what keeps the Dockerfile and the script in step: the script refuses any
instruction it would not carry out, packages.txt holds every library the binaries link against,
and the image's default config passes check-config. The image test builds a Debian root
filesystem from the network's Debian mirror: about 2.5 minutes here (see docs/deployment.md, "Container
image")."""

from __future__ import annotations

import importlib.machinery
import json
import os
import re
import shutil
import signal
import subprocess
import time
import types
from pathlib import Path

import httpx
import pytest

from tb_support import toolbridge_bin

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "0123456789abcdef0123456789abcdef"
# The image holds the release build (scripts/build, GCC). The sanitized builds link differently
# (clang's also needs libboost_container) and are no image's contents: their run skips these.
release_build_only = pytest.mark.skipif(bool(os.environ.get("TOOLBRIDGE_SANITIZED")),
                                        reason="the image is made of the release build, not a sanitized one")


def build_image_module() -> types.ModuleType:
    loader = importlib.machinery.SourceFileLoader("build_image", str(ROOT / "scripts/build-image"))
    module = types.ModuleType(loader.name)
    module.__file__ = loader.path
    loader.exec_module(module)
    return module


def dockerfile() -> str:
    return (ROOT / "deploy/container/Dockerfile").read_text()


def test_the_script_carries_out_every_instruction_of_the_dockerfile_and_refuses_others():
    bi = build_image_module()
    build_dir = toolbridge_bin().parent
    plan = bi.Plan(dockerfile(), build_dir)
    assert plan.suite == "bookworm"
    assert plan.packages == bi.packages() and "libhiredis0.14" in plan.packages
    copied = {(str(s), dest) for sources, dest in plan.copies for s in sources}
    assert copied == {(str(build_dir / "toolbridge"), "/usr/local/bin/"),
                      (str(build_dir / "toolbridge-fixture"), "/usr/local/bin/"),
                      (str(ROOT / "deploy/container/toolbridge.yaml"), "/etc/toolbridge/")}
    assert "--config.user=10001:10001" in plan.config
    assert "--config.entrypoint=/usr/local/bin/toolbridge" in plan.config
    # Anything the script would not do is refused, so the Dockerfile cannot say more than it builds.
    drifts = {
        "RUN apt-get install -y curl": "the only RUN allowed",
        "WORKDIR /srv": "WORKDIR is not supported",
        "COPY build/toolbridge /usr/bin/toolbridge": "a destination directory",
        "COPY ../secret /etc/": "no such file",
        "FROM debian:trixie": "one FROM",
        'CMD serve --config x': "must be JSON arrays",
    }
    for line, message in drifts.items():
        with pytest.raises(bi.Refused, match=message):
            bi.Plan(dockerfile() + line + "\n", build_dir)


@release_build_only
def test_packages_txt_holds_every_library_the_binaries_link_against():
    listed = set(build_image_module().packages())
    base = {"libc6", "libgcc-s1"}  # Priority: required, in every Debian root filesystem
    for binary in ("toolbridge", "toolbridge-fixture"):
        ldd = subprocess.run(["ldd", str(toolbridge_bin().parent / binary)], capture_output=True,
                             text=True, check=True).stdout
        for lib in re.findall(r"=> (/\S+)", ldd):
            # dpkg knows each file under the path its package ships it at: /lib or /usr/lib.
            name = Path(os.path.realpath(lib)).name
            owner = subprocess.run(["dpkg", "-S", f"/lib/x86_64-linux-gnu/{name}",
                                    f"/usr/lib/x86_64-linux-gnu/{name}"], capture_output=True, text=True)
            assert owner.stdout, (binary, lib, owner.stderr)
            package = owner.stdout.split(":")[0]
            assert package in listed | base, f"{binary} needs {lib} from {package}: add it to packages.txt"


def test_the_image_default_config_passes_check_config(tmp_path):
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    config = tmp_path / "toolbridge.yaml"
    config.write_text((ROOT / "deploy/container/toolbridge.yaml").read_text()
                      .replace("/run/secrets/toolbridge-token", str(token)))
    env = {**os.environ, "PATH": f"{toolbridge_bin().parent}:{os.environ['PATH']}"}
    r = subprocess.run([str(toolbridge_bin()), "check-config", str(config)], env=env,
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr


def gateway_processes(rootfs: Path) -> list[int]:
    """Host pids of the processes whose root directory is `rootfs` (the gateway and its server)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.readlink(entry / "root") == str(rootfs):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def parent_of(pid: int) -> int:
    return int(re.search(r"^PPid:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1))


def uid_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))


class ImageRun:
    """The unpacked image's process, run as its OCI config says, in new PID and mount namespaces."""

    def __init__(self, bundle: Path, log: Path):
        config = json.loads((bundle / "config.json").read_text())["process"]
        self.rootfs = (bundle / "rootfs").resolve()
        user = f"{config['user']['uid']}:{config['user']['gid']}"
        env = dict(e.split("=", 1) for e in config["env"])
        # The image listens on 0.0.0.0:8848; here it shares the host's network, so a free loopback port.
        args = config["args"] + ["--listen", "127.0.0.1:0"]
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child", f"--mount-proc={self.rootfs}/proc",
             "chroot", f"--userspec={user}", str(self.rootfs), *args],
            env=env, stdout=subprocess.PIPE, stderr=log.open("w"), text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        assert m, f"the image's gateway did not start: {line!r} {log.read_text()[-2000:]}"
        self.url = m.group(1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # unshare --kill-child takes the namespace's processes with it
            self.proc.wait(10)


@release_build_only
@pytest.mark.timeout(600)
def test_the_image_serves_healthz_and_a_call_as_its_own_user(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mmdebstrap's root mode and chroot need root (CI and this machine run as root)")
    for tool in ("mmdebstrap", "umoci", "unshare", "chroot"):
        assert shutil.which(tool), f"{tool} is not installed (scripts/setup installs it)"
    out = tmp_path / "image"
    started = time.monotonic()
    r = subprocess.run([str(ROOT / "scripts/build-image"), "--out", str(out),
                        "--build-dir", str(toolbridge_bin().parent)],
                       capture_output=True, text=True, timeout=540)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    built = time.monotonic() - started
    index = json.loads((out / "oci/index.json").read_text())
    assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == "latest"

    bundle = tmp_path / "bundle"
    subprocess.run(["umoci", "unpack", "--image", f"{out}/oci:latest", str(bundle)],
                   capture_output=True, check=True, timeout=300)
    secrets = bundle / "rootfs/run/secrets"
    secrets.mkdir(parents=True, exist_ok=True)
    (secrets / "toolbridge-token").write_text(TOKEN + "\n")  # what a mounted Secret would be
    log = tmp_path / "gateway.log"
    run = ImageRun(bundle, log)
    try:
        with httpx.Client(timeout=30) as client:
            assert client.get(run.url + "/healthz").status_code == 200
            body = {"calls": [{"tool": "example__echo", "arguments": {"text": "from the image"}}]}
            assert client.post(run.url + "/v1/batch", json=body).status_code == 401
            r = client.post(run.url + "/v1/batch", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200, r.text
            result = r.json()["results"][0]
            assert result["outcome"] == "ok", result
            assert "from the image" in json.dumps(result["result"]["content"])
        pids = gateway_processes(run.rootfs)
        assert len(pids) >= 2, pids  # the gateway and its server, both inside the image's root
        assert {uid_of(p) for p in pids} == {10001}
        # The image's STOPSIGNAL (SIGTERM) to the gateway, PID 1 of its namespace: a clean stop.
        gateway = next(p for p in pids if parent_of(p) not in pids)
        os.kill(gateway, signal.SIGTERM)
        assert run.proc.wait(20) == 0, log.read_text()[-2000:]
        assert gateway_processes(run.rootfs) == []
    finally:
        run.close()
        # About 900 MB between the tarball, the layout and the unpacked bundle: not left in /tmp.
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(bundle, ignore_errors=True)
    print(f"\nimage built in {built:.0f} s")
