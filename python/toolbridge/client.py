"""The toolbridge client: one connection pool to a gateway, tool calls over POST /v1/batch.

    client = toolbridge.Client("http://127.0.0.1:8080")
    client.tools()                                   # the catalog, cached
    r = client.call("fixture__echo", {"text": "hi"}) # one call
    rs = client.batch([("search__web", {"q": "x"}), ("python__run", {"code": "1"})])
    with client.trajectory("rollout-17") as t:       # per_session state, released at the end
        t.call("memory__create_entities", {...})

No MCP session is set up per call (nor at all): a call is one HTTP request on a kept-alive
connection. ``AsyncClient`` has the same methods as coroutines."""

from __future__ import annotations

import json
import urllib.parse
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence, Union

from ._transport import AsyncTransport, Response, SyncTransport, split_url, tls_context
from .errors import ConnectionFailed, ToolbridgeError, call_failed, rejected
from .parse import ParseResult, ParseStream, parse_body, parse_result, turns_body, turns_result
from .tasks import AsyncTask, Task, batch_tasks, rpc_body, rpc_headers, rpc_result, started

__all__ = ["AsyncClient", "AsyncTrajectory", "CallResult", "Client", "Timing", "ToolCall", "Trajectory",
           "TrajectoryFaults", "TrajectoryTokens", "Task", "AsyncTask"]

_JSON = {"Content-Type": "application/json"}
_MSGPACK = {"Content-Type": "application/msgpack"}
Encoding = Literal["json", "msgpack"]


class _Codec:
    """How batch bodies are written and answers read: JSON, or MessagePack (`msgpack` package),
    which costs the client less on large results and the gateway more (docs/python.md)."""

    def __init__(self, encoding: Encoding) -> None:
        if encoding == "json":
            self.headers = _JSON
            self.dumps = lambda body: json.dumps(body, separators=(",", ":")).encode()
            self.loads = json.loads
        elif encoding == "msgpack":
            try:
                import msgpack
            except ImportError as exc:
                raise ToolbridgeError("encoding='msgpack' needs the msgpack package: pip install msgpack") from exc
            self.headers = _MSGPACK
            self.dumps = msgpack.packb
            self.loads = lambda raw: msgpack.unpackb(raw, raw=False)
        else:
            raise ValueError(f"encoding must be 'json' or 'msgpack', not {encoding!r}")


@dataclass(frozen=True)
class Timing:
    """Where a call's time went, as the gateway measured it (milliseconds)."""

    queue_ms: float
    execution_ms: float
    total_ms: float


@dataclass(frozen=True)
class ToolCall:
    """One call of a batch. A batch also takes ``(tool, arguments)`` tuples and
    ``{"tool", "arguments", "timeout_ms"}`` dicts."""

    tool: str
    arguments: Mapping[str, Any] | None = None
    timeout_ms: float | None = None


CallSpec = Union[ToolCall, Sequence[Any], Mapping[str, Any]]


@dataclass(frozen=True)
class CallResult:
    """One call's answer. ``result`` is the server's CallToolResult (also for ``tool_error``);
    ``error`` is ``{"code", "message"}`` for the other outcomes. ``fault``: whose fault a failure
    was, ``ok``, ``agent``, ``tool`` or ``infra`` (docs/faults.md)."""

    tool: str
    outcome: str
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    timing: Timing
    fault: str = "ok"

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def is_error(self) -> bool:
        return self.outcome != "ok"

    @property
    def text(self) -> str:
        """The text blocks of the result joined by newlines, or the error message: what a model
        is shown."""
        if self.result is not None:
            return "\n".join(c.get("text", "") for c in self.result.get("content", ())
                             if isinstance(c, dict) and c.get("type") == "text")
        return str((self.error or {}).get("message", self.outcome))

    @property
    def structured(self) -> Any:
        return (self.result or {}).get("structuredContent")

    def raise_for_outcome(self) -> "CallResult":
        """Raises the typed CallFailed subclass unless the outcome is ``ok``; returns self."""
        if self.outcome != "ok":
            error = self.error or {}
            raise call_failed(self.tool, self.outcome, self.text if self.result else
                              str(error.get("message", self.outcome)), error.get("code"), self.result)
        return self


