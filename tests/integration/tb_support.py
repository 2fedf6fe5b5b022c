"""Helpers shared by the integration tests: locating binaries and real servers, writing configs,
running a gateway with leak checks, scanning /proc, and a hand-written Streamable HTTP client."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import httpx

REPO = Path(__file__).resolve().parents[2]
BUILD_DIR = Path(os.environ.get("TOOLBRIDGE_BUILD_DIR", REPO / "build")).resolve()
NODE_MODULES = REPO / "node_modules"
VENV_BIN = REPO / ".venv" / "bin"

LISTEN_RE = re.compile(r"^listening on (https?://127\.0\.0\.1:(\d+))$")
ACCEPT_BOTH = "application/json, text/event-stream"
PROTOCOL_VERSIONS = ("2025-03-26", "2025-06-18", "2025-11-25")


class MissingDependency(AssertionError):
    """A binary or package the integration tests need is not installed (not a skip: a failure)."""


def _require(path: Path, what: str, hint: str) -> Path:
    if not path.exists():
        raise MissingDependency(f"{what} not found at {path}: {hint}")
    return path


def toolbridge_bin() -> Path:
    return _require(BUILD_DIR / "toolbridge", "toolbridge binary",
                    "build it (cmake) or set TOOLBRIDGE_BUILD_DIR to the build directory")


def fixture_bin() -> Path:
    return _require(BUILD_DIR / "toolbridge-fixture", "toolbridge-fixture binary",
                    "build it (cmake) or set TOOLBRIDGE_BUILD_DIR to the build directory")


def node_bin() -> str:
    import shutil

    node = shutil.which("node")
    if node is None:
        raise MissingDependency("node not found on PATH: run scripts/setup")
    return node


def npm_entry(package: str) -> Path:
    """The `bin` entry point of an installed npm package (dist/index.js for the reference servers)."""
    pkg_dir = _require(NODE_MODULES / package, f"npm package {package}", "run scripts/setup")
    meta = json.loads((pkg_dir / "package.json").read_text())
    bin_field = meta.get("bin")
    if isinstance(bin_field, dict):
        rel = next(iter(bin_field.values()))
    elif isinstance(bin_field, str):
        rel = bin_field
    else:
        rel = meta.get("main", "dist/index.js")
    return _require(pkg_dir / rel, f"entry point of {package}", "run scripts/setup")


# ---- server specs (the `servers:` entries of a config) ----------------------------------------

def fixture_server(*args: str, **extra: Any) -> dict:
    return {"command": str(fixture_bin()), "args": list(args), **extra}


def everything_server(**extra: Any) -> dict:
    return {"command": node_bin(),
            "args": [str(npm_entry("@modelcontextprotocol/server-everything")), "stdio"], **extra}


def filesystem_server(allowed_dir: Path, **extra: Any) -> dict:
    return {"command": node_bin(),
            "args": [str(npm_entry("@modelcontextprotocol/server-filesystem")), str(allowed_dir)], **extra}


def memory_server(memory_file: Path, **extra: Any) -> dict:
    return {"command": node_bin(), "args": [str(npm_entry("@modelcontextprotocol/server-memory"))],
            "env": {"MEMORY_FILE_PATH": str(memory_file)}, **extra}


def time_server(**extra: Any) -> dict:
    exe = _require(VENV_BIN / "mcp-server-time", "mcp-server-time", "run scripts/setup (creates .venv)")
    return {"command": str(exe), "args": [], **extra}


# ---- config writing ---------------------------------------------------------------------------

_PLAIN = re.compile(r"^[A-Za-z_/.][A-Za-z0-9_./@+-]*$")
_YAML_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _YAML_RESERVED:
        return text
    return json.dumps(text)  # a JSON string is a valid YAML double-quoted scalar


def to_yaml(value: Any, indent: int = 0) -> str:
    """Block-style YAML for dicts/lists/scalars: enough for toolbridge configs."""
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(value, dict):
        if not value:
            return pad + "{}\n"
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{_yaml_scalar(key)}:\n{to_yaml(item, indent + 1)}")
            elif isinstance(item, (dict, list)):
                lines.append(f"{pad}{_yaml_scalar(key)}: {'{}' if isinstance(item, dict) else '[]'}\n")
            else:
                lines.append(f"{pad}{_yaml_scalar(key)}: {_yaml_scalar(item)}\n")
        return "".join(lines)
    if isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                body = to_yaml(item, indent + 1).lstrip()
                lines.append(f"{pad}- {body}")
            else:
                lines.append(f"{pad}- {_yaml_scalar(item)}\n")
        return "".join(lines)
    return pad + _yaml_scalar(value) + "\n"


def write_config(directory: Path, servers: dict, gateway: dict | None = None, fmt: str = "yaml",
                 name: str = "toolbridge") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        doc: dict[str, Any] = {"mcpServers": servers}
        if gateway:
            doc["toolbridge"] = gateway
        path = directory / f"{name}.json"
        path.write_text(json.dumps(doc, indent=2))
    else:
        doc = {}
        if gateway:
            doc["gateway"] = gateway
        doc["servers"] = servers
        path = directory / f"{name}.yaml"
        path.write_text(to_yaml(doc))
    return path


# ---- /proc scanning ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgrp: int
    state: str
    starttime: int
    comm: str


def read_proc(pid: int) -> ProcInfo | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    lp, rp = raw.index("("), raw.rindex(")")
    rest = raw[rp + 2:].split()
    return ProcInfo(pid=pid, ppid=int(rest[1]), pgrp=int(rest[2]), state=rest[0],
                    starttime=int(rest[19]), comm=raw[lp + 1:rp])


def proc_table() -> dict[int, ProcInfo]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = read_proc(int(entry))
            if info is not None:
                table[info.pid] = info
    return table


def descendants(root: int) -> list[ProcInfo]:
    """All live processes below `root`, plus members of process groups led by one of them."""
    table = proc_table()
    children: dict[int, list[int]] = {}
    for info in table.values():
        children.setdefault(info.ppid, []).append(info.pid)
    found: dict[int, ProcInfo] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found[child] = table[child]
                stack.append(child)
    leaders = set(found)
    for info in table.values():
        if info.pgrp in leaders and info.pid not in found and info.pid != root:
            found[info.pid] = info
    return [p for p in found.values() if p.state != "Z"]


def is_alive(proc: ProcInfo) -> bool:
    """Same process (pid + start time) still exists and is not a zombie."""
    now = read_proc(proc.pid)
    return now is not None and now.starttime == proc.starttime and now.state != "Z"


def wait_gone(procs: Iterable[ProcInfo], timeout: float) -> list[ProcInfo]:
    procs = list(procs)
    deadline = time.monotonic() + timeout
    while True:
        alive = [p for p in procs if is_alive(p)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def kill_procs(procs: Iterable[ProcInfo]) -> None:
    """Last-resort cleanup of processes this test run started (checked by start time)."""
    for p in procs:
        if is_alive(p):
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_listening(port: int, proc: subprocess.Popen, what: str, timeout: float = 30) -> None:
    """Returns once 127.0.0.1:port accepts a connection; fails if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, f"{what} did not listen"
            time.sleep(0.1)


