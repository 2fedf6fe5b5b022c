"""Typed errors of the toolbridge client.

Whole-request failures (the gateway refused or could not be reached) and per-call failures
(one call of a batch ended with an outcome other than ``ok``) are different branches, so an
agent loop can retry the first and hand the second to the model."""

from __future__ import annotations

from typing import Any


class ToolbridgeError(Exception):
    """Base of every error this package raises (GatewayError included)."""


class ConnectionFailed(ToolbridgeError):
    """The gateway could not be reached, or the connection broke mid-request."""


class RequestRejected(ToolbridgeError):
    """The gateway refused the whole request (4xx/5xx): ``status``, ``code``, ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class Overloaded(RequestRejected):
    """429: admission control shed every call; try again after ``retry_after`` seconds."""

    def __init__(self, status: int, code: str, message: str, retry_after: float) -> None:
        super().__init__(status, code, message)
        self.retry_after = retry_after


class TrajectoryRefused(RequestRejected):
    """403: the trajectory belongs to another tenant (or address), or the client holds too many."""


class Unauthorized(RequestRejected):
    """401: the gateway needs an API key (``token=``) and got none, or one it does not know."""


class Forbidden(RequestRejected):
    """403 ``forbidden``: every call of the request is outside the API key's allowlist."""


class CallFailed(ToolbridgeError):
    """One call ended with an outcome other than ``ok``: ``tool``, ``outcome``, ``code``,
    ``message``, and the server's ``result`` for a ``tool_error``."""

    def __init__(self, tool: str, outcome: str, message: str, code: int | None = None,
                 result: dict[str, Any] | None = None) -> None:
        super().__init__(f"{tool}: {outcome}: {message}")
        self.tool = tool
        self.outcome = outcome
        self.message = message
        self.code = code
        self.result = result


class ToolError(CallFailed):
    """The tool ran and answered with ``isError: true`` (outcome ``tool_error``)."""


class InvalidCall(CallFailed):
    """The gateway refused the call as malformed: unknown tool, bad arguments (``invalid_params``)."""


class CallTimeout(CallFailed):
    """The call's deadline passed (outcome ``timeout``)."""


class ServerUnavailable(CallFailed):
    """No server instance could run the call: ``unavailable``, ``overloaded``, ``shed``,
    ``crashed``, ``not_sent``, ``shutting_down``."""


class ServerError(CallFailed):
    """The server answered with a JSON-RPC error (``server_error``, ``not_found``)."""


class CallForbidden(CallFailed):
    """The API key may not call this server or tool (outcome ``forbidden``)."""


class CallCancelled(CallFailed):
    """The call was cancelled: a fail_fast batch stopped, or the client went away."""


_BY_OUTCOME: dict[str, type[CallFailed]] = {
    "tool_error": ToolError,
    "invalid_params": InvalidCall,
    "timeout": CallTimeout,
    "unavailable": ServerUnavailable,
    "overloaded": ServerUnavailable,
    "shed": ServerUnavailable,
    "crashed": ServerUnavailable,
    "not_sent": ServerUnavailable,
    "shutting_down": ServerUnavailable,
    "server_error": ServerError,
    "not_found": ServerError,
    "cancelled": CallCancelled,
    "forbidden": CallForbidden,
}


def call_failed(tool: str, outcome: str, message: str, code: int | None = None,
                result: dict[str, Any] | None = None) -> CallFailed:
    """The typed error for an outcome (CallFailed itself for one this version does not know)."""
    return _BY_OUTCOME.get(outcome, CallFailed)(tool, outcome, message, code, result)


def rejected(status: int, body: bytes, retry_after: str | None) -> RequestRejected:
    import json

    code, message = "http_error", body[:500].decode("utf-8", "replace")
    try:
        err = json.loads(body)["error"]
        if isinstance(err, dict):
            code, message = str(err.get("code", code)), str(err.get("message", message))
        elif isinstance(err, str):
            message = err
    except (ValueError, KeyError, TypeError):
        pass
    if status == 429:
        try:
            wait = float(retry_after) if retry_after else 1.0
        except ValueError:
            wait = 1.0
        return Overloaded(status, code, message, wait)
    if status == 401:
        return Unauthorized(status, code, message)
    if status == 403 and code == "forbidden":
        return Forbidden(status, code, message)
    if status == 403 and code == "trajectory_refused":
        return TrajectoryRefused(status, code, message)
    return RequestRejected(status, code, message)