def _spec(call: CallSpec) -> dict[str, Any]:
    if isinstance(call, ToolCall):
        tool, args, timeout_ms = call.tool, call.arguments, call.timeout_ms
    elif isinstance(call, Mapping):
        tool, args, timeout_ms = call["tool"], call.get("arguments"), call.get("timeout_ms")
    else:
        tool, args = call[0], (call[1] if len(call) > 1 else None)
        timeout_ms = call[2] if len(call) > 2 else None
    out: dict[str, Any] = {"tool": tool}
    if args:
        out["arguments"] = args
    if timeout_ms is not None:
        out["timeout_ms"] = timeout_ms
    return out


def _batch_body(calls: Iterable[CallSpec], trajectory: str | None, tenant: str | None,
                fail_fast: bool, sequential: bool, timeout_ms: float | None) -> dict[str, Any]:
    body: dict[str, Any] = {"calls": [_spec(c) for c in calls]}
    if trajectory:
        body["trajectory"] = trajectory
    if tenant:
        body["tenant"] = tenant
    if fail_fast:
        body["mode"] = "fail_fast"
    if sequential:
        body["sequential"] = True
    if timeout_ms is not None:
        body["timeout_ms"] = timeout_ms
    return body


def _results(resp: Response, codec: _Codec) -> list[CallResult]:
    if resp.status != 200:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    try:
        loads = codec.loads if resp.headers.get("content-type", "").endswith("msgpack") else json.loads
        entries = loads(resp.body)["results"]
    except Exception as exc:  # noqa: BLE001 - any decoder's error: the answer is not usable
        raise ToolbridgeError(f"the gateway's answer is not a batch result: {resp.body[:200]!r}") from exc
    out = []
    for e in entries:
        t = e.get("timing") or {}
        out.append(CallResult(e.get("tool", ""), e.get("outcome", ""), e.get("result"), e.get("error"),
                              Timing(t.get("queue_ms", 0.0), t.get("execution_ms", 0.0), t.get("total_ms", 0.0)),
                              e.get("fault", "ok")))
    return out


@dataclass(frozen=True)
class TrajectoryFaults:
    """A trajectory's finished calls by fault class, from the gateway's trajectory view
    (GET /v1/trajectories/NAME). ``infra_failed``: some call failed because of the gateway or a
    server's process (timeout, crash, outage, shed...), not the policy: a trainer masks such a
    trajectory instead of learning from its reward (docs/faults.md)."""

    trajectory: str
    calls: int
    ok: int
    agent: int
    tool: int
    infra: int
    infra_failed: bool


def _trajectory_faults(name: str, resp: Response) -> TrajectoryFaults:
    if resp.status == 404:
        # No call of it is known (none made, or forgotten past gateway.call_log_max_bytes).
        return TrajectoryFaults(name, 0, 0, 0, 0, 0, False)
    if resp.status != 200:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    summary = json.loads(resp.body)["summary"]
    f = summary["faults"]
    return TrajectoryFaults(name, int(summary["calls"]), int(f["ok"]), int(f["agent"]), int(f["tool"]),
                            int(f["infra"]), bool(summary["infra_failed"]))


@dataclass(frozen=True)
class TrajectoryTokens:
    """A trajectory's token records (GET /v1/trajectories/NAME/model_calls; models with
    ``record_tokens: true``): ``model_calls`` in turn order, each a dict with ``turn``,
    ``prompt_token_ids``, ``completion_token_ids``, ``completion_logprobs``, ``usage``,
    ``messages_hash``, ``worker``, ``timings``... as the worker returned them
    (docs/token-records.md). ``turns_dropped``: older turns no longer kept (the bounds)."""

    trajectory: str
    model_calls: list[dict[str, Any]]
    turns_dropped: int
    released: bool
    expires_in_s: float