def describe(procs: Iterable[ProcInfo]) -> str:
    out = []
    for p in procs:
        try:
            cmd = Path(f"/proc/{p.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = p.comm
        out.append(f"pid {p.pid} (ppid {p.ppid}, state {p.state}): {cmd.strip()}")
    return "\n".join(out)


# ---- the gateway process ----------------------------------------------------------------------

class Gateway:
    """One `toolbridge serve` process on port 0; `close()` stops it and checks for leaked children."""

    def __init__(self, workdir: Path, servers: dict, gateway: dict | None = None, fmt: str = "yaml",
                 extra_args: Iterable[str] = ()):
        self.workdir = workdir
        self.servers = servers
        self.config_path = write_config(workdir, servers, gateway, fmt)
        self.stderr_path = workdir / "gateway.stderr.log"
        self.extra_args = list(extra_args)
        self.proc: subprocess.Popen | None = None
        self.base_url = ""
        self.extra_stdout: list[str] = []
        self._stdout_lines: queue.Queue[str | None] = queue.Queue()
        self.returncode: int | None = None
        self.verify: Any = True  # httpx's `verify` for /healthz and /metrics (a CA file with TLS)
        self.headers: dict[str, str] = {}  # sent to /healthz and /metrics (an API key)

    # -- lifecycle --
    def start(self, listen_timeout: float = 30.0) -> "Gateway":
        cmd = [str(toolbridge_bin()), "serve", "--config", str(self.config_path),
               "--listen", "127.0.0.1:0", *self.extra_args]
        self._stderr_file = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self._stderr_file, cwd=self.workdir)
        threading.Thread(target=self._drain_stdout, daemon=True).start()
        deadline = time.monotonic() + listen_timeout
        first: str | None = None
        while time.monotonic() < deadline:
            try:
                first = self._stdout_lines.get(timeout=0.1)
            except queue.Empty:
                continue
            break
        if first is None:
            self.kill_quietly()
            exited = self.proc.poll()
            raise AssertionError(
                (f"gateway exited with {exited} before printing 'listening on ...'" if exited is not None
                 else f"gateway did not print 'listening on ...' within {listen_timeout}s") +
                f"\ncommand: {' '.join(cmd)}\n"
                f"config:\n{self.config_path.read_text()}\nstderr:\n{self.stderr_tail()}")
        match = LISTEN_RE.match(first.rstrip("\r\n"))
        if not match:
            self.kill_quietly()
            raise AssertionError(f"first stdout line is not 'listening on http://127.0.0.1:PORT': {first!r}\n"
                                 f"stderr:\n{self.stderr_tail()}")
        self.base_url = match.group(1)
        self.port = int(match.group(2))
        assert self.port != 0
        return self

    def _drain_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        first = True
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            if first:
                self._stdout_lines.put(line)
                first = False
            else:
                self.extra_stdout.append(line)
        if first:
            self._stdout_lines.put(None)

    @property
    def mcp_url(self) -> str:
        return self.base_url + "/mcp"

    def stderr_tail(self, n: int = 80) -> str:
        try:
            lines = self.stderr_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "<no stderr>"
        return "\n".join(lines[-n:])

    def health(self) -> dict:
        resp = httpx.get(self.base_url + "/healthz", timeout=10, verify=self.verify, headers=self.headers)
        try:
            return resp.json()
        except ValueError as exc:
            raise AssertionError(f"/healthz is not JSON (HTTP {resp.status_code}): {resp.text[:500]!r}") from exc

    def metrics(self) -> str:
        resp = httpx.get(self.base_url + "/metrics", timeout=10, verify=self.verify, headers=self.headers)
        assert resp.status_code == 200, f"/metrics answered HTTP {resp.status_code}"
        return resp.text

    def wait_health(self, predicate, timeout: float, what: str) -> dict:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"gateway exited with {self.proc.returncode} while waiting for {what}\n"
                                     f"stderr:\n{self.stderr_tail()}")
            try:
                last = self.health()
                if predicate(last):
                    return last
            except (httpx.HTTPError, AssertionError) as exc:
                last = repr(exc)
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; last /healthz: "
                             f"{json.dumps(last, indent=1) if isinstance(last, dict) else last}\n"
                             f"stderr:\n{self.stderr_tail()}")

    def wait_ready(self, names: Iterable[str] | None = None, timeout: float = 60.0) -> dict:
        names = list(self.servers if names is None else names)

        def ready(h: dict) -> bool:
            servers = h.get("servers", {})
            return all(servers.get(n, {}).get("state") == "ready" for n in names)

        return self.wait_health(ready, timeout, f"servers {names} ready")

    def descendants(self) -> list[ProcInfo]:
        assert self.proc is not None
        return descendants(self.proc.pid)

    def kill_quietly(self) -> None:
        if self.proc is None:
            return
        before = descendants(self.proc.pid) if self.proc.poll() is None else []
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        kill_procs(before)
        self._close_files()

    def _close_files(self) -> None:
        f = getattr(self, "_stderr_file", None)
        if f is not None and not f.closed:
            f.close()

    def close(self, check: bool = True, term_timeout: float = 15.0, child_timeout: float = 5.0) -> None:
        """SIGTERM, wait, SIGKILL if needed; then assert it exited 0 and left no process behind."""
        if self.proc is None:
            return
        problems: list[str] = []
        before: list[ProcInfo] = []
        if self.proc.poll() is None:
            before = self.descendants()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.returncode = self.proc.wait(term_timeout)
            except subprocess.TimeoutExpired:
                problems.append(f"gateway did not exit within {term_timeout}s of SIGTERM; sent SIGKILL")
                self.proc.kill()
                self.returncode = self.proc.wait()
            if self.returncode != 0 and not problems:
                problems.append(f"gateway exited with {self.returncode} after SIGTERM, expected 0")
        else:
            self.returncode = self.proc.returncode
        leftovers = wait_gone(before, child_timeout)
        if leftovers:
            problems.append(f"processes left behind after the gateway exited:\n{describe(leftovers)}")
            kill_procs(leftovers)
        if self.extra_stdout:
            problems.append("gateway wrote to stdout after the listening line (logs belong on stderr): "
                            + repr("".join(self.extra_stdout)[:500]))
        self._close_files()
        self.proc = None
        if check and problems:
            raise AssertionError("\n".join(problems) + f"\nstderr:\n{self.stderr_tail()}")


