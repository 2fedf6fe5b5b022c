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
    def __init__(self, url: str, tenant: str, capabilities: dict | None = None):
        self.url, self.tenant = url, tenant
        self.client = httpx.Client(timeout=60)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": V, "capabilities": capabilities or {},
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

    def send(self, message: dict) -> httpx.Response:
        """Posts a notification or a response (no answer expected)."""
        return self.client.post(self.url, content=json.dumps(message), headers=self.headers())

    def end(self) -> None:
        resp = self.client.delete(self.url, headers=self.headers())
        assert resp.status_code == 200, resp.text

    def wait_event(self, pred, what: str, timeout: float = 10) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for e in list(self.events):
                if pred(e):
                    return e
            time.sleep(0.05)
        raise AssertionError(f"no {what} on the session's stream: {self.events}")

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


def test_notifications_cancelled_of_the_tasks_request_cancels_the_task(gw):
    """The 2025-11-25 revision has tasks/cancel for tasks; a client that sends notifications/cancelled for
    the tools/call that started one means the same: the task ends `cancelled` (not `failed`)."""
    s = Session(gw.mcp_url, "team-a")
    created = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}, "task": {}})
    task_id, request_id = created["result"]["task"]["taskId"], s.next_id
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 5, "the task's call in flight")
    resp = s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": request_id, "reason": "changed my mind"}})
    assert resp.status_code == 202, resp.text
    got = s.request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled", got
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "the call cancelled upstream")
    # It stays cancelled (the call's late end changes nothing), and tasks/result says so.
    answer = s.request("tasks/result", {"taskId": task_id})
    assert answer["error"]["code"] == -32603 and "cancelled" in answer["error"]["message"], answer
    # A notifications/cancelled of another request id is not a task's: nothing changes.
    other = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}, "task": {}})
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 999}})
    assert s.request("tasks/get", {"taskId": other["result"]["task"]["taskId"]})["result"]["status"] == "working"


def test_a_task_outlives_the_delete_of_its_session(gw):
    """A task is the tenant's, not the session's: ending the session (DELETE) leaves its call running on the
    shared server, and a new session of the tenant collects the result."""
    s = Session(gw.mcp_url, "team-a")
    created = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 1500}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    s.end()
    time.sleep(0.3)
    assert gw.health()["servers"]["fixture"]["in_flight"] == 1, "the DELETE cancelled the task's call"
    again = Session(gw.mcp_url, "team-a")
    assert again.request("tasks/get", {"taskId": task_id})["result"]["status"] == "working"
    result = again.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "slept 1500 ms", result
    assert again.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"


def test_delete_cancels_a_task_whose_call_runs_on_the_sessions_own_instance(gateway_factory):
    """A per_session server's instance ends with the session: its task cannot outlive it and ends
    `cancelled` at the DELETE (not left `working` until its TTL)."""
    gw = gateway_factory({"fixture": fixture_server(task_tools=["sleep"], policy="per_session")}, ready=["fixture"])
    s = Session(gw.mcp_url, "team-a")
    created = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 10, "the task's call in flight")
    s.end()
    again = Session(gw.mcp_url, "team-a")
    got = again.request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled", got


def test_tools_list_marks_the_task_tools(gw):
    """A tool the gateway runs as a task (task_tools) shows execution.taskSupport "optional", as the tasks
    extension says, to sessions and to stateless clients alike."""
    s = Session(gw.mcp_url, "team-a")
    tools = {t["name"]: t for t in s.request("tools/list", {})["result"]["tools"]}
    assert tools["fixture__sleep"]["execution"]["taskSupport"] == "optional", tools["fixture__sleep"]
    assert tools["fixture__progress"]["execution"]["taskSupport"] == "optional"
    assert "execution" not in tools["fixture__echo"], tools["fixture__echo"]
    stateless = "2026-07-28"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": stateless,
                                 "io.modelcontextprotocol/clientCapabilities": {}}}}
    resp = httpx.post(gw.mcp_url, content=json.dumps(body), timeout=30,
                      headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                               "MCP-Protocol-Version": stateless, "Mcp-Method": "tools/list"})
    listed = {t["name"]: t for t in next(m for m in parse_body(resp) if m.get("id") == 1)["result"]["tools"]}
    assert listed["fixture__sleep"]["execution"]["taskSupport"] == "optional", listed["fixture__sleep"]
    assert "execution" not in listed["fixture__echo"]


def test_a_task_whose_server_asks_the_client_is_input_required_until_answered(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(task_tools=["elicit"])}, ready=["fixture"])
    s = Session(gw.mcp_url, "team-a", {"elicitation": {}})
    s.listen()
    created = s.request("tools/call", {"name": "fixture__elicit", "arguments": {"message": "Name?"}, "task": {}})
    task_id = created["result"]["task"]["taskId"]
    # The server's request reaches the session's stream, tied to the task (related-task _meta).
    ask = s.wait_event(lambda e: e.get("method") == "elicitation/create", "elicitation request")
    assert ask["params"]["_meta"][RELATED] == {"taskId": task_id}, ask
    assert ask["params"]["message"] == "Name?"
    got = s.request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "input_required", got
    s.wait_event(lambda e: e.get("method") == "notifications/tasks/status"
                 and e["params"]["status"] == "input_required", "input_required status")
    resp = s.send({"jsonrpc": "2.0", "id": ask["id"],
                   "result": {"action": "accept", "content": {"answer": "Ada"}}})
    assert resp.status_code == 202, resp.text
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert "Ada" in result["content"][0]["text"], result
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    # The notifications go out on the stream as the status changes: input_required, then working
    # again once answered (they may reach this reader after tasks/get's answer).
    s.wait_event(lambda e: e.get("method") == "notifications/tasks/status"
                 and e["params"]["status"] == "completed", "completed status")
    statuses = [e["params"]["status"] for e in s.events if e.get("method") == "notifications/tasks/status"]
    assert "working" in statuses[statuses.index("input_required"):], statuses


def test_a_tenant_at_the_default_task_limit(gateway_factory):
    """At the default gateway.task_max_per_tenant (256), all running: the next task is refused with -32004
    naming the key and is not run; another tenant is unaffected; a cancelled one gives way."""
    # Room on the instance for more than one tenant's 256 calls (max_in_flight is 256 by default).
    gw = gateway_factory({"fixture": fixture_server(task_tools=["sleep"], max_in_flight=512)}, ready=["fixture"])
    s = Session(gw.mcp_url, "team-a")
    ids = []
    for _ in range(256):
        created = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 120000}, "task": {}})
        ids.append(created["result"]["task"]["taskId"])
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 256, 20, "256 calls in flight")
    refused = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 120000}, "task": {}})
    assert refused["error"]["code"] == -32004, refused
    assert "gateway.task_max_per_tenant" in refused["error"]["message"]
    time.sleep(0.2)
    assert gw.health()["servers"]["fixture"]["in_flight"] == 256, "the refused call was run"
    assert len(s.request("tasks/list", {})["result"]["tasks"]) == 256
    other = Session(gw.mcp_url, "team-b")
    created = other.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 100}, "task": {}})
    assert other.request("tasks/result", {"taskId": created["result"]["task"]["taskId"]})["result"]
    assert s.request("tasks/cancel", {"taskId": ids[0]})["result"]["status"] == "cancelled"
    again = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 100}, "task": {}})
    assert again["result"]["task"]["status"] == "working", again