def _trajectory_tokens(name: str, resp: Response, codec: "_Codec") -> TrajectoryTokens:
    if resp.status == 404:
        # None kept: no model call with record_tokens, or aged out / evicted.
        return TrajectoryTokens(name, [], 0, False, 0.0)
    if resp.status != 200:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    doc = codec.loads(resp.body)
    return TrajectoryTokens(name, list(doc["model_calls"]), int(doc["turns_dropped"]),
                            bool(doc["released"]), float(doc["expires_in_s"]))


def _tokens_path(prefix: str, name: str, codec: "_Codec") -> str:
    path = _trajectory_path(prefix, name) + "/model_calls"
    return path + "?format=msgpack" if codec.headers is _MSGPACK else path


def _trajectory_path(prefix: str, name: str) -> str:
    return f"{prefix}/v1/trajectories/{urllib.parse.quote(name, safe='')}"


def _one(results: list[CallResult], check: bool) -> CallResult:
    r = results[0]
    # A tool_error is the tool's own answer (for the model to read); only gateway faults raise.
    if check and r.outcome not in ("ok", "tool_error"):
        r.raise_for_outcome()
    return r


def _tools(resp: Response) -> list[dict[str, Any]]:
    if resp.status != 200:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    return json.loads(resp.body)["tools"]


def _released(resp: Response) -> int:
    if resp.status != 200:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    return int(json.loads(resp.body)["released"])


def new_trajectory_name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _auth_headers(token: str | None) -> dict[str, str]:
    if token is None:
        return {}
    if not token or any(c in token for c in "\r\n"):
        raise ValueError("token must be a non-empty API key on one line")
    return {"Authorization": f"Bearer {token}"}