def start_gateway(workdir: Path, servers: dict, gateway: dict | None = None, fmt: str = "yaml",
                  ready: Iterable[str] | None = None, ready_timeout: float = 60.0) -> Gateway:
    gw = Gateway(workdir, servers, gateway, fmt)
    gw.start()
    try:
        gw.wait_ready(ready, ready_timeout)
    except BaseException:
        gw.kill_quietly()
        raise
    return gw


# ---- hand-written Streamable HTTP client ------------------------------------------------------

def parse_sse(body: str) -> list[dict]:
    """JSON-RPC messages carried by `data:` lines of an SSE body (events without data are skipped)."""
    messages = []
    for event in re.split(r"\r\n\r\n|\n\n|\r\r", body):
        data = []
        for line in re.split(r"\r\n|\n|\r", event):
            if line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
        payload = "\n".join(data).strip()
        if payload:
            messages.append(json.loads(payload))
    return messages


def parse_body(resp: httpx.Response) -> list[Any]:
    """Messages of a POST answer: JSON body (object or batch array) or an SSE stream."""
    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "text/event-stream":
        return parse_sse(resp.text)
    if ctype == "application/json":
        doc = resp.json()
        return doc if isinstance(doc, list) else [doc]
    if not resp.content:
        return []
    raise AssertionError(f"unexpected content-type {ctype!r} (HTTP {resp.status_code}): {resp.text[:300]!r}")


