"""Python client and helpers for the toolbridge MCP gateway.

`Client` (sync) and `AsyncClient` call tools through a running gateway over POST /v1/batch:
one kept-alive connection pool, no MCP session per call, a turn's calls in one request:

    client = toolbridge.Client("http://127.0.0.1:8080")
    client.call("fixture__echo", {"text": "hi"}).text
    client.batch([("search__web", {"q": "x"}), ("python__run", {"code": "1"})])

`Gateway` starts `toolbridge serve` as a child process on a free port and stops it cleanly, so an
evaluation or RL run can own its gateway for its lifetime:

    with toolbridge.Gateway("servers.yaml") as gw:
        run_agents(mcp_url=gw.url)          # http://127.0.0.1:PORT/mcp

Trajectories: a call carrying `meta=toolbridge.trajectory(traj_id)` runs on the `per_session`
instances of that trajectory (one client connection can drive many); `release(url, traj_id)`
frees them when the trajectory is done, reward computation included.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

from .client import (AsyncClient, AsyncTrajectory, CallResult, Client, Timing, ToolCall, Trajectory,
                     TrajectoryFaults, TrajectoryTokens)
from .errors import (CallCancelled, CallFailed, CallTimeout, ConnectionFailed, InvalidCall, Overloaded,
                     RequestRejected, ServerError, ServerUnavailable, ToolbridgeError, ToolError,
                     TrajectoryRefused, Unauthorized, CallForbidden, Forbidden)
from .parse import ParsedCall, ParseResult, ParseStream, Unparsed
from .tasks import AsyncTask, Task, TaskFailed

__all__ = ["AsyncClient", "AsyncTask", "AsyncTrajectory", "Task", "TaskFailed", "CallCancelled", "CallFailed", "CallForbidden", "CallResult",
           "CallTimeout", "Client", "ConnectionFailed", "Forbidden", "Gateway", "GatewayError", "InvalidCall",
           "Overloaded", "ParseResult", "ParseStream", "ParsedCall", "RequestRejected", "ServerError",
           "ServerUnavailable", "Timing", "ToolCall", "ToolError", "ToolbridgeError", "Trajectory",
           "TrajectoryFaults", "TrajectoryRefused", "TrajectoryTokens", "Unauthorized", "Unparsed", "bundled_binary",
           "find_binary", "release", "trajectory"]
__version__ = "0.1.0"


class GatewayError(ToolbridgeError, RuntimeError):
    """The gateway could not be started, or stopped with an error."""


def bundled_binary() -> str | None:
    """The `toolbridge` binary installed with this package (the platform wheel puts it in the
    environment's scripts folder, e.g. the venv's bin/), or None for the pure-Python install."""
    try:
        dist = importlib.metadata.distribution("toolbridge")
        files = dist.files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files:
        if entry.name == "toolbridge" and entry.parent.name in ("bin", "Scripts"):
            path = Path(dist.locate_file(entry)).resolve()
            if path.is_file() and os.access(path, os.X_OK):
                return str(path)
    return None


def find_binary() -> str:
    """`$TOOLBRIDGE_BIN`, else the binary installed with this package (the wheel's), else
    `toolbridge` on PATH, else the repository's build/ directory (a source checkout)."""
    env = os.environ.get("TOOLBRIDGE_BIN")
    if env:
        return env
    bundled = bundled_binary()
    if bundled:
        return bundled
    on_path = shutil.which("toolbridge")
    if on_path:
        return on_path
    repo_build = Path(__file__).resolve().parents[2] / "build" / "toolbridge"
    if repo_build.is_file():
        return str(repo_build)
    raise GatewayError("toolbridge binary not found: install the toolbridge wheel (it bundles the "
                       "binary), set TOOLBRIDGE_BIN, or put toolbridge on PATH")


def trajectory(name: str) -> dict:
    """`_meta` for a tool call that belongs to trajectory `name` (per_session affinity):
    `session.call_tool(tool, args, meta=toolbridge.trajectory(traj_id))`."""
    if not isinstance(name, str) or not 1 <= len(name) <= 256:
        raise ValueError("a trajectory name is a string of 1 to 256 characters")
    return {"toolbridge/session": name}


def release(url: str, name: str, timeout: float = 30.0, *, token: str | None = None) -> int:
    """Stops the per_session instances of trajectory (or MCP session) `name` on the gateway at
    `url` (its /mcp URL or base URL) and removes their directories; returns how many. `token`:
    the gateway's API key, if it needs one."""
    base = url[: -len("/mcp")] if url.endswith("/mcp") else url.rstrip("/")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{base}/sessions/{urllib.parse.quote(name, safe='')}",
                                     method="DELETE", headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return int(json.load(r)["released"])


class Gateway:
    """A `toolbridge serve` process bound to 127.0.0.1 on a free port.

    `config` is a YAML or mcpServers JSON file (None: the embedded default config).
    `wait_ready` waits until every configured server is ready (or `timeout` passes).
    """

    def __init__(self, config: str | os.PathLike | None = None, *, binary: str | None = None,
                 host: str = "127.0.0.1", timeout: float = 60.0, wait_ready: bool = True,
                 log_level: str = "warn") -> None:
        self.config = None if config is None else os.fspath(config)
        self.binary = binary or find_binary()
        self.host = host
        self.timeout = timeout
        self.wait_ready = wait_ready
        self.log_level = log_level
        self.process: subprocess.Popen | None = None
        self.port: int | None = None
        self._stderr_tail: list[str] = []
        self._client: Client | None = None

    @property
    def client(self) -> Client:
        """A `Client` on this gateway, made on first use and closed by `stop()`."""
        if self._client is None:
            self._client = Client(self.base_url)
        return self._client

    def async_client(self, **kw) -> AsyncClient:
        """A new `AsyncClient` on this gateway (one per event loop; close it, or `async with`)."""
        return AsyncClient(self.base_url, **kw)

    @property
    def url(self) -> str:
        """The MCP endpoint (Streamable HTTP)."""
        return f"{self.base_url}/mcp"

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise GatewayError("the gateway is not running")
        return f"http://{self.host}:{self.port}"

    def release(self, name: str) -> int:
        """Frees trajectory `name`'s per_session instances now; see `toolbridge.release`."""
        return release(self.base_url, name)

    def health(self) -> dict:
        with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=5) as r:
            return json.load(r)

    def start(self) -> "Gateway":
        cmd = [self.binary, "serve", "--listen", f"{self.host}:0", "--log-level", self.log_level]
        if self.config:
            cmd += ["--config", self.config]
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1)
        drain = threading.Thread(target=self._drain_stderr, daemon=True)
        drain.start()
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.process.wait(timeout=10)
            drain.join(timeout=5)
            raise GatewayError(f"toolbridge did not start (exit {self.process.returncode}): "
                               + " | ".join(self._stderr_tail[-5:]))
        self.port = int(line.rsplit(":", 1)[1])
        if self.wait_ready:
            self._wait_ready()
        return self

    def stop(self, grace: float = 15.0) -> int:
        """SIGTERM, then SIGKILL after `grace` seconds; returns the exit code."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        code = self.process.returncode
        self.process = None
        self.port = None
        return code

    def __enter__(self) -> "Gateway":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            health = self.health()
            states = {name: s["state"] for name, s in health["servers"].items()}
            if all(state in ("ready", "disabled") for state in states.values()):
                return
            if time.monotonic() > deadline:
                raise GatewayError(f"servers not ready after {self.timeout} s: {states}")
            time.sleep(0.05)

    def _drain_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr_tail.append(line.rstrip())
            del self._stderr_tail[:-50]
