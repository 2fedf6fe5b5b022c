"""A 2026-07-28 server's own tasks (SEP-2663, server-directed): toolbridge-fixture --tasks --http declares the tasks
extension in server/discover and answers a tools/call of a client that declared it with a task of its own
(`resultType: "task"`), served by tasks/get (the result inlined once it ends) and tasks/cancel. The gateway passes
such a server's tasks through: the task-augmented call becomes the server's task, made once; the client sees only
the gateway's id; the gateway follows the task by a bounded poll of the server's tasks/get and brings the result
back; a cancel reaches the server; another tenant sees nothing. The fixture's `own_tasks` tool answers the tasks it
made. docs/tasks.md has the rules."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time

import pytest

from tb_support import fixture_bin, stateless_task_rpc, stop_process

pytestmark = pytest.mark.timeout(120)

V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"


class Fixture:
    """toolbridge-fixture --tasks on HTTP, port 0; stopped and reaped by close()."""

    def __init__(self):
        self.proc = subprocess.Popen([str(fixture_bin()), "--tasks", "--http", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=dict(os.environ))
        line = self.proc.stdout.readline().decode()
        assert line.startswith("listening on "), line
        self.url = line.split()[-1] + "/mcp"
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def close(self):
        stop_process(self.proc)


@pytest.fixture
def fx():
    f = Fixture()
    yield f
    f.close()


def rpc(url: str, method: str, params: dict, tenant: str = "team-a", caps: dict | None = None,
        req_id: int = 1) -> dict:
    return stateless_task_rpc(url, method, params, tenant, caps, req_id)


def own_tasks(url: str, tool: str = "own_tasks") -> dict:
    """The fixture's own tasks, by the fixture's ids (a plain call: no extension declared)."""
    answer = rpc(url, "tools/call", {"name": tool, "arguments": {}}, caps={})
    return {t["taskId"]: t for t in json.loads(answer["result"]["content"][0]["text"])["tasks"]}


def start(url: str, tool: str, arguments: dict, tenant: str = "team-a") -> str:
    created = rpc(url, "tools/call", {"name": tool, "arguments": arguments}, tenant)
    result = created["result"]
    assert result["resultType"] == "task" and result["status"] == "working", created
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= result.keys(), result
    return result["taskId"]


def wait_status(url: str, task_id: str, until, timeout: float = 15, tenant: str = "team-a"):
    deadline = time.monotonic() + timeout
    seen = []
    while True:
        got = rpc(url, "tasks/get", {"taskId": task_id}, tenant)["result"]
        seen.append(got)
        if until(got) or time.monotonic() > deadline:
            return got, seen
        time.sleep(0.1)


# The fixture alone: the peer the gateway's pass-through is tested against.

def test_the_fixture_answers_a_declaring_client_with_a_task_of_its_own(fx):
    plain = rpc(fx.url, "tools/call", {"name": "sleep", "arguments": {"ms": 10}}, caps={})
    assert plain["result"]["content"][0]["text"] == "slept 10 ms" and "taskId" not in plain["result"], plain
    assert own_tasks(fx.url) == {}
    task_id = start(fx.url, "progress", {"steps": 3, "delay_ms": 100})
    assert list(own_tasks(fx.url)) == [task_id]
    done, _ = wait_status(fx.url, task_id, lambda g: g["status"] != "working")
    assert done["status"] == "completed" and done["resultType"] == "complete", done
    assert done["result"]["content"][0]["text"] == "done", done
    # tasks/* need the extension declared.
    refused = rpc(fx.url, "tasks/get", {"taskId": task_id}, caps={})
    assert refused["error"]["code"] == -32021, refused
    # A cancel reaches the task; on an ended one it is the same ack.
    slow = start(fx.url, "sleep", {"ms": 60000})
    for _ in range(2):
        assert rpc(fx.url, "tasks/cancel", {"taskId": slow})["result"] == {"resultType": "complete"}
    assert own_tasks(fx.url)[slow]["status"] == "cancelled"
    assert rpc(fx.url, "tasks/get", {"taskId": "nope"})["error"]["code"] == -32602


# Through the gateway.

@pytest.fixture
def gw(gateway_factory, fx):
    g = gateway_factory({"remote": {"url": fx.url, "call_timeout": "30s"}})
    g.wait_ready(["remote"])
    return g


def test_a_stateless_call_becomes_the_2026_servers_task_once_and_its_result_comes_back(gw):
    task_id = start(gw.mcp_url, "remote__progress", {"steps": 4, "delay_ms": 300})
    assert len(task_id) == 32 and int(task_id, 16) >= 0, task_id
    server_side = own_tasks(gw.mcp_url, "remote__own_tasks")
    assert len(server_side) == 1, server_side
    (server_id, server_task), = server_side.items()
    assert server_id != task_id and server_task["status"] == "working", server_side
    done, seen = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working")
    assert done["status"] == "completed", done
    assert done["result"]["content"][0]["text"] == "done", done
    assert done["result"]["_meta"][RELATED] == {"taskId": task_id}, done
    assert server_id not in json.dumps(seen)
    assert len(own_tasks(gw.mcp_url, "remote__own_tasks")) == 1, "the call was sent to the server more than once"


def test_the_gateway_polls_the_server_to_the_end_without_being_asked(gw, fx):
    task_id = start(gw.mcp_url, "remote__sleep", {"ms": 300})
    (server_id, _), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    deadline = time.monotonic() + 10
    while own_tasks(gw.mcp_url, "remote__own_tasks")[server_id]["status"] == "working":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    time.sleep(1.0)  # a poll interval (the fixture names 200 ms) and its answer
    # The server is gone: only the gateway's own poll, asked by nobody, can have brought the result.
    fx.close()
    got = rpc(gw.mcp_url, "tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "completed", got
    assert got["result"]["content"][0]["text"] == "slept 300 ms", got


def test_cancel_reaches_the_2026_server_and_another_tenant_sees_nothing(gw):
    task_id = start(gw.mcp_url, "remote__sleep", {"ms": 60000})
    for method in ("tasks/get", "tasks/cancel"):
        assert rpc(gw.mcp_url, method, {"taskId": task_id}, "team-b")["error"]["code"] == -32602
    (server_id, server_task), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    assert server_task["status"] == "working"
    for _ in range(2):
        ack = rpc(gw.mcp_url, "tasks/cancel", {"taskId": task_id})
        assert ack["result"] == {"resultType": "complete"}, ack
    assert own_tasks(gw.mcp_url, "remote__own_tasks")[server_id]["status"] == "cancelled"
    got = rpc(gw.mcp_url, "tasks/get", {"taskId": task_id})["result"]
    assert got["status"] == "cancelled" and "result" not in got, got


def test_a_2025_session_task_becomes_the_2026_servers_task(gw):
    from test_session_tasks import Session

    s = Session(gw.mcp_url, "team-a")
    created = s.request("tools/call", {"name": "remote__sleep", "arguments": {"ms": 300}, "task": {"ttl": 60000}})
    task_id = created["result"]["task"]["taskId"]
    assert len(task_id) == 32, created
    (server_id, _), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    assert server_id != task_id
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert result["content"][0]["text"] == "slept 300 ms", result
    assert result["_meta"][RELATED] == {"taskId": task_id}, result
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"
    assert len(own_tasks(gw.mcp_url, "remote__own_tasks")) == 1


def test_the_fixtures_task_asks_for_input_and_tasks_update_answers_it(fx):
    task_id = start(fx.url, "elicit", {"message": "go on?"})
    asking, _ = wait_status(fx.url, task_id, lambda g: g["status"] != "working")
    assert asking["status"] == "input_required", asking
    request = asking["inputRequests"]["input-1"]
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "go on?", asking
    ack = rpc(fx.url, "tasks/update", {"taskId": task_id,
                                       "inputResponses": {"input-1": {"action": "accept", "content": {"answer": "yes"}}}})
    assert ack["result"] == {"resultType": "complete"}, ack
    done, _ = wait_status(fx.url, task_id, lambda g: g["status"] not in ("working", "input_required"))
    assert done["status"] == "completed" and '"yes"' in done["result"]["content"][0]["text"], done


def test_a_2026_servers_task_asks_the_client_through_the_gateway(gw):
    caps = {"extensions": {TASKS: {}}, "elicitation": {}}
    created = rpc(gw.mcp_url, "tools/call", {"name": "remote__elicit", "arguments": {"message": "go on?"}},
                  caps=caps)["result"]
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    (server_id, _), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    asking, seen = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working")
    assert asking["status"] == "input_required", asking
    (key, request), = asking["inputRequests"].items()
    assert key == "input-1" and request["method"] == "elicitation/create", asking
    assert request["params"]["message"] == "go on?", asking
    ack = rpc(gw.mcp_url, "tasks/update", {"taskId": task_id, "inputResponses": {
        key: {"action": "accept", "content": {"answer": "yes"}}}}, caps=caps)
    assert ack["result"] == {"resultType": "complete"}, ack
    done, more = wait_status(gw.mcp_url, task_id, lambda g: g["status"] not in ("working", "input_required"))
    assert done["status"] == "completed" and '"yes"' in done["result"]["content"][0]["text"], done
    assert server_id not in json.dumps(seen + more)
    assert len(own_tasks(gw.mcp_url, "remote__own_tasks")) == 1


def test_a_2026_servers_task_asking_a_client_without_the_capability_fails(gw):
    task_id = start(gw.mcp_url, "remote__elicit", {"message": "go on?"})
    (server_id, _), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    failed, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] not in ("working", "input_required"))
    assert failed["status"] == "failed" and failed["error"]["code"] == -32021, failed
    # The server was told: its task is cancelled, not left asking.
    deadline = time.monotonic() + 5
    while own_tasks(gw.mcp_url, "remote__own_tasks")[server_id]["status"] != "cancelled":
        assert time.monotonic() < deadline, own_tasks(gw.mcp_url, "remote__own_tasks")
        time.sleep(0.1)


def test_a_2026_servers_question_reaches_a_2025_session_with_the_gateways_id(gw):
    from test_session_tasks import Session

    s = Session(gw.mcp_url, "team-a", {"elicitation": {}})
    s.listen()
    created = s.request("tools/call", {"name": "remote__elicit", "arguments": {"message": "Name?"},
                                       "task": {"ttl": 60000}})
    task_id = created["result"]["task"]["taskId"]
    ask = s.wait_event(lambda e: e.get("method") == "elicitation/create", "elicitation request")
    assert ask["params"]["_meta"][RELATED] == {"taskId": task_id}, ask
    assert ask["params"]["message"] == "Name?"
    assert s.request("tasks/get", {"taskId": task_id})["result"]["status"] == "input_required"
    resp = s.send({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept", "content": {"answer": "Ada"}}})
    assert resp.status_code == 202, resp.text
    result = s.request("tasks/result", {"taskId": task_id})["result"]
    assert "Ada" in result["content"][0]["text"], result
    (server_id, server_task), = own_tasks(gw.mcp_url, "remote__own_tasks").items()
    assert server_task["status"] == "completed" and server_id not in json.dumps(s.events)


def test_a_2026_server_that_goes_away_fails_its_task(gw, fx):
    task_id = start(gw.mcp_url, "remote__sleep", {"ms": 60000})
    fx.close()
    # The gateway's polls find nothing usable (or the instance gone): the task fails, not left working.
    failed, _ = wait_status(gw.mcp_url, task_id, lambda g: g["status"] != "working", timeout=40)
    assert failed["status"] == "failed" and failed["error"]["code"] == -32603, failed
    assert "is gone" in failed["error"]["message"], failed