def response_for(messages: list[Any], req_id: Any) -> dict:
    for m in messages:
        if isinstance(m, dict) and "method" not in m and m.get("id") == req_id:
            return m
    raise AssertionError(f"no response with id {req_id!r} among {json.dumps(messages)[:1000]}")


def rpc(method: str, params: dict | None = None, req_id: Any = None) -> dict:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if req_id is not None:
        msg["id"] = req_id
    return msg


def initialize_params(version: str, name: str = "toolbridge-it") -> dict:
    return {"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": name, "version": "0.0.1"}}


def headers_for(session_id: str | None, version: str | None, **extra: str) -> dict:
    h = {"Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
    if session_id:
        h["Mcp-Session-Id"] = session_id
    if version and version != "2025-03-26":  # the header exists since 2025-06-18
        h["MCP-Protocol-Version"] = version
    h.update(extra)
    return h


@dataclass
class RawSession:
    """A downstream MCP session driven by hand over a sync httpx.Client."""

    url: str
    version: str = "2025-06-18"
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=60))
    session_id: str | None = None
    init_result: dict | None = None

    def post(self, body: Any, **extra_headers: str) -> httpx.Response:
        content = body if isinstance(body, (bytes, str)) else json.dumps(body)
        return self.client.post(self.url, content=content,
                                headers=headers_for(self.session_id, self.version, **extra_headers))

    def initialize(self) -> "RawSession":
        resp = self.client.post(self.url, content=json.dumps(rpc("initialize", initialize_params(self.version), 0)),
                                headers=headers_for(None, None))
        assert resp.status_code == 200, f"initialize: HTTP {resp.status_code} {resp.text[:300]!r}"
        answer = response_for(parse_body(resp), 0)
        assert "result" in answer, f"initialize failed: {answer}"
        self.init_result = answer["result"]
        assert self.init_result["protocolVersion"] == self.version, self.init_result
        self.session_id = resp.headers.get("mcp-session-id")
        assert self.session_id, "initialize answer has no Mcp-Session-Id header"
        note = self.post(rpc("notifications/initialized"))
        assert note.status_code == 202, f"notifications/initialized: HTTP {note.status_code} {note.text[:300]!r}"
        return self

    def request(self, method: str, params: dict | None, req_id: Any) -> dict:
        resp = self.post(rpc(method, params, req_id))
        assert resp.status_code == 200, f"{method}: HTTP {resp.status_code} {resp.text[:300]!r}"
        return response_for(parse_body(resp), req_id)

    def call_tool(self, name: str, arguments: dict, req_id: Any = 1) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments}, req_id)

    def close(self) -> None:
        self.client.close()


