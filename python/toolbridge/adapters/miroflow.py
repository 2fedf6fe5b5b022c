"""A MiroFlow/MiroThinker-style tool manager on toolbridge: the same two coroutines and return
shapes as ``miroflow_tools.manager.ToolManager``, so an agent switches by changing the
constructor:

    tool_manager = ToolbridgeToolManager("http://127.0.0.1:8080")   # was ToolManager(server_configs)
    defs = await tool_manager.get_all_tool_definitions()
    # [{"name": server, "tools": [{"name", "description", "schema"}]}]
    out = await tool_manager.execute_tool_call(server_name="search", tool_name="web_search",
                                               arguments={"q": "..."})
    # {"server_name", "tool_name", "result": text} or {"server_name", "tool_name", "error": text}

Servers stay warm in the gateway instead of a process (and an MCP session) per call. One manager
is one trajectory (a task): per_session servers keep their state across its calls, and
``release()`` (or ``async with``) frees them."""

from __future__ import annotations

from typing import Any, Iterable

from ..client import AsyncClient, CallResult, new_trajectory_name
from ..errors import ToolbridgeError
from ._schema import origin

__all__ = ["ToolbridgeToolManager"]


def _text(r: CallResult) -> str:
    # As ToolManager: the last content block's text ("" when there is none).
    content = (r.result or {}).get("content") or []
    last = content[-1] if content else None
    return last.get("text", "") if isinstance(last, dict) else ""


class ToolbridgeToolManager:
    """``client``: an AsyncClient or the gateway's URL. ``tool_blacklist``: (server, tool) pairs
    to hide and refuse, as ToolManager's. ``servers``: only these servers (default all).
    ``trajectory``: the trajectory name (default: a fresh one per manager)."""

    def __init__(self, client: AsyncClient | str, tool_blacklist: Iterable[tuple[str, str]] | None = None,
                 *, servers: Iterable[str] | None = None, trajectory: str | None = None) -> None:
        self.client = AsyncClient(client) if isinstance(client, str) else client
        self._owns_client = isinstance(client, str)
        self.tool_blacklist = set(tool_blacklist or ())
        self.servers = list(servers) if servers is not None else None
        self.trajectory = trajectory or new_trajectory_name("task")
        self.task_log = None
        self._exposed: dict[tuple[str, str], str] | None = None

    def set_task_log(self, task_log: Any) -> None:
        self.task_log = task_log

    async def _catalog(self) -> dict[tuple[str, str], str]:
        if self._exposed is None:
            tools = await self.client.tools()
            self._exposed = {origin(t): t["name"] for t in tools}
            self._defs = tools
        return self._exposed

    async def get_all_tool_definitions(self) -> list[dict[str, Any]]:
        try:
            await self._catalog()
        except ToolbridgeError as exc:
            names = self.servers or ["toolbridge"]
            return [{"name": s, "tools": [{"error": f"Unable to fetch tools: {exc}"}]} for s in names]
        by_server: dict[str, list[dict[str, Any]]] = {}
        for t in self._defs:
            server, name = origin(t)
            if self.servers is not None and server not in self.servers:
                continue
            by_server.setdefault(server, [])
            if (server, name) in self.tool_blacklist:
                continue
            by_server[server].append({"name": name, "description": t.get("description"),
                                      "schema": t.get("inputSchema")})
        order = self.servers if self.servers is not None else list(by_server)
        return [{"name": s, "tools": by_server.get(s, [])} for s in order]

    async def execute_tool_call(self, *, server_name: str, tool_name: str,
                                arguments: dict[str, Any]) -> dict[str, Any]:
        base = {"server_name": server_name, "tool_name": tool_name}
        try:
            exposed = await self._catalog()
        except ToolbridgeError as exc:
            return {**base, "error": f"Tool call failed: {exc}"}
        known_servers = {s for s, _ in exposed}
        if server_name not in known_servers or (self.servers is not None and server_name not in self.servers):
            return {**base, "error": f"Server '{server_name}' not found."}
        if (server_name, tool_name) in self.tool_blacklist:
            return {**base, "error": f"Tool '{tool_name}' of server '{server_name}' is not available."}
        # A tool the server does not list goes as server__tool: the gateway's repair may fix it.
        name = exposed.get((server_name, tool_name), f"{server_name}__{tool_name}")
        try:
            r = await self.client.call(name, arguments or {}, trajectory=self.trajectory, check=False)
        except ToolbridgeError as exc:
            return {**base, "error": f"Tool call failed: {exc}"}
        if r.result is not None:  # ok, or the tool's own isError answer (as the MCP SDK returns it)
            return {**base, "result": _text(r)}
        return {**base, "error": f"Tool execution failed: {r.text}"}

    async def release(self) -> int:
        """Frees this manager's trajectory (its per_session instances) now."""
        return await self.client.release(self.trajectory)

    async def __aenter__(self) -> "ToolbridgeToolManager":
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.release()
        except ToolbridgeError:
            pass
        if self._owns_client:
            await self.client.close()
