"""The MCP tasks extension served by the gateway for a server that knows nothing of tasks
(toolbridge-fixture, its `sleep` tool listed in `task_tools`): a 30-second call started as a task
outlives its client's connection, a new connection of the same tenant collects the result,
another tenant cannot see it; cancellation, and the limits (tasks per tenant, bytes kept).
docs/tasks.md has the rules."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tb_support import fixture_server, parse_body

pytestmark = pytest.mark.timeout(180)

V = "2026-07-28"
TASKS = "io.modelcontextprotocol/tasks"


def meta(tasks: bool = True) -> dict:
    caps = {"extensions": {TASKS: {}}} if tasks else {}
    return {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": caps}


def rpc(client: httpx.Client, url: str, method: str, params: dict, tenant: str, tasks: bool = True,
        req_id: int = 1) -> dict:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": V, "Mcp-Method": method, "X-Toolbridge-Tenant": tenant}
    name = params.get("taskId") if method.startswith("tasks/") else params.get("name")
    if isinstance(name, str):
        headers["Mcp-Name"] = name
    body = {"jsonrpc": "2.0", "id": req_id, "method": method, "params": {**params, "_meta": meta(tasks)}}
    resp = client.post(url, content=json.dumps(body), headers=headers, timeout=60)
    for m in parse_body(resp):
        if m.get("id") == req_id:
            return m
    raise AssertionError(f"no answer: {resp.status_code} {resp.text[:500]}")


def start_sleep(url: str, tenant: str, ms: int) -> str:
    with httpx.Client() as client:
        created = rpc(client, url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": ms}}, tenant)
    result = created["result"]
    assert result["resultType"] == "task" and result["status"] == "working", created
    assert {"taskId", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= result.keys()
    assert "result" not in result and "requestState" not in result
    return result["taskId"]


def get(url: str, task_id: str, tenant: str) -> dict:
    with httpx.Client() as client:  # a new connection each time: nothing ties the task to one
        return rpc(client, url, "tasks/get", {"taskId": task_id}, tenant)


@pytest.fixture
def gw(gateway_factory):
    return gateway_factory({"fixture": fixture_server(task_tools=["sleep"])}, ready=["fixture"])


def test_a_30_second_call_outlives_its_client_and_a_new_connection_collects_it(gw):
    started = time.monotonic()
    task_id = start_sleep(gw.mcp_url, "team-a", 30_000)  # the creating connection is closed here
    assert len(task_id) == 32
    assert time.monotonic() - started < 5, "the task answered at once, not after the call"
    assert get(gw.mcp_url, task_id, "team-a")["result"]["status"] == "working"
    # Another tenant cannot see it: the same answer as for a task that does not exist.
    other = get(gw.mcp_url, task_id, "team-b")
    assert other["error"]["code"] == -32602, other
    deadline = time.monotonic() + 60
    while True:
        result = get(gw.mcp_url, task_id, "team-a")["result"]
        if result["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert result["status"] == "completed", result
    assert result["resultType"] == "complete"
    assert result["result"]["content"][0]["text"] == "slept 30000 ms"
    assert time.monotonic() - started >= 29
    # Kept after completion (within task_ttl), for any new connection of the tenant.
    assert get(gw.mcp_url, task_id, "team-a")["result"]["status"] == "completed"


def test_without_the_extension_the_call_is_synchronous_and_tasks_methods_are_refused(gw):
    with httpx.Client() as client:
        r = rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 300}},
                "team-a", tasks=False)
        assert r["result"]["content"][0]["text"] == "slept 300 ms" and "taskId" not in r["result"]
        r = rpc(client, gw.mcp_url, "tasks/get", {"taskId": "x"}, "team-a", tasks=False)
        assert r["error"]["code"] == -32021
        assert TASKS in r["error"]["data"]["requiredCapabilities"]["extensions"]
        # A quick call of a task tool answers at once, without a task (the immediate shortcut);
        # a tool outside task_tools never becomes one.
        r = rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 0}}, "team-a")
        assert r["result"]["resultType"] == "complete" and "taskId" not in r["result"]
        r = rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__echo", "arguments": {"text": "hi"}}, "team-a")
        assert r["result"]["content"][0]["text"] == "hi"
        # SEP-2663 removed tasks/list and tasks/result (tasks/get inlines the result).
        for method in ("tasks/list", "tasks/result"):
            assert rpc(client, gw.mcp_url, method, {}, "team-a")["error"]["code"] == -32601


def test_cancel_stops_the_call_and_is_idempotent(gw):
    task_id = start_sleep(gw.mcp_url, "team-a", 60_000)
    with httpx.Client() as client:
        other = rpc(client, gw.mcp_url, "tasks/cancel", {"taskId": task_id}, "team-b")
        assert other["error"]["code"] == -32602  # another tenant cannot cancel it either
        for _ in range(2):
            ack = rpc(client, gw.mcp_url, "tasks/cancel", {"taskId": task_id}, "team-a")
            assert ack["result"] == {"resultType": "complete"}, ack
    result = get(gw.mcp_url, task_id, "team-a")["result"]
    assert result["status"] == "cancelled" and "result" not in result
    # The call was cancelled upstream through the pipeline: nothing is in flight on the server any
    # more, though its 60-second sleep would still run.
    deadline = time.monotonic() + 10
    while 'toolbridge_in_flight{server="fixture"} 0' not in gw.metrics():
        assert time.monotonic() < deadline, gw.metrics()
        time.sleep(0.2)
    assert 'tool="sleep",outcome="ok"' not in gw.metrics()


def test_tasks_per_tenant_limit(gateway_factory):
    """(The byte budget and the TTL are driven by a simulated clock in tests/unit/tasks.)"""
    gw = gateway_factory({"fixture": fixture_server(task_tools=["sleep"])},
                         {"task_max_per_tenant": 1}, ready=["fixture"])
    first = start_sleep(gw.mcp_url, "team-a", 60_000)
    with httpx.Client() as client:
        refused = rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 60_000}},
                      "team-a")
        assert refused["error"]["code"] == -32004, refused
        assert "gateway.task_max_per_tenant" in refused["error"]["message"]
        # Another tenant has its own count.
        other = rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 500}},
                    "team-b")
        assert other["result"]["resultType"] == "task"
        assert rpc(client, gw.mcp_url, "tasks/cancel", {"taskId": first}, "team-a")["result"]
        # A finished task gives way to a new one.
        assert rpc(client, gw.mcp_url, "tools/call", {"name": "fixture__sleep", "arguments": {"ms": 500}},
                   "team-a")["result"]["resultType"] == "task"


# -- From Python: toolbridge.Client.start / AsyncClient.start ------------------------------------

def test_python_client_start_status_result_cancel(gw):
    import toolbridge
    with toolbridge.Client(gw.base_url, tenant="py") as client:
        task = client.start("fixture__sleep", {"ms": 1500})
        assert task.id and len(task.id) == 32
        assert task.status() == "working"
        # Another client of the tenant reaches it by id; another tenant does not.
        with toolbridge.Client(gw.base_url, tenant="py") as other:
            assert other.task(task.id).status() in ("working", "completed")
        with toolbridge.Client(gw.base_url, tenant="intruder") as intruder:
            with pytest.raises(toolbridge.TaskFailed) as refused:
                intruder.task(task.id).status()
            assert refused.value.code == -32602
        result = task.result(timeout=30)
        assert result.ok and result.text == "slept 1500 ms"
        assert task.status() == "completed"
        # A call that ends at once is answered without a task.
        quick = client.start("fixture__echo", {"text": "now"})
        assert quick.id is None and quick.status() == "completed" and quick.result().text == "now"
        # Cancel.
        long = client.start("fixture__sleep", {"ms": 60_000})
        long.cancel()
        assert long.status() == "cancelled"
        assert long.result().outcome == "cancelled"


def test_python_async_client_start(gw):
    import asyncio

    import toolbridge

    async def run():
        async with toolbridge.AsyncClient(gw.base_url, tenant="py-async") as client:
            task = await client.start("fixture__sleep", {"ms": 800})
            assert task.id and await task.status() == "working"
            result = await task.result(timeout=30)
            assert result.text == "slept 800 ms"
            long = await client.start("fixture__sleep", {"ms": 60_000})
            await long.cancel()
            assert await long.status() == "cancelled"

    asyncio.run(run())


def test_batch_mode_tasks_answers_at_once_with_task_ids(gw):
    started = time.monotonic()
    body = {"mode": "tasks", "tenant": "batcher",
            "calls": [{"tool": "fixture__sleep", "arguments": {"ms": 1000}},
                      {"tool": "fixture__echo", "arguments": {"text": "b"}},
                      {"tool": "fixture__echo", "arguments": "not an object"},
                      {"tool": "fixture__sleep", "arguments": {"ms": 60_000}}]}
    resp = httpx.post(gw.base_url + "/v1/batch", json=body, timeout=30)
    assert resp.status_code == 200, resp.text
    assert time.monotonic() - started < 1, "mode tasks waits for no call"
    entries = resp.json()["tasks"]
    assert [e["tool"] for e in entries] == ["fixture__sleep", "fixture__echo", "fixture__echo", "fixture__sleep"]
    assert entries[2]["outcome"] == "invalid_params" and "task_id" not in entries[2]
    ids = [e.get("task_id") for e in entries]
    assert all(ids[i] and len(ids[i]) == 32 for i in (0, 1, 3))
    # The batch's tenant owns them; the echo ends first, without waiting for the sleeps.
    deadline = time.monotonic() + 10
    while get(gw.mcp_url, ids[1], "batcher")["result"]["status"] != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert get(gw.mcp_url, ids[1], "batcher")["result"]["result"]["content"][0]["text"] == "b"
    assert get(gw.mcp_url, ids[0], "batcher")["result"]["status"] == "working"
    assert get(gw.mcp_url, ids[0], "someone-else")["error"]["code"] == -32602
    with httpx.Client() as client:
        rpc(client, gw.mcp_url, "tasks/cancel", {"taskId": ids[3]}, "batcher")
    while get(gw.mcp_url, ids[0], "batcher")["result"]["status"] == "working":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert get(gw.mcp_url, ids[0], "batcher")["result"]["result"]["content"][0]["text"] == "slept 1000 ms"
    assert get(gw.mcp_url, ids[3], "batcher")["result"]["status"] == "cancelled"


def test_python_start_batch(gw):
    import toolbridge
    with toolbridge.Client(gw.base_url, tenant="py-batch") as client:
        tasks = client.start_batch([("fixture__sleep", {"ms": 500}), ("fixture__echo", {"text": "x"}),
                                    ("fixture__echo", "not an object")])
        assert [t.id is not None for t in tasks] == [True, True, False]
        assert tasks[0].result(timeout=30).text == "slept 500 ms"
        assert tasks[1].result(timeout=30).text == "x"
        assert tasks[2].status() == "failed" and tasks[2].result().outcome == "failed"


def test_progress_of_a_task_is_its_status_message(gateway_factory):
    """SEP-2663 sends no notifications/progress of a task; the latest is the statusMessage."""
    gw = gateway_factory({"fixture": fixture_server(task_tools=["progress"])}, ready=["fixture"])
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "fixture__progress", "arguments": {"steps": 6, "delay_ms": 400},
                       "_meta": {**meta(), "progressToken": "p-1"}}}
    headers = {"Accept": "application/json", "Content-Type": "application/json", "MCP-Protocol-Version": V,
               "Mcp-Method": "tools/call", "Mcp-Name": "fixture__progress", "X-Toolbridge-Tenant": "team-a"}
    resp = httpx.post(gw.mcp_url, content=json.dumps(body), headers=headers, timeout=30)
    created = resp.json()["result"]
    assert created["resultType"] == "task", created
    seen = set()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        result = get(gw.mcp_url, created["taskId"], "team-a")["result"]
        if result["status"] != "working":
            break
        if "statusMessage" in result:
            seen.add(result["statusMessage"])
        time.sleep(0.1)
    assert result["status"] == "completed", result
    assert "statusMessage" not in result  # the progress of a finished task is over
    assert seen and seen <= {f"step {i}" for i in range(1, 7)}, seen
    assert len(seen) >= 2, f"the status message did not follow the progress: {seen}"


def test_a_stop_with_a_running_task_cancels_it_and_ends_promptly(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(task_tools=["sleep"])}, ready=["fixture"],
                         gateway={"shutdown_grace": "30s"})
    start_sleep(gw.mcp_url, "team-a", 60_000)
    gw.wait_health(lambda h: h["servers"]["fixture"]["in_flight"] == 1, 5, "the task's call in flight")
    started = time.monotonic()
    gw.close()  # SIGTERM; asserts exit code 0 and no process left behind
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"the stop took {elapsed:.1f} s: it waited for the task (shutdown_grace 30s)"


def listen_frames(url: str, tenant: str, task_ids: list, tasks: bool, count: int) -> tuple[int, list]:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": V, "Mcp-Method": "subscriptions/listen", "X-Toolbridge-Tenant": tenant}
    body = json.dumps({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                       "params": {"_meta": meta(tasks), "notifications": {"taskIds": task_ids}}})
    frames: list = []
    with httpx.Client(timeout=30) as client, client.stream("POST", url, content=body, headers=headers) as resp:
        if resp.status_code != 200:
            resp.read()
            return resp.status_code, [resp.json()]
        for line in resp.iter_lines():
            if line.startswith("data:"):
                frames.append(json.loads(line[5:]))
                if len(frames) == count:
                    break
    return resp.status_code, frames


def test_status_notifications_on_subscriptions_listen(gw):
    running = start_sleep(gw.mcp_url, "team-a", 2500)
    finished = start_sleep(gw.mcp_url, "team-a", 300)
    time.sleep(1.0)  # `finished` has ended: its end is sent at once, the other's when it comes
    other_tenants = start_sleep(gw.mcp_url, "team-b", 300)
    status, frames = listen_frames(gw.mcp_url, "team-a", [running, finished, other_tenants, "nope"], True, 3)
    assert status == 200
    ack, first, second = frames
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    # Only the client's own, known tasks are agreed.
    assert ack["params"]["notifications"] == {"taskIds": [running, finished]}, ack
    assert first["method"] == second["method"] == "notifications/tasks"
    assert first["params"]["taskId"] == finished and first["params"]["status"] == "completed"
    assert second["params"]["taskId"] == running and second["params"]["status"] == "completed"
    assert second["params"]["result"]["content"][0]["text"] == "slept 2500 ms"  # a DetailedTask
    assert second["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    # Asking for task notifications without declaring the extension: -32021.
    status, [refused] = listen_frames(gw.mcp_url, "team-a", [running], False, 1)
    assert refused["error"]["code"] == -32021, refused
