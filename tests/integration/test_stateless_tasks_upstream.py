"""A server's own tasks for stateless (2026-07-28) clients: toolbridge-fixture started with --tasks declares
capabilities.tasks.requests.tools.call and marks its tools with execution.taskSupport, so a tools/call from a client
that declared the tasks extension (SEP-2663) runs as the fixture's own task, made once. The client only ever sees the
gateway's task id; tasks/get is asked of the instance that holds the task and inlines its result, tasks/cancel reaches
the server, the server's questions become the task's inputRequests (answered by tasks/update), and the instance's
death fails the task. The fixture's `own_tasks` tool answers what its own tasks/list says. docs/tasks.md has the
rules."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tb_support import fixture_server, stateless_task_rpc

pytestmark = pytest.mark.timeout(120)

V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"


def rpc(url: str, method: str, params: dict, tenant: str = "team-a", caps: dict | None = None,
        req_id: int = 1) -> dict:
    return stateless_task_rpc(url, method, params, tenant, caps, req_id)


def own_tasks(url: str) -> dict:
    """The fixture's own tasks (its tasks/list), by the fixture's ids: a plain call (no extension declared)."""
    answer = rpc(url, "tools/call", {"name": "fixture__own_tasks", "arguments": {}}, caps={})
    return {t["taskId"]: t for t in json.loads(answer["result"]["content"][0]["text"])["tasks"]}


def start(url: str, tool: str, arguments: dict, tenant: str = "team-a", caps: dict | None = None,
          status: tuple = ("working",)) -> str:
    created = rpc(url, "tools/call", {"name": f"fixture__{tool}", "arguments": arguments}, tenant, caps)
    result = created["result"]
    assert result["resultType"] == "task" and result["status"] in status, created
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= result.keys()
    return result["taskId"]


def wait_status(url: str, task_id: str, until, timeout: float = 10, tenant: str = "team-a", caps=None) -> dict:
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        got = rpc(url, "tasks/get", {"taskId": task_id}, tenant, caps)["result"]
        seen.append(got)
        if until(got) or time.monotonic() > deadline:
            return got, seen
        time.sleep(0.1)


@pytest.fixture
def gw(gateway_factory):
    return gateway_factory({"fixture": fixture_server("--tasks")}, ready=["fixture"])


def test_a_call_becomes_the_servers_task_once_and_only_the_gateways_id_is_seen(gw):
    task_id = start(gw.mcp_url, "progress", {"steps": 4, "delay_ms": 400})
    assert len(task_id) == 32, task_id
    # The server holds it as its own task, made once, under its own id.
    server_side = own_tasks(gw.mcp_url)
    assert len(server_side) == 1, server_side
    (server_id, server_task), = server_side.items()
    assert server_id != task_id and server_task["status"] == "working", server_side
    # tasks/get is asked of the server: what its tool last said comes through as statusMessage, and the result is
    # inlined once it completes.
    done, seen = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working")
    assert done["status"] == "completed" and done["resultType"] == "complete", done
    assert any(g.get("statusMessage", "").startswith("step ") for g in seen), seen
    assert done["result"]["content"][0]["text"] == "done", done
    assert done["result"]["_meta"][RELATED] == {"taskId": task_id}, done
    assert server_id not in json.dumps(seen)
    assert own_tasks(gw.mcp_url)[server_id]["status"] == "completed"
    assert len(own_tasks(gw.mcp_url)) == 1, "the call was sent to the server more than once"
    # The follower's tasks/result held the instance's slot until the end, and no more.
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "nothing in flight")


def test_without_the_extension_the_server_gets_an_ordinary_call(gw):
    plain = rpc(gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 10}}, caps={})
    assert plain["result"]["content"][0]["text"] == "slept 10 ms" and "taskId" not in plain["result"]
    assert own_tasks(gw.mcp_url) == {}


def test_cancel_reaches_the_server_and_another_tenant_sees_nothing(gw):
    task_id = start(gw.mcp_url, "sleep", {"ms": 60000})
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        params = {"taskId": task_id, "inputResponses": {}} if method == "tasks/update" else {"taskId": task_id}
        assert rpc(gw.mcp_url, method, params, "team-b")["error"]["code"] == -32602
    (server_id, server_task), = own_tasks(gw.mcp_url).items()
    assert server_task["status"] == "working"
    for _ in range(2):  # idempotent
        ack = rpc(gw.mcp_url, "tasks/cancel", {"taskId": task_id})
        assert ack["result"] == {"resultType": "complete"}, ack
    assert own_tasks(gw.mcp_url)[server_id]["status"] == "cancelled"
    got = rpc(gw.mcp_url, "tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled" and "result" not in got, got
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 0, 5, "the follower gone")


def test_the_death_of_the_instance_fails_its_task(gw):
    task_id = start(gw.mcp_url, "sleep", {"ms": 60000})
    pid = gw.health()["servers"]["fixture"]["pid"]
    os.kill(pid, signal.SIGKILL)
    got, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working")
    assert got["status"] == "failed", got
    assert got["error"]["code"] == -32603, got
    assert got["error"]["message"].startswith("the server's instance that held this task is gone, and its task "
                                              "with it ("), got
    # The restarted instance knows nothing of it; a new task runs there.
    gw.wait_health(lambda h: h["servers"]["fixture"].get("pid") not in (None, pid)
                   and h["servers"]["fixture"]["state"] == "ready", 20, "a new instance")
    again = start(gw.mcp_url, "sleep", {"ms": 300})
    done, _ = wait_status(gw.mcp_url, again, lambda g: g["status"] != "working")
    assert done["result"]["content"][0]["text"] == "slept 300 ms", done


def test_the_servers_question_becomes_input_requests_answered_by_tasks_update(gw):
    caps = {"extensions": {TASKS: {}}, "elicitation": {}}
    task_id = start(gw.mcp_url, "elicit", {"message": "Name?"}, caps=caps, status=("working", "input_required"))
    got, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working", caps=caps)
    assert got["status"] == "input_required", got
    (key, ask), = got["inputRequests"].items()
    assert ask["method"] == "elicitation/create" and ask["params"]["message"] == "Name?", got
    assert ask["params"]["_meta"][RELATED] == {"taskId": task_id}, ask
    (server_id,) = own_tasks(gw.mcp_url)
    assert server_id not in json.dumps(got)
    answer = {"action": "accept", "content": {"answer": "Ada"}}
    ack = rpc(gw.mcp_url, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}}, caps=caps)
    assert ack["result"] == {"resultType": "complete"}, ack
    done, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] not in ("working", "input_required"),
                          caps=caps)
    assert done["status"] == "completed" and "Ada" in done["result"]["content"][0]["text"], done
    assert own_tasks(gw.mcp_url)[server_id]["status"] == "completed"


def test_a_client_without_the_capability_is_not_asked(gw):
    """The gateway answers the server's elicitation with the revision's error at once: the task never waits (and
    ends within the immediate-result window: the call's answer is the tool's error)."""
    r = rpc(gw.mcp_url, "tools/call", {"name": "fixture__elicit", "arguments": {"message": "Name?"}})["result"]
    assert r["resultType"] == "complete" and r["isError"] is True, r
    assert "elicitation failed" in r["content"][0]["text"] and "-32021" in r["content"][0]["text"], r
    assert [t["status"] for t in own_tasks(gw.mcp_url).values()] == ["failed"]  # the server's task, ended


def test_a_task_that_ends_within_the_window_answers_as_the_call(gw):
    """The extension's immediate-result shortcut: the server's task ended within 100 ms, so the client gets the
    call's result, not a task to poll."""
    r = rpc(gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 10}})["result"]
    assert r["resultType"] == "complete" and r["content"][0]["text"] == "slept 10 ms" and "taskId" not in r, r
    (server_task,) = own_tasks(gw.mcp_url).values()  # it did run as the server's task, once
    assert server_task["status"] == "completed", server_task