def text_of(result: dict) -> str:
    """Concatenated text content of a CallToolResult dict."""
    return "".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")


def metric(gw, name: str, **labels: str) -> float:
    """The sum of a gateway's metric `name` over the series whose labels include `labels`."""
    total = 0.0
    for line in gw.metrics().splitlines():
        m = re.match(rf"^{name}(?:\{{(.*)\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in labels.items()):
            total += float(m.group(2))
    return total


class Bystander(threading.Thread):
    """A well-behaved caller beside a misbehaving one: its own session calls `tool` (an echo) every
    50 ms until stop(), keeping each call's latency and any call not answered with its text."""

    def __init__(self, mcp_url: str, tool: str, version: str):
        super().__init__()
        self.mcp_url, self.tool, self.version = mcp_url, tool, version
        self.failures: list[str] = []
        self.latencies: list[float] = []
        self._halt = threading.Event()

    def run(self) -> None:
        b = RawSession(self.mcp_url, version=self.version).initialize()
        i = 0
        while not self._halt.is_set():
            started = time.monotonic()
            answer = b.call_tool(self.tool, {"text": f"b{i}"}, 1000 + i)
            self.latencies.append(time.monotonic() - started)
            if "result" not in answer or text_of(answer["result"]) != f"b{i}":
                self.failures.append(str(answer)[:200])
            i += 1
            time.sleep(0.05)
        b.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(60)


def stateless_task_rpc(url: str, method: str, params: dict, tenant: str = "team-a",
                       caps: dict | None = None, req_id: int = 1) -> dict:
    """One 2026-07-28 (stateless) request on a new connection (nothing ties a task to one), its
    client declaring the tasks extension unless `caps` says otherwise; the answer to it."""
    version, tasks = "2026-07-28", "io.modelcontextprotocol/tasks"
    caps = {"extensions": {tasks: {}}} if caps is None else caps
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": version, "Mcp-Method": method, "X-Toolbridge-Tenant": tenant}
    name = params.get("taskId") if method.startswith("tasks/") else params.get("name")
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    meta = {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": caps}
    body = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": {**params, "_meta": meta}}
    with httpx.Client() as client:
        resp = client.post(url, content=json.dumps(body), headers=headers, timeout=60)
    for m in parse_body(resp):
        if m.get("id") == req_id:
            return m
    raise AssertionError(f"no answer: {resp.status_code} {resp.text[:500]}")


def stop_process(proc: subprocess.Popen, grace: float = 10) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
