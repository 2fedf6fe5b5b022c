"""OpenAI function calling on a toolbridge client.

    tools = OpenAITools(client)                       # or AsyncOpenAITools(async_client)
    resp = openai_client.chat.completions.create(model=..., messages=messages, tools=tools.tools())
    msg = resp.choices[0].message
    messages.append(msg)
    messages += tools.execute(msg)                    # every tool_call of the turn, one batch

``tools()`` is the catalog as ``[{"type": "function", "function": {name, description,
parameters}}]`` with names the API accepts and flattened schemas; ``execute`` takes an
assistant message (the SDK's object or a dict) and returns its ``role: "tool"`` messages in
the order of its ``tool_calls``.

Raw completion text (a model served without a tool-call parser, /v1/completions, a local
engine): ``execute_text(text, format)`` parses it in the gateway (POST /v1/parse, formats
hermes, qwen3_coder, llama3_json, mistral, deepseek_v3, use_mcp_tool or auto), runs the calls in
the same request and returns ``[assistant message with tool_calls, *tool messages]``."""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..client import AsyncClient, CallResult, Client
from ..parse import ParseResult
from ._schema import api_names, flatten_schema

__all__ = ["AsyncOpenAITools", "OpenAITools", "tool_messages"]


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


class _Catalog:
    def __init__(self, tools: list[dict[str, Any]], only: Iterable[str] | None, trajectory: str | None) -> None:
        wanted = set(only) if only is not None else None
        self.entries = [t for t in tools if wanted is None or t["name"] in wanted]
        self.api_of = api_names(t["name"] for t in self.entries)
        self.exposed_of = {v: k for k, v in self.api_of.items()}
        self.trajectory = trajectory

    def definitions(self) -> list[dict[str, Any]]:
        out = []
        for t in self.entries:
            fn: dict[str, Any] = {"name": self.api_of[t["name"]],
                                  "parameters": flatten_schema(t.get("inputSchema"))}
            description = t.get("description") or t.get("title")
            if description:
                fn["description"] = description
            out.append({"type": "function", "function": fn})
        return out

    def plan(self, message: Any) -> tuple[list[str], list[tuple[str, dict[str, Any]] | str]]:
        """(ids, per call: (exposed tool, arguments) to run, or an error text to answer at once)."""
        ids: list[str] = []
        plan: list[tuple[str, dict[str, Any]] | str] = []
        for tc in _get(message, "tool_calls") or ():
            ids.append(_get(tc, "id"))
            fn = _get(tc, "function") or {}
            name, raw = _get(fn, "name") or "", _get(fn, "arguments")
            try:
                args = json.loads(raw) if isinstance(raw, str) and raw.strip() else (raw or {})
            except ValueError as exc:
                plan.append(f"Error: the arguments of {name} are not valid JSON ({exc}); send a JSON object")
                continue
            if not isinstance(args, dict):
                plan.append(f"Error: the arguments of {name} must be a JSON object")
                continue
            # A name the catalog does not hold goes as written: the gateway's repair may fix it.
            plan.append((self.exposed_of.get(name, name), args))
        return ids, plan

    def messages(self, ids: list[str], plan: list[Any], results: list[CallResult]) -> list[dict[str, Any]]:
        it = iter(results)
        out = []
        for call_id, step in zip(ids, plan):
            content = step if isinstance(step, str) else _content(next(it))
            out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        return out


    def conversation(self, parsed: ParseResult) -> list[dict[str, Any]]:
        """The assistant message of a parsed completion (content, tool_calls with API names)
        and its tool messages, ready to append."""
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": self.api_of.get(c.name, c.name),
                               "arguments": json.dumps(c.arguments)}} for c in parsed.calls]
        assistant: dict[str, Any] = {"role": "assistant", "content": parsed.content or None}
        if calls:
            assistant["tool_calls"] = calls
        tools = [{"role": "tool", "tool_call_id": c.id, "content": _content(c.result)}
                 for c in parsed.calls if c.result is not None]
        return [assistant, *tools]


def _content(r: CallResult) -> str:
    if r.result is not None:
        return r.text
    return f"Error: {r.text}"


def tool_messages(message: Any, results: list[CallResult]) -> list[dict[str, Any]]:
    """``role: "tool"`` messages for ``message``'s tool_calls from results in the same order."""
    ids = [_get(tc, "id") for tc in _get(message, "tool_calls") or ()]
    return [{"role": "tool", "tool_call_id": i, "content": _content(r)} for i, r in zip(ids, results)]


class OpenAITools:
    """The catalog and the executor for a sync ``toolbridge.Client``. ``only``: exposed names to
    offer (default all); ``trajectory``: the trajectory the calls belong to."""

    def __init__(self, client: Client, *, only: Iterable[str] | None = None,
                 trajectory: str | None = None) -> None:
        self.client = client
        self._catalog = _Catalog(client.tools(), only, trajectory)

    def tools(self) -> list[dict[str, Any]]:
        return self._catalog.definitions()

    def execute(self, message: Any, *, sequential: bool = False) -> list[dict[str, Any]]:
        ids, plan = self._catalog.plan(message)
        calls = [step for step in plan if not isinstance(step, str)]
        results = self.client.batch(calls, trajectory=self._catalog.trajectory,
                                    sequential=sequential) if calls else []
        return self._catalog.messages(ids, plan, results)


    def execute_text(self, text: str, format: str = "auto") -> list[dict[str, Any]]:
        """Raw completion text: its calls parsed and run by the gateway in one request."""
        parsed = self.client.parse_and_execute(text, format, trajectory=self._catalog.trajectory)
        return self._catalog.conversation(parsed)


class AsyncOpenAITools:
    """The same for ``toolbridge.AsyncClient``: ``await AsyncOpenAITools.create(client)``."""

    def __init__(self, client: AsyncClient, catalog: _Catalog) -> None:
        self.client = client
        self._catalog = catalog

    @classmethod
    async def create(cls, client: AsyncClient, *, only: Iterable[str] | None = None,
                     trajectory: str | None = None) -> "AsyncOpenAITools":
        return cls(client, _Catalog(await client.tools(), only, trajectory))

    def tools(self) -> list[dict[str, Any]]:
        return self._catalog.definitions()

    async def execute(self, message: Any, *, sequential: bool = False) -> list[dict[str, Any]]:
        ids, plan = self._catalog.plan(message)
        calls = [step for step in plan if not isinstance(step, str)]
        results = await self.client.batch(calls, trajectory=self._catalog.trajectory,
                                          sequential=sequential) if calls else []
        return self._catalog.messages(ids, plan, results)

    async def execute_text(self, text: str, format: str = "auto") -> list[dict[str, Any]]:
        parsed = await self.client.parse_and_execute(text, format, trajectory=self._catalog.trajectory)
        return self._catalog.conversation(parsed)