def test_the_tenant_limit_refuses_before_the_server_makes_a_task(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server("--tasks")}, {"task_max_per_tenant": 1}, ready=["fixture"])
    start(gw.mcp_url, "sleep", {"ms": 60000})
    refused = rpc(gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60000}})
    assert refused["error"]["code"] == -32004 and "gateway.task_max_per_tenant" in refused["error"]["message"]
    assert len(own_tasks(gw.mcp_url)) == 1, "the refused task was made on the server"


def test_a_per_session_servers_task_keeps_the_clients_session_and_its_instance(gateway_factory):
    """A per_session server's own task runs on the instance of the client's (per-tenant) stateless session: that
    session does not end idle while the task runs (session_idle_ttl 1s, a 2.5 s task, nothing but tasks/get
    meanwhile), so neither does the instance that holds the task."""
    gw = gateway_factory({"fixture": fixture_server("--tasks", policy="per_session")}, {"session_idle_ttl": "1s"},
                         ready=["fixture"])
    task_id = start(gw.mcp_url, "sleep", {"ms": 2500})
    (server_id, server_task), = own_tasks(gw.mcp_url).items()  # the same session's instance holds it
    assert server_id != task_id and server_task["status"] == "working", server_task
    done, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working")
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "slept 2500 ms", done
    # Another tenant's session has its own instance, which knows nothing of the task.
    assert own_tasks_of(gw.mcp_url, "team-b") == {}


def own_tasks_of(url: str, tenant: str) -> dict:
    answer = rpc(url, "tools/call", {"name": "fixture__own_tasks", "arguments": {}}, tenant, caps={})
    return {t["taskId"]: t for t in json.loads(answer["result"]["content"][0]["text"])["tasks"]}
