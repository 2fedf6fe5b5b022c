"""A server's own tasks passed through (2025-11-25 sessions): toolbridge-fixture started with --tasks declares
capabilities.tasks.requests.tools.call and marks its tools with execution.taskSupport, so a task-augmented tools/call
runs as the fixture's own task. The client only ever sees the gateway's task id; tasks/get and tasks/cancel are asked
of the instance that holds the task, the result comes from it, its death fails the task. The fixture's `own_tasks`
tool answers what its own tasks/list says. docs/tasks.md has the rules."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tb_support import fixture_server
from test_session_tasks import RELATED, Session

pytestmark = pytest.mark.timeout(120)


def own_tasks(s: Session) -> dict:
    """The fixture's own tasks (its tasks/list), by the fixture's ids."""
    answer = s.request("tools/call", {"name": "fixture__own_tasks", "arguments": {}})
    return {t["taskId"]: t for t in json.loads(answer["result"]["content"][0]["text"])["tasks"]}


def start(s: Session, tool: str, arguments: dict) -> str:
    created = s.request("tools/call", {"name": f"fixture__{tool}", "arguments": arguments, "task": {"ttl": 60000}})
    task = created["result"]["task"]
    assert task["status"] == "working", created
    return task["taskId"]


@pytest.fixture
def gw(gateway_factory):
    return gateway_factory({"fixture": fixture_server("--tasks")}, ready=["fixture"])


def test_a_task_runs_as_the_servers_own_and_only_the_gateways_id_is_seen(gw):
    s = Session(gw.mcp_url, "team-a")
    s.listen()
    tools = {t["name"]: t for t in s.request("tools/list", {})["result"]["tools"]}
    assert tools["fixture__progress"]["execution"]["taskSupport"] == "optional"
    task_id = start(s, "progress", {"steps": 4, "delay_ms": 400})
    assert len(task_id) == 32, task_id
    # The server holds it as its own task, under its own id.
    server_side = own_tasks(s)
    assert len(server_side) == 1, server_side
    (server_id, server_task), = server_side.items()
    assert server_id != task_id and server_task["status"] == "working", server_side
    # tasks/get is asked of the server: its statusMessage (what its tool last said) comes through.
    deadline = time.monotonic() + 5
    got = s.request("tasks/get", {"taskId": task_id})["result"]
    while "statusMessage" not in got and time.monotonic() < deadline:
        time.sleep(0.1)
        got = s.request("tasks/get", {"taskId": task_id})["result"]
    assert got["taskId"] == task_id and got["status"] == "working", got
    assert got["statusMessage"].startswith("step "), got
    assert task_id in [t["taskId"] for t in s.request("tasks/list", {})["result"]["tasks"]]
    # tasks/result: the server's result, tied to the gateway's task.
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "done", result
    assert result["_meta"][RELATED] == {"taskId": task_id}, result
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    assert own_tasks(s)[server_id]["status"] == "completed"
    # The server's status notifications reach the session with the gateway's id, never the server's.
    s.wait_event(lambda e: e.get("method") == "notifications/tasks/status"
                 and e["params"]["status"] == "completed", "completed status")
    statuses = [e["params"] for e in s.events if e.get("method") == "notifications/tasks/status"]
    assert all(p["taskId"] == task_id for p in statuses), statuses
    assert any(p.get("statusMessage", "").startswith("step ") for p in statuses), statuses
    assert server_id not in json.dumps(s.events)
    # The follower's tasks/result held the instance's slot until the end, and no more.
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "nothing in flight")


def test_cancel_reaches_the_server_and_another_tenant_sees_nothing(gw):
    s = Session(gw.mcp_url, "team-a")
    task_id = start(s, "sleep", {"ms": 60000})
    other = Session(gw.mcp_url, "team-b")
    assert other.request("tasks/get", {"taskId": task_id})["error"]["code"] == -32602
    assert other.request("tasks/cancel", {"taskId": task_id})["error"]["code"] == -32602
    assert other.request("tasks/result", {"taskId": task_id})["error"]["code"] == -32602
    assert other.request("tasks/list", {})["result"]["tasks"] == []
    (server_id, server_task), = own_tasks(s).items()
    assert server_task["status"] == "working"
    cancelled = s.request("tasks/cancel", {"taskId": task_id})["result"]
    assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled", cancelled
    assert own_tasks(s)[server_id]["status"] == "cancelled"
    answer = s.request("tasks/result", {"taskId": task_id})
    assert answer["error"]["code"] == -32603 and "cancelled" in answer["error"]["message"], answer
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "cancelled"
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "the follower gone")


def test_the_death_of_the_instance_fails_its_tasks(gw):
    s = Session(gw.mcp_url, "team-a")
    task_id = start(s, "sleep", {"ms": 60000})
    pid = gw.health()["servers"]["fixture"]["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    got = s.request("tasks/get", {"taskId": task_id})["result"]
    while got["status"] == "working" and time.monotonic() < deadline:
        time.sleep(0.1)
        got = s.request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "failed", got
    answer = s.request("tasks/result", {"taskId": task_id})
    assert "gone" in answer["error"]["message"], answer
    # The restarted instance knows nothing of it; a new task runs there.
    gw.wait_health(lambda h: h["servers"]["fixture"].get("pid") not in (None, pid)
                   and h["servers"]["fixture"]["state"] == "ready", 20, "a new instance")
    again = start(s, "sleep", {"ms": 100})
    assert s.request("tasks/result", {"taskId": again})["result"]["content"][0]["text"] == "slept 100 ms"


def test_a_new_session_of_the_tenant_collects_the_result_after_a_disconnect(gw):
    s = Session(gw.mcp_url, "team-a")
    task_id = start(s, "sleep", {"ms": 1500})
    s.end()
    s.client.close()
    again = Session(gw.mcp_url, "team-a")
    assert again.request("tasks/get", {"taskId": task_id})["result"]["status"] == "working"
    result = again.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "slept 1500 ms", result
    assert result["_meta"][RELATED] == {"taskId": task_id}


def test_a_retired_instance_is_kept_until_its_task_ends(gateway_factory):
    """max_calls retires the instance after its second call: it takes no new calls, and it is stopped only
    once the task it holds has ended (its result still comes from it)."""
    gw = gateway_factory({"fixture": fixture_server("--tasks", max_calls=2)}, ready=["fixture"])
    s = Session(gw.mcp_url, "team-a")
    first_pid = gw.health()["servers"]["fixture"]["pid"]
    task_id = start(s, "sleep", {"ms": 2500})
    s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"}})  # the second call
    gw.wait_health(lambda h: h["servers"]["fixture"]["instances"]["retiring"] == 1, 10, "the instance retiring")
    assert first_pid in gw.health()["servers"]["fixture"]["pids"]
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "slept 2500 ms", result
    gw.wait_health(lambda h: first_pid not in h["servers"]["fixture"]["pids"], 10, "the retired instance stopped")


def test_the_tenant_limit_refuses_before_the_server_makes_a_task(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server("--tasks")}, {"task_max_per_tenant": 1}, ready=["fixture"])
    s = Session(gw.mcp_url, "team-a")
    start(s, "sleep", {"ms": 60000})
    refused = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}, "task": {}})
    assert refused["error"]["code"] == -32004 and "gateway.task_max_per_tenant" in refused["error"]["message"]
    assert len(own_tasks(s)) == 1, "the refused task was made on the server"
    # A plain call of the same tool is no task and is not counted.
    plain = s.request("tools/call", {"name": "fixture__sleep", "arguments": {"ms": 10}})
    assert plain["result"]["content"][0]["text"] == "slept 10 ms"


def test_the_servers_question_in_its_task_reaches_the_session_with_the_gateways_id(gw):
    s = Session(gw.mcp_url, "team-a", {"elicitation": {}})
    s.listen()
    task_id = start(s, "elicit", {"message": "Name?"})
    ask = s.wait_event(lambda e: e.get("method") == "elicitation/create", "elicitation request")
    assert ask["params"]["_meta"][RELATED] == {"taskId": task_id}, ask
    assert ask["params"]["message"] == "Name?"
    # The server says its task waits for input; the gateway's task follows it.
    s.wait_event(lambda e: e.get("method") == "notifications/tasks/status"
                 and e["params"]["status"] == "input_required", "input_required status")
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "input_required"
    resp = s.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "Ada"}}})
    assert resp.status_code == 202, resp.text
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert "Ada" in result["content"][0]["text"], result
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    (server_task,) = own_tasks(s).values()
    assert server_task["status"] == "completed" and server_task["taskId"] not in json.dumps(s.events)


def test_a_per_session_servers_task_runs_on_the_sessions_instance_and_keeps_the_session(gateway_factory):
    """A per_session server's own task runs on the session's own instance: the session does not end idle under it
    (session_idle_ttl 1s, a 2.5 s task, nothing else in flight meanwhile), and its DELETE cancels the task."""
    gw = gateway_factory({"fixture": fixture_server("--tasks", policy="per_session")}, {"session_idle_ttl": "1s"},
                         ready=["fixture"])
    s = Session(gw.mcp_url, "team-a")
    task_id = start(s, "sleep", {"ms": 2500})
    (server_id, server_task), = own_tasks(s).items()  # made once, on the session's own instance
    assert server_id != task_id and server_task["status"] == "working", server_task
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "slept 2500 ms", result
    assert own_tasks(s)[server_id]["status"] == "completed"
    # Once its tasks have ended the session may end idle again.
    time.sleep(2.5)
    assert s.client.post(s.url, content=json.dumps({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}),
                         headers=s.headers()).status_code == 404, "the session did not end idle"
    # The DELETE of the session ends its instance: the task it holds is cancelled, not left to fail.
    s = Session(gw.mcp_url, "team-a")
    task_id = start(s, "sleep", {"ms": 60000})
    assert len(own_tasks(s)) == 1
    s.end()
    got = Session(gw.mcp_url, "team-a").request("tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled", got
