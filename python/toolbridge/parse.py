"""Model output in, tool calls out: the answers of POST /v1/parse as objects.

    r = client.parse(text, "hermes")                 # calls as the gateway resolved them
    r = client.parse_and_execute(text, "qwen3_coder", trajectory="rollout-17")
    messages += r.messages                           # role "tool", one per call, in order
    prompt += r.rendered                             # render=True: <tool_response>... etc.

    with client.parse_stream("hermes", execute=True) as s:   # while the model generates
        for chunk in completion_stream:
            for call in s.feed(chunk):               # calls complete so far (already started)
                ...
        r = s.finish()                               # as parse_and_execute answers

    # One request for a rollout step's turns (each a text, or a dict with its own keys):
    results = client.parse_turns([{"text": t, "trajectory": name} for name, t in step],
                                 "hermes", execute=True)
    # in order; a turn that could not run has ``error`` set ({"status", "code", "message"})
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._transport import Response
from .errors import rejected

__all__ = ["ParseResult", "ParseStream", "ParsedCall", "Unparsed"]


@dataclass(frozen=True)
class Unparsed:
    """A call the model wrote that could not be read (malformed, cut off), with why."""

    text: str
    reason: str


@dataclass
class ParsedCall:
    """One call: ``name`` as resolved in the catalog, ``arguments`` as the gateway runs them,
    the ``repairs`` made to get there; ``result`` (a CallResult) once executed. ``problem``
    says why a name did not resolve (unknown, ambiguous)."""

    id: str
    name: str
    arguments: dict[str, Any]
    written: str = ""
    repairs: list[dict[str, str]] = field(default_factory=list)
    problem: str | None = None
    result: Any = None


@dataclass
class ParseResult:
    format: str
    content: str
    reasoning: str | None
    calls: list[ParsedCall]
    unparsed: list[Unparsed]
    messages: list[dict[str, Any]] = field(default_factory=list)
    rendered: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    # parse_turns: why this turn could not run ({"status", "code", "message"}), else None.
    error: dict[str, Any] | None = None


def parse_body(text: str | None, fmt: str, execute: bool, render: bool, trajectory: str | None,
               tenant: str | None, timeout_ms: float | None, sequential: bool = False) -> bytes:
    body: dict[str, Any] = {"format": fmt}
    if text is not None:
        body["text"] = text
    if execute:
        body["execute"] = True
    if render:
        body["render"] = True
    if trajectory:
        body["trajectory"] = trajectory
    if tenant:
        body["tenant"] = tenant
    if timeout_ms is not None:
        body["timeout_ms"] = timeout_ms
    if sequential:
        body["sequential"] = True
    return json.dumps(body, separators=(",", ":")).encode()


def turns_body(turns: list[str | dict[str, Any]], fmt: str, execute: bool, render: bool,
               tenant: str | None, timeout_ms: float | None) -> bytes:
    body = json.loads(parse_body(None, fmt, execute, render, None, tenant, timeout_ms))
    body["turns"] = [{"text": t} if isinstance(t, str) else t for t in turns]
    return json.dumps(body, separators=(",", ":")).encode()


def _load(resp: Response, status: int = 200) -> dict[str, Any]:
    if resp.status != status:
        raise rejected(resp.status, resp.body, resp.headers.get("retry-after"))
    return json.loads(resp.body)


def calls_of(answer: dict[str, Any]) -> list[ParsedCall]:
    from .client import CallResult, Timing  # the client module imports this one

    out = []
    for c in answer.get("calls", ()):
        result = None
        if "outcome" in c:
            t = c.get("timing") or {}
            result = CallResult(c["name"], c["outcome"], c.get("result"), c.get("error"),
                                Timing(t.get("queue_ms", 0.0), t.get("execution_ms", 0.0), t.get("total_ms", 0.0)),
                                c.get("fault", "ok"))
        out.append(ParsedCall(c["id"], c["name"], c.get("arguments") or {}, c.get("written", ""),
                              c.get("repairs") or [], c.get("problem"), result))
    return out


def unparsed_of(answer: dict[str, Any]) -> list[Unparsed]:
    return [Unparsed(u["text"], u["reason"]) for u in answer.get("unparsed", ())]


def result_of(a: dict[str, Any]) -> ParseResult:
    return ParseResult(a.get("format", ""), a.get("content", ""), a.get("reasoning"), calls_of(a),
                       unparsed_of(a), a.get("messages") or [], a.get("rendered"), a, a.get("error"))


def parse_result(resp: Response) -> ParseResult:
    return result_of(_load(resp))


def turns_result(resp: Response) -> list[ParseResult]:
    return [result_of(a) for a in _load(resp)["turns"]]


class ParseStream:
    """A model output fed chunk by chunk (POST /v1/parse/streams); see the module's example."""

    def __init__(self, client: Any, fmt: str, execute: bool, render: bool, trajectory: str | None,
                 timeout_ms: float | None) -> None:
        self._client = client
        body = parse_body(None, fmt, execute, render, trajectory, client.tenant, timeout_ms)
        answer = _load(client._request("POST", "/v1/parse/streams", body), 201)
        self.id: str = answer["stream"]
        self.calls: list[ParsedCall] = calls_of(answer)
        self.unparsed: list[Unparsed] = unparsed_of(answer)
        self.result: ParseResult | None = None

    def feed(self, chunk: str) -> list[ParsedCall]:
        """Appends a chunk; returns the calls it completed (started already with execute)."""
        answer = _load(self._client._request("POST", f"/v1/parse/streams/{self.id}",
                                             json.dumps({"text": chunk}).encode()))
        new = calls_of(answer)
        self.calls += new
        self.unparsed += unparsed_of(answer)
        return new

    def finish(self, chunk: str = "") -> ParseResult:
        """The end of the output: waits for the calls and returns the whole answer."""
        body = json.dumps({"text": chunk, "done": True}).encode()
        self.result = parse_result(self._client._request("POST", f"/v1/parse/streams/{self.id}", body))
        return self.result

    def close(self) -> None:
        """Drops the stream (its calls are cancelled) unless it finished."""
        if self.result is None:
            self._client._request("DELETE", f"/v1/parse/streams/{self.id}", None)
            self.result = ParseResult("", "", None, [], [])

    def __enter__(self) -> "ParseStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
