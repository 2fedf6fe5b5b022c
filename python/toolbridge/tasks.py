"""Tool calls run as tasks of the MCP tasks extension (docs/tasks.md): started now, collected
later — from another connection, another process, after this one was restarted.

    task = client.start("build__run", {"target": "all"})   # returns at once
    task.status()         # "working", "input_required", "completed", "failed", "cancelled"
    result = task.result()                                  # waits; a CallResult
    client.task(task.id).cancel()                           # by id, from anywhere of the tenant

The gateway runs a tool as a task when its server marks it (``execution.taskSupport``) or its
``task_tools`` config names it; another tool, or a call that ends within 100 ms, is answered at
once: the Task is then already completed and has no ``id``."""

from __future__ import annotations

import json
from typing import Any, Mapping

from .errors import ToolbridgeError

__all__ = ["Task", "AsyncTask", "TaskFailed", "TERMINAL", "batch_tasks"]

VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class TaskFailed(ToolbridgeError):
    """A task method was refused (unknown or expired task id, too many tasks): ``code``, ``message``."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def rpc_body(method: str, params: Mapping[str, Any], req_id: int) -> bytes:
    meta = {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXTENSION: {}}},
            "io.modelcontextprotocol/clientInfo": {"name": "toolbridge-python", "version": "0.1.0"}}
    body = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": {**params, "_meta": meta}}
    return json.dumps(body, separators=(",", ":")).encode()


def rpc_headers(method: str, name: str, tenant: str | None) -> dict[str, str]:
    h = {"Content-Type": "application/json", "Accept": "application/json",
         "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name.isascii() and name.isprintable() and name == name.strip():
        h["Mcp-Name"] = name
    else:
        import base64
        h["Mcp-Name"] = "=?base64?" + base64.b64encode(name.encode()).decode() + "?="
    if tenant:
        h["X-Toolbridge-Tenant"] = tenant
    return h


def rpc_result(status: int, raw: bytes) -> dict[str, Any]:
    try:
        msg = json.loads(raw)
    except ValueError as exc:
        raise ToolbridgeError(f"the gateway's answer is not JSON (HTTP {status}): {raw[:200]!r}") from exc
    if "error" in msg:
        err = msg["error"] or {}
        raise TaskFailed(err.get("code"), str(err.get("message", "")))
    return msg.get("result") or {}


def call_result(tool: str, state: Mapping[str, Any]):
    """A finished task as a CallResult: completed → ``ok`` (``tool_error`` when isError),
    failed → ``failed`` with the error, cancelled → ``cancelled``."""
    from .client import CallResult, Timing
    status = state.get("status")
    result = state.get("result")
    if status == "completed" and isinstance(result, dict):
        outcome = "tool_error" if result.get("isError") else "ok"
        fault = "tool" if result.get("isError") else "ok"
        return CallResult(tool, outcome, result, None, Timing(0.0, 0.0, 0.0), fault)
    error = state.get("error") if status == "failed" else {"code": -32800, "message": "the task was cancelled"}
    return CallResult(tool, str(status), None, error, Timing(0.0, 0.0, 0.0), "infra" if status == "failed" else "agent")


class _TaskBase:
    def __init__(self, client: Any, tool: str, task_id: str | None, state: dict[str, Any]) -> None:
        self._client = client
        self.tool = tool
        self.id = task_id  # None: the call was answered at once, no task was made
        self._state = state

    @property
    def poll_interval(self) -> float:
        return max(0.05, float(self._state.get("pollIntervalMs", 500)) / 1000)

    def __repr__(self) -> str:
        return f"<Task {self.tool} id={self.id} status={self._state.get('status')}>"


class Task(_TaskBase):
    """A call running as a task in the gateway (Client.start / Client.task)."""

    def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self._client._rpc(method, params, self.id or "")

    def status(self) -> str:
        """The task's status now (one tasks/get)."""
        if self.id is not None and self._state.get("status") not in TERMINAL:
            self._state = self._rpc("tasks/get", {"taskId": self.id})
        return str(self._state.get("status"))

    def result(self, timeout: float | None = None):
        """Waits for the task to end (polling tasks/get) and returns its CallResult; raises
        TimeoutError after ``timeout`` seconds."""
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.status() not in TERMINAL:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"task {self.id} still {self._state.get('status')} after {timeout} s")
            time.sleep(self.poll_interval)
        return call_result(self.tool, self._state)

    def cancel(self) -> None:
        """Cancels the call upstream (nothing happens to a task that has ended)."""
        if self.id is not None:
            self._rpc("tasks/cancel", {"taskId": self.id})

    def update(self, input_responses: Mapping[str, Any]) -> None:
        """Answers the task's ``input_required`` requests (keys as tasks/get lists them)."""
        self._rpc("tasks/update", {"taskId": self.id, "inputResponses": dict(input_responses)})


class AsyncTask(_TaskBase):
    """Task for AsyncClient: the same methods as coroutines."""

    async def _rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await self._client._rpc(method, params, self.id or "")

    async def status(self) -> str:
        if self.id is not None and self._state.get("status") not in TERMINAL:
            self._state = await self._rpc("tasks/get", {"taskId": self.id})
        return str(self._state.get("status"))

    async def result(self, timeout: float | None = None):
        import asyncio
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        while await self.status() not in TERMINAL:
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"task {self.id} still {self._state.get('status')} after {timeout} s")
            await asyncio.sleep(self.poll_interval)
        return call_result(self.tool, self._state)

    async def cancel(self) -> None:
        if self.id is not None:
            await self._rpc("tasks/cancel", {"taskId": self.id})

    async def update(self, input_responses: Mapping[str, Any]) -> None:
        await self._rpc("tasks/update", {"taskId": self.id, "inputResponses": dict(input_responses)})


def started(task_cls: type, client: Any, tool: str, result: dict[str, Any]):
    """The Task a tools/call answer describes: a CreateTaskResult, or an immediate result."""
    if result.get("resultType") == "task":
        return task_cls(client, tool, result.get("taskId"), result)
    if result.get("resultType") == "input_required":
        raise ToolbridgeError(f"{tool} asks for input before it can start (input_required); "
                              "answer it over MCP, not through start()")
    return task_cls(client, tool, None, {"status": "completed", "result": result})


def batch_tasks(task_cls: type, client: Any, resp: Any) -> list:
    """The Tasks of a /v1/batch mode "tasks" answer, in call order."""
    if resp.status != 200:
        from .errors import rejected
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    out = []
    for e in json.loads(resp.body)["tasks"]:
        if e.get("task_id"):
            out.append(task_cls(client, e.get("tool", ""), e["task_id"], {"status": e.get("status", "working")}))
        else:
            error = {"code": None, "message": (e.get("error") or {}).get("message", ""), "outcome": e.get("outcome")}
            out.append(task_cls(client, e.get("tool", ""), None, {"status": "failed", "error": error}))
    return out