class Client:
    """A synchronous client of one gateway (thread-safe; connections are kept alive).

    ``url``: the gateway's base URL (its /mcp URL works too). ``tenant``: sent with every
    request (X-Toolbridge-Tenant), for admission control and trajectory ownership. ``timeout``:
    seconds one HTTP request may take (calls have their own deadlines in the gateway).
    ``encoding``: "json" (default) or "msgpack" (less client CPU on large results; needs the
    msgpack package). ``token``: the gateway's API key (sent as ``Authorization: Bearer``; its
    tenant then overrides ``tenant``). ``ca_file``: for an https:// URL, the CA certificates to
    trust instead of the system's."""

    def __init__(self, url: str, *, tenant: str | None = None, timeout: float = 600.0,
                 encoding: Encoding = "json", token: str | None = None,
                 ca_file: str | None = None) -> None:
        host, port, self._prefix = split_url(url)
        self.url = f"{url.split(':', 1)[0]}://{host}:{port}{self._prefix}"
        self.tenant = tenant
        self._codec = _Codec(encoding)
        self._transport = SyncTransport(host, port, timeout, _auth_headers(token), tls_context(url, ca_file))
        self._tools: list[dict[str, Any]] | None = None

    def tools(self, refresh: bool = False) -> list[dict[str, Any]]:
        """The gateway's catalog (MCP tool definitions), fetched once and cached."""
        if self._tools is None or refresh:
            self._tools = _tools(self._transport.request("GET", self._prefix + "/v1/tools"))
        return self._tools

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None, *,
             trajectory: str | None = None, timeout_ms: float | None = None,
             check: bool = True) -> CallResult:
        """Runs one tool. A ``tool_error`` comes back as a result (``is_error``); other faults
        raise their CallFailed subclass unless ``check`` is False."""
        body = _batch_body(((tool, arguments, timeout_ms),), trajectory, self.tenant, False, False, None)
        return _one(self._post(body), check)

    def batch(self, calls: Iterable[CallSpec], *, trajectory: str | None = None,
              fail_fast: bool = False, sequential: bool = False,
              timeout_ms: float | None = None) -> list[CallResult]:
        """Runs a turn's calls in one request; results in order, one per call, never raising
        for a call's outcome (see CallResult.raise_for_outcome)."""
        return self._post(_batch_body(calls, trajectory, self.tenant, fail_fast, sequential, timeout_ms))

    def start(self, tool: str, arguments: Mapping[str, Any] | None = None) -> Task:
        """Starts ``tool`` as a task (MCP tasks extension, docs/tasks.md) and returns at once:
        ``.status()``, ``.result()``, ``.cancel()``. The task belongs to this client's tenant:
        any client of the tenant can reach it with ``task(id)``."""
        result = self._rpc("tools/call", {"name": tool, "arguments": dict(arguments or {})}, tool)
        return started(Task, self, tool, result)

    def task(self, task_id: str, tool: str = "") -> Task:
        """A task started earlier (by this client or another of the same tenant)."""
        return Task(self, tool, task_id, {"status": "working"})

    def start_batch(self, calls: Iterable[CallSpec], *, trajectory: str | None = None,
                    sequential: bool = False, timeout_ms: float | None = None) -> list[Task]:
        """A turn's calls as tasks (POST /v1/batch, mode "tasks"): answered at once, one Task
        per call in order (an entry that could not start is a Task already ``failed``)."""
        body = _batch_body(calls, trajectory, self.tenant, False, sequential, timeout_ms)
        body["mode"] = "tasks"
        resp = self._transport.request("POST", self._prefix + "/v1/batch", json.dumps(body).encode(), _JSON)
        return batch_tasks(Task, self, resp)

    def _rpc(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        self._rpc_id = getattr(self, "_rpc_id", 0) + 1
        resp = self._transport.request("POST", self._prefix + "/mcp", rpc_body(method, params, self._rpc_id),
                                       rpc_headers(method, name, self.tenant))
        return rpc_result(resp.status, resp.body)

    def trajectory(self, name: str | None = None) -> "Trajectory":
        """A named trajectory (a fresh unique name if none): its calls share per_session
        instances; released when the ``with`` block ends or on ``release()``."""
        return Trajectory(self, name or new_trajectory_name())

    def trajectory_faults(self, name: str) -> TrajectoryFaults:
        """Trajectory ``name``'s calls by fault class and whether the infrastructure failed any
        (the gateway's trajectory view; all zero if the gateway knows no call of it)."""
        return _trajectory_faults(name, self._transport.request("GET", _trajectory_path(self._prefix, name),
                                                                None, self._headers()))

    def trajectory_tokens(self, name: str) -> TrajectoryTokens:
        """Trajectory ``name``'s token records: per model call, the prompt and completion token
        ids and logprobs the worker returned, usage, worker and timings, in turn order (empty if
        none are kept). MessagePack when the client's encoding is."""
        resp = self._transport.request("GET", _tokens_path(self._prefix, name, self._codec), None,
                                       self._headers())
        return _trajectory_tokens(name, resp, self._codec)

    def release(self, name: str) -> int:
        """Frees trajectory ``name``'s per_session instances now; returns how many."""
        path = f"{self._prefix}/sessions/{urllib.parse.quote(name, safe='')}"
        return _released(self._transport.request("DELETE", path, None, self._headers()))

    def parse(self, text: str, format: str = "auto", *, execute: bool = False, render: bool = False,
              trajectory: str | None = None, timeout_ms: float | None = None,
              sequential: bool = False) -> ParseResult:
        """The tool calls in a model's output (POST /v1/parse): content, reasoning, calls as
        resolved in the catalog, and what could not be parsed, with why."""
        body = parse_body(text, format, execute, render, trajectory, self.tenant, timeout_ms, sequential)
        return parse_result(self._request("POST", "/v1/parse", body))

    def parse_and_execute(self, text: str, format: str = "auto", **kw: Any) -> ParseResult:
        """parse() that also runs the calls as one batch: each call's ``result``, the
        ``messages`` to append (role "tool"), and with render=True the format's own rendering."""
        return self.parse(text, format, execute=True, **kw)

    def parse_turns(self, turns: list[str | dict[str, Any]], format: str = "auto", *,
                    execute: bool = False, render: bool = False,
                    timeout_ms: float | None = None) -> list[ParseResult]:
        """Many turns in one request (one per trajectory of a rollout step): each a text, or a
        dict with ``text`` and its own keys (``trajectory``, ``format``...); answered in order, a
        turn that could not run with ``error`` set."""
        body = turns_body(turns, format, execute, render, self.tenant, timeout_ms)
        return turns_result(self._request("POST", "/v1/parse", body))

    def parse_stream(self, format: str = "auto", *, execute: bool = False, render: bool = False,
                     trajectory: str | None = None, timeout_ms: float | None = None) -> ParseStream:
        """A stream for output still being generated: feed(chunk) reports (and with execute
        starts) each call as soon as it is complete; finish() answers as parse() does."""
        return ParseStream(self, format, execute, render, trajectory, timeout_ms)

    def _request(self, method: str, path: str, body: bytes | None) -> Response:
        return self._transport.request(method, self._prefix + path, body, self._headers())

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        return {**_JSON, "X-Toolbridge-Tenant": self.tenant} if self.tenant else _JSON

    def _post(self, body: dict[str, Any]) -> list[CallResult]:
        c = self._codec
        return _results(self._transport.request("POST", self._prefix + "/v1/batch", c.dumps(body), c.headers), c)


class Trajectory:
    """Calls of one trajectory; ``with`` releases it at the end."""

    def __init__(self, client: Client, name: str) -> None:
        self.client, self.name = client, name
        self.released = False

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> CallResult:
        return self.client.call(tool, arguments, trajectory=self.name, **kw)

    def batch(self, calls: Iterable[CallSpec], **kw: Any) -> list[CallResult]:
        return self.client.batch(calls, trajectory=self.name, **kw)

    def faults(self) -> TrajectoryFaults:
        """Its calls by fault class and ``infra_failed`` (Client.trajectory_faults)."""
        return self.client.trajectory_faults(self.name)

    def tokens(self) -> TrajectoryTokens:
        """Its token records (Client.trajectory_tokens)."""
        return self.client.trajectory_tokens(self.name)

    def release(self) -> int:
        self.released = True
        return self.client.release(self.name)

    def __enter__(self) -> "Trajectory":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.released:
            try:
                self.release()
            except ConnectionFailed:
                pass  # the gateway is gone: so are the instances


class AsyncClient:
    """The asyncio twin of Client: the same methods, as coroutines (``async with``)."""

    def __init__(self, url: str, *, tenant: str | None = None, timeout: float = 600.0,
                 encoding: Encoding = "json", token: str | None = None,
                 ca_file: str | None = None) -> None:
        host, port, self._prefix = split_url(url)
        self.url = f"{url.split(':', 1)[0]}://{host}:{port}{self._prefix}"
        self.tenant = tenant
        self._codec = _Codec(encoding)
        self._transport = AsyncTransport(host, port, timeout, _auth_headers(token), tls_context(url, ca_file))
        self._tools: list[dict[str, Any]] | None = None

    async def tools(self, refresh: bool = False) -> list[dict[str, Any]]:
        if self._tools is None or refresh:
            self._tools = _tools(await self._transport.request("GET", self._prefix + "/v1/tools"))
        return self._tools

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None, *,
                   trajectory: str | None = None, timeout_ms: float | None = None,
                   check: bool = True) -> CallResult:
        body = _batch_body(((tool, arguments, timeout_ms),), trajectory, self.tenant, False, False, None)
        return _one(await self._post(body), check)

    async def batch(self, calls: Iterable[CallSpec], *, trajectory: str | None = None,
                    fail_fast: bool = False, sequential: bool = False,
                    timeout_ms: float | None = None) -> list[CallResult]:
        return await self._post(_batch_body(calls, trajectory, self.tenant, fail_fast, sequential, timeout_ms))

    async def start(self, tool: str, arguments: Mapping[str, Any] | None = None) -> AsyncTask:
        """Client.start as a coroutine: an AsyncTask (its methods are coroutines)."""
        result = await self._rpc("tools/call", {"name": tool, "arguments": dict(arguments or {})}, tool)
        return started(AsyncTask, self, tool, result)

    def task(self, task_id: str, tool: str = "") -> AsyncTask:
        return AsyncTask(self, tool, task_id, {"status": "working"})

    async def start_batch(self, calls: Iterable[CallSpec], *, trajectory: str | None = None,
                          sequential: bool = False, timeout_ms: float | None = None) -> list[AsyncTask]:
        body = _batch_body(calls, trajectory, self.tenant, False, sequential, timeout_ms)
        body["mode"] = "tasks"
        resp = await self._transport.request("POST", self._prefix + "/v1/batch",
                                             json.dumps(body).encode(), _JSON)
        return batch_tasks(AsyncTask, self, resp)

    async def _rpc(self, method: str, params: dict[str, Any], name: str) -> dict[str, Any]:
        self._rpc_id = getattr(self, "_rpc_id", 0) + 1
        resp = await self._transport.request("POST", self._prefix + "/mcp",
                                             rpc_body(method, params, self._rpc_id),
                                             rpc_headers(method, name, self.tenant))
        return rpc_result(resp.status, resp.body)

    def trajectory(self, name: str | None = None) -> "AsyncTrajectory":
        return AsyncTrajectory(self, name or new_trajectory_name())

    async def trajectory_faults(self, name: str) -> TrajectoryFaults:
        headers = {"X-Toolbridge-Tenant": self.tenant} if self.tenant else None
        resp = await self._transport.request("GET", _trajectory_path(self._prefix, name), None, headers)
        return _trajectory_faults(name, resp)

    async def trajectory_tokens(self, name: str) -> TrajectoryTokens:
        headers = {"X-Toolbridge-Tenant": self.tenant} if self.tenant else None
        resp = await self._transport.request("GET", _tokens_path(self._prefix, name, self._codec), None,
                                             headers)
        return _trajectory_tokens(name, resp, self._codec)

    async def release(self, name: str) -> int:
        path = f"{self._prefix}/sessions/{urllib.parse.quote(name, safe='')}"
        headers = {"X-Toolbridge-Tenant": self.tenant} if self.tenant else None
        return _released(await self._transport.request("DELETE", path, None, headers))

    async def parse(self, text: str, format: str = "auto", *, execute: bool = False,
                    render: bool = False, trajectory: str | None = None,
                    timeout_ms: float | None = None, sequential: bool = False) -> ParseResult:
        body = parse_body(text, format, execute, render, trajectory, self.tenant, timeout_ms, sequential)
        headers = {**_JSON, "X-Toolbridge-Tenant": self.tenant} if self.tenant else _JSON
        return parse_result(await self._transport.request("POST", self._prefix + "/v1/parse", body, headers))

    async def parse_and_execute(self, text: str, format: str = "auto", **kw: Any) -> ParseResult:
        return await self.parse(text, format, execute=True, **kw)

    async def parse_turns(self, turns: list[str | dict[str, Any]], format: str = "auto", *,
                          execute: bool = False, render: bool = False,
                          timeout_ms: float | None = None) -> list[ParseResult]:
        body = turns_body(turns, format, execute, render, self.tenant, timeout_ms)
        headers = {**_JSON, "X-Toolbridge-Tenant": self.tenant} if self.tenant else _JSON
        return turns_result(await self._transport.request("POST", self._prefix + "/v1/parse", body, headers))

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _post(self, body: dict[str, Any]) -> list[CallResult]:
        c = self._codec
        return _results(await self._transport.request("POST", self._prefix + "/v1/batch", c.dumps(body), c.headers), c)


class AsyncTrajectory:
    def __init__(self, client: AsyncClient, name: str) -> None:
        self.client, self.name = client, name
        self.released = False

    async def call(self, tool: str, arguments: Mapping[str, Any] | None = None, **kw: Any) -> CallResult:
        return await self.client.call(tool, arguments, trajectory=self.name, **kw)

    async def batch(self, calls: Iterable[CallSpec], **kw: Any) -> list[CallResult]:
        return await self.client.batch(calls, trajectory=self.name, **kw)

    async def faults(self) -> TrajectoryFaults:
        return await self.client.trajectory_faults(self.name)

    async def tokens(self) -> TrajectoryTokens:
        return await self.client.trajectory_tokens(self.name)

    async def release(self) -> int:
        self.released = True
        return await self.client.release(self.name)

    async def __aenter__(self) -> "AsyncTrajectory":
        return self

    async def __aexit__(self, *exc: object) -> None:
        if not self.released:
            try:
                await self.release()
            except ConnectionFailed:
                pass
