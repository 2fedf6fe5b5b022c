"""verl tools on toolbridge: ``ToolbridgeTool`` is a ``verl.tools.base_tool.BaseTool``.

verl's agent loop wraps every call in ``create`` -> ``execute`` -> ``release`` with a new
instance id each time, so the instance cannot hold a trajectory. The tool keys the toolbridge
trajectory by the agent's ``request_id`` (``execute(..., agent_data=...)``), keeps it across the
calls of that rollout, and releases it when the rollout ends (its ``agent_data`` is freed) or
on ``release_trajectory(request_id)``; the gateway's ``session_idle_ttl`` is the backstop. A
call made without ``agent_data`` gets a trajectory of its instance, released by ``release``.

Tool config (``actor_rollout_ref.rollout.multi_turn.tool_config_path``), one entry per tool;
``tool_schema`` may be left out (it is built from the gateway's catalog), and
``write_tool_config`` writes the whole file from a running gateway:

    tools:
      - class_name: toolbridge.adapters.verl.ToolbridgeTool
        config: {type: native, gateway_url: "http://127.0.0.1:8080", tool: fixture__echo}
        tool_schema: {type: function, function: {name: fixture__echo, description: ..., parameters: ...}}
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import weakref
from typing import Any, Iterable
from uuid import uuid4

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from ..client import AsyncClient, Client, TrajectoryFaults
from ..errors import ToolbridgeError
from ._schema import api_names, flatten_schema

__all__ = ["ToolbridgeTool", "release_trajectory", "rollout_faults", "rollout_infra_failed", "tool_schemas",
           "write_tool_config"]

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9._:@+-]")
# request_id -> trajectory name, for the rollouts in progress in this process.
_rollouts: dict[str, str] = {}
_rollouts_lock = threading.Lock()


def trajectory_of(request_id: str) -> str:
    return ("verl-" + _NOT_IN_NAME.sub("_", str(request_id)))[:256]


def tool_schemas(tools: list[dict[str, Any]], only: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """verl tool_schema dicts (``{type: function, function: {name, description, parameters}}``)
    for catalog entries; ``function.name`` is API-valid and the config's ``tool`` keeps the
    exposed name."""
    wanted = set(only) if only is not None else None
    entries = [t for t in tools if wanted is None or t["name"] in wanted]
    names = api_names(t["name"] for t in entries)
    return [{"type": "function",
             "function": {"name": names[t["name"]],
                          "description": t.get("description") or t["name"],
                          "parameters": flatten_schema(t.get("inputSchema"))},
             "x-toolbridge-tool": t["name"]} for t in entries]


def write_tool_config(gateway_url: str, path: str, only: Iterable[str] | None = None,
                      tenant: str | None = None) -> dict[str, Any]:
    """Writes verl's tool config (JSON, which YAML loaders read) for the gateway's tools."""
    with Client(gateway_url, tenant=tenant) as client:
        schemas = tool_schemas(client.tools(), only)
    entries = []
    for s in schemas:
        config = {"type": "native", "gateway_url": gateway_url, "tool": s.pop("x-toolbridge-tool")}
        if tenant:
            config["tenant"] = tenant
        entries.append({"class_name": f"{__name__}.ToolbridgeTool", "config": config, "tool_schema": s})
    doc = {"tools": entries}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    return doc


def _release_now(url: str, tenant: str | None, name: str) -> None:
    try:
        with Client(url, tenant=tenant, timeout=10) as client:
            client.release(name)
    except ToolbridgeError:
        pass  # the gateway's idle TTL frees it anyway


def _rollout_ended(request_id: str, url: str, tenant: str | None) -> None:
    with _rollouts_lock:
        name = _rollouts.pop(request_id, None)
    if name:
        # A finalizer must not block the event loop that dropped the rollout.
        threading.Thread(target=_release_now, args=(url, tenant, name), daemon=True).start()


def release_trajectory(request_id: str, gateway_url: str, tenant: str | None = None) -> None:
    """Frees the trajectory of rollout ``request_id`` now (blocking)."""
    with _rollouts_lock:
        name = _rollouts.pop(request_id, None)
    _release_now(gateway_url, tenant, name or trajectory_of(request_id))


def rollout_faults(request_id: str, gateway_url: str, tenant: str | None = None) -> TrajectoryFaults:
    """The calls of rollout ``request_id`` by fault class, as the gateway counted them (blocking;
    docs/faults.md)."""
    with _rollouts_lock:
        name = _rollouts.get(request_id) or trajectory_of(request_id)
    with Client(gateway_url, tenant=tenant, timeout=10) as client:
        return client.trajectory_faults(name)


def rollout_infra_failed(request_id: str, gateway_url: str, tenant: str | None = None) -> bool:
    """Did the infrastructure (a timeout, a crashed or unavailable server, shedding...) fail a
    call of rollout ``request_id``? A trainer masks such a sample rather than learn its reward."""
    return rollout_faults(request_id, gateway_url, tenant).infra_failed


class ToolbridgeTool(BaseTool):
    """config: ``gateway_url`` (required), ``tool`` (the exposed name; default: the schema's
    function name), ``tenant``, ``timeout_ms``."""

    def __init__(self, config: dict, tool_schema: OpenAIFunctionToolSchema | None = None):
        if "gateway_url" not in config:
            raise ValueError("ToolbridgeTool needs config.gateway_url (the gateway's base URL)")
        self.gateway_url: str = config["gateway_url"]
        self.tenant: str | None = config.get("tenant")
        self.timeout_ms: float | None = config.get("timeout_ms")
        self.tool: str | None = config.get("tool")
        self._clients: dict[int, AsyncClient] = {}
        self._instances: dict[str, str] = {}  # instance id -> its own trajectory
        super().__init__(config, tool_schema)
        self.tool = self.tool or self.name

    def get_openai_tool_schema(self) -> OpenAIFunctionToolSchema:
        """Built from the gateway's catalog when the config gives no tool_schema."""
        if self.tool is None:
            raise ValueError("ToolbridgeTool needs config.tool or a tool_schema")
        with Client(self.gateway_url, tenant=self.tenant) as client:
            schemas = tool_schemas(client.tools(), [self.tool])
        if not schemas:
            raise ValueError(f"the gateway at {self.gateway_url} has no tool '{self.tool}'")
        schemas[0].pop("x-toolbridge-tool")
        return OpenAIFunctionToolSchema.model_validate(schemas[0])

    def _client(self) -> AsyncClient:
        # One client per event loop: its connections belong to the loop that opened them.
        loop = asyncio.get_running_loop()
        client = self._clients.get(id(loop))
        if client is None:
            client = self._clients[id(loop)] = AsyncClient(self.gateway_url, tenant=self.tenant)
        return client

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, ToolResponse]:
        return instance_id or str(uuid4()), ToolResponse()

    def _trajectory(self, instance_id: str, agent_data: Any) -> str:
        request_id = getattr(agent_data, "request_id", None) if agent_data is not None else None
        if request_id is None:
            return self._instances.setdefault(instance_id, trajectory_of(f"i-{instance_id}"))
        with _rollouts_lock:
            name = _rollouts.get(request_id)
            if name is None:
                name = _rollouts[request_id] = trajectory_of(request_id)
                fresh = True
            else:
                fresh = False
        if fresh:
            try:
                weakref.finalize(agent_data, _rollout_ended, request_id, self.gateway_url, self.tenant)
            except TypeError:
                pass  # not weak-referenceable: released by the idle TTL or release_trajectory()
        return name

    async def execute(self, instance_id: str, parameters: dict[str, Any],
                      **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        trajectory = self._trajectory(instance_id, kwargs.get("agent_data"))
        try:
            r = await self._client().call(self.tool, parameters or {}, trajectory=trajectory,
                                          timeout_ms=self.timeout_ms, check=False)
        except ToolbridgeError as exc:
            # The gateway could not be reached: the infrastructure's fault, not the policy's.
            return (ToolResponse(text=f"Error: {exc}"), 0.0,
                    {"outcome": "request_failed", "fault": "infra", "infra_failed": True})
        # fault / infra_failed: what a trainer masks on (docs/faults.md).
        metrics = {"outcome": r.outcome, "fault": r.fault, "infra_failed": r.fault == "infra",
                   "queue_ms": r.timing.queue_ms,
                   "execution_ms": r.timing.execution_ms, "total_ms": r.timing.total_ms}
        text = r.text if r.result is not None else f"Error: {r.text}"
        return ToolResponse(text=text), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        return 0.0

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        # A rollout's trajectory outlives this instance (the next call of the rollout is a new
        # instance); only an instance's own trajectory ends here.
        name = self._instances.pop(instance_id, None)
        if name:
            try:
                await self._client().release(name)
            except ToolbridgeError:
                pass
