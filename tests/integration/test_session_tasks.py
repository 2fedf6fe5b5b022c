"""Tasks for clients of the handshake revision 2025-11-25 (sessions, `initialize`): the core tasks of
that revision (SEP-1686) served by the gateway for a server that knows nothing of tasks
(toolbridge-fixture, its tools listed in `task_tools`), through the same store as the stateless
tasks. Raw JSON-RPC over HTTP with a session: the official Python SDK has no tasks client.
docs/tasks.md has the rules."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tb_support import fixture_server, parse_body

pytestmark = pytest.mark.timeout(120)

V = "2025-11-25"
RELATED = "io.modelcontextprotocol/related-task"


class Session:
    def __init__(self, url: str, tenant: str):
        self.url, self.tenant = url, tenant
        self.client = httpx.Client(timeout=60)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": V, "capabilities": {},
                           "clientInfo": {"name": "test", "version": "1"}}}
        resp = self.client.post(url, content=json.dumps(init), headers=self.headers())
        self.init_result = resp.json()["result"]
        self.id = resp.headers["mcp-session-id"]
        self.client.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                         headers=self.headers())
        self.events: list[dict] = []
        self.next_id = 1

    def headers(self) -> dict:
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
             "X-Toolbridge-Tenant": self.tenant}
        if getattr(self, "id", None):
            h |= {"Mcp-Session-Id": self.id, "MCP-Protocol-Version": V}
        return h

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        resp = self.client.post(self.url, content=json.dumps(body), headers=self.headers())
        assert resp.status_code == 200, resp.text
        return next(m for m in parse_body(resp) if m.get("id") == self.next_id)

    def listen(self) -> None:
        """Reads the session's GET stream into self.events (in a thread)."""
        ready = threading.Event()

        def run():
            try:
                with httpx.Client(timeout=None) as c, c.stream("GET", self.url, headers=self.headers()) as r:
                    ready.set()
                    for line in r.iter_lines():
                        if line.startswith("data:"):
                            self.events.append(json.loads(line[5:]))
            except httpx.HTTPError:
                pass  # the gateway stopped at the end of the test

        threading.Thread(target=run, daemon=True).start()
        assert ready.wait(10)


@pytest.fixture
def gw(gateway_factory):
    return gateway_factory({"fixture": fixture_server(task_tools=["sleep", "progress"])}, ready=["fixture"])


def test_initialize_declares_tasks_and_a_task_runs_with_progress_and_a_result(gw):
    s = Session(gw.mcp_url, "team-a")
    assert s.init_result["capabilities"]["tasks"]["requests"]["tools"]["call"] == {}
    s.listen()
    created = s.request("tools/call", {"name": "fixture__progress", "arguments": {"steps": 4, "delay_ms": 300},
                                       "task": {"ttl": 60000}, "_meta": {"progressToken": "tok-1"}})
    task = created["result"]["task"]
    assert task["status"] == "working" and len(task["taskId"]) == 32, created
    assert {"createdAt", "lastUpdatedAt", "ttl", "pollInterval"} <= task.keys()
    task_id = task["taskId"]
    got = s.request("tasks/get", {"taskId": task_id})["result"]
    assert got["taskId"] == task_id and got["status"] == "working", got
    assert task_id in [t["taskId"] for t in s.request("tasks/list", {})["result"]["tasks"]]
    # tasks/result waits for the end, and answers what the call answered.
    started = time.monotonic()
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert time.monotonic() - started > 0.3, "tasks/result answered before the call ended"
    assert result["content"][0]["text"] == "done", result
    assert result["_meta"][RELATED] == {"taskId": task_id}
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    # The progress token stays valid after CreateTaskResult: progress reaches the session's stream,
    # tied to the task; a status notification tells the end.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(e.get("method") == "notifications/tasks/status"
                                                  for e in s.events):
        time.sleep(0.05)
    progress = [e for e in s.events if e.get("method") == "notifications/progress"]
    assert len(progress) >= 2, s.events
    assert all(p["params"]["progressToken"] == "tok-1" for p in progress)
    assert all(p["params"]["_meta"][RELATED] == {"taskId": task_id} for p in progress)
    statuses = [e["params"] for e in s.events if e.get("method") == "notifications/tasks/status"]
    assert statuses[-1]["taskId"] == task_id and statuses[-1]["status"] == "completed", statuses
    # A finished task cannot be cancelled (SEP-1686: -32602).
    assert s.request("tasks/cancel", {"taskId": task_id})["error"]["code"] == -32602


def test_cancel_stops_the_call_upstream_and_other_tenants_cannot_see_the_task(gw):
    s = Session(gw.mcp_url, "team-a")
    created = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 5, "the task's call in flight")
    # A new session of the same tenant reaches it (the task outlives the session); another cannot.
    other = Session(gw.mcp_url, "team-b")
    assert other.request("tasks/get", {"taskId": task_id})["error"]["code"] == -32602
    assert task_id not in [t["taskId"] for t in other.request("tasks/list", {})["result"]["tasks"]]
    again = Session(gw.mcp_url, "team-a")
    cancelled = again.request("tasks/cancel", {"taskId": task_id})["result"]
    assert cancelled["status"] == "cancelled", cancelled
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "the call cancelled upstream")
    answer = again.request("tasks/result", {"taskId": task_id})
    assert answer["error"]["code"] == -32603 and "cancelled" in answer["error"]["message"], answer


def test_a_tool_that_is_not_a_task_tool_is_refused_as_a_task(gw):
    s = Session(gw.mcp_url, "team-a")
    answer = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"}, "task": {}})
    assert answer["error"]["code"] == -32601 and "task_tools" in answer["error"]["message"], answer
    # Without `task` the same session calls it as ever.
    plain = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"}})
    assert plain["result"]["content"][0]["text"] == "x"
