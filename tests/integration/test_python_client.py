"""toolbridge.Client and toolbridge.AsyncClient against a real gateway with the fixture and the
official server-memory (one instance per trajectory): tools (cached), single calls, batches,
trajectories named and released, typed errors, kept-alive connections, and Gateway(config)
with its client ready."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest
import toolbridge

from tb_support import BUILD_DIR, fixture_bin, fixture_server, memory_server

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def gw(module_gateway_factory, tmp_path_factory):
    sessions = tmp_path_factory.mktemp("sessions")
    return module_gateway_factory(
        {"fixture": fixture_server(call_timeout="20s"),
         "memory": memory_server(Path("${session.dir}/memory.json"), policy="per_session", spares=1)},
        gateway={"session_dir_root": str(sessions)})


@pytest.fixture
def client(gw):
    with toolbridge.Client(gw.base_url) as c:
        yield c


def entity(name: str) -> dict:
    return {"entities": [{"name": name, "entityType": "person", "observations": ["likes tea"]}]}


def names_in_graph(result: toolbridge.CallResult) -> set[str]:
    return set(re.findall(r'"name":\s*"([^"]+)"', result.text))


def connections(gw) -> float:
    m = re.search(r"^toolbridge_connections (\S+)$", gw.metrics(), re.M)
    return float(m.group(1))


def test_tools_are_listed_once_and_cached(client):
    tools = client.tools()
    names = {t["name"] for t in tools}
    assert {"fixture__echo", "memory__create_entities", "memory__read_graph"} <= names
    assert all("inputSchema" in t for t in tools)
    assert client.tools() is tools
    assert client.tools(refresh=True) is not tools


def test_one_call_and_its_result(client):
    r = client.call("fixture__echo", {"text": "from the client"})
    assert r.ok and r.outcome == "ok" and r.text == "from the client"
    assert r.result["content"][0]["type"] == "text"
    assert r.timing.total_ms >= r.timing.execution_ms > 0
    # A tool error is the tool's answer, for the model: a result, not an exception.
    failed = client.call("fixture__fail", {"message": "nope"})
    assert failed.outcome == "tool_error" and failed.is_error and failed.text == "nope"
    with pytest.raises(toolbridge.ToolError) as info:
        failed.raise_for_outcome()
    assert info.value.tool == "fixture__fail" and info.value.result["isError"] is True


def test_gateway_faults_raise_typed_errors(client):
    with pytest.raises(toolbridge.InvalidCall) as info:
        client.call("fixture__no_such_tool", {})
    assert info.value.outcome == "invalid_params" and info.value.code == -32602
    assert "fixture__no_such_tool" in info.value.message
    with pytest.raises(toolbridge.CallTimeout):
        client.call("fixture__sleep", {"ms": 3000}, timeout_ms=100)
    # check=False hands the outcome back instead.
    r = client.call("fixture__sleep", {"ms": 3000}, timeout_ms=100, check=False)
    assert r.outcome == "timeout" and "timed out" in r.text
    assert issubclass(toolbridge.CallTimeout, toolbridge.CallFailed)
    assert issubclass(toolbridge.CallFailed, toolbridge.ToolbridgeError)


def test_a_batch_keeps_order_and_per_call_outcomes(client):
    results = client.batch([
        ("fixture__sleep", {"ms": 200}),
        toolbridge.ToolCall("fixture__echo", {"text": "b"}),
        {"tool": "fixture__fail", "arguments": {}},
        ("fixture__nope", {}),
        ("fixture__sleep", {"ms": 1000}, 50),
    ])
    assert [r.outcome for r in results] == ["ok", "ok", "tool_error", "invalid_params", "timeout"]
    assert results[0].text == "slept 200 ms" and results[1].text == "b"
    assert [r.tool for r in results] == ["fixture__sleep", "fixture__echo", "fixture__fail",
                                         "fixture__nope", "fixture__sleep"]
    started = time.monotonic()
    ff = client.batch([("fixture__sleep", {"ms": 5000}), ("fixture__fail", {})], fail_fast=True)
    assert time.monotonic() - started < 3
    assert [r.outcome for r in ff] == ["cancelled", "tool_error"]
    with pytest.raises(toolbridge.CallCancelled):
        ff[0].raise_for_outcome()
    seq = client.batch([("fixture__sleep", {"ms": 100})] * 3, sequential=True)
    totals = [r.timing.total_ms for r in seq]
    assert totals == sorted(totals) and totals[2] - totals[0] >= 180


def test_server_memory_per_trajectory_and_release(gw, client):
    with client.trajectory("alice-run") as alice, client.trajectory() as other:
        assert other.name.startswith("t-") and other.name != alice.name
        alice.call("memory__create_entities", entity("Alice"))
        other.call("memory__create_entities", entity("Bob"))
        # Each trajectory sees only its own graph: its own server-memory instance.
        assert names_in_graph(alice.call("memory__read_graph", {})) == {"Alice"}
        graph_b, = other.batch([("memory__read_graph", {})])
        assert names_in_graph(graph_b) == {"Bob"}
        # Another request of the same trajectory (here a batch) keeps its state.
        r = client.batch([("memory__search_nodes", {"query": "Alice"})], trajectory="alice-run")
        assert "Alice" in r[0].text
        assert gw.health()["servers"]["memory"]["sessions_bound"] == 2
    # Released by the with-block: the instances are gone, a new trajectory of the name is empty.
    gw.wait_health(lambda h: h["servers"]["memory"]["sessions_bound"] == 0, 10, "trajectories released")
    assert names_in_graph(client.call("memory__read_graph", {}, trajectory="alice-run")) == set()
    assert client.release("alice-run") == 1
    assert client.release("never-used") == 0


def test_ownership_is_by_tenant(gw):
    with toolbridge.Client(gw.base_url, tenant="run-a") as a, toolbridge.Client(gw.base_url, tenant="run-b") as b:
        a.call("fixture__echo", {"text": "x"}, trajectory="owned-by-a")
        with pytest.raises(toolbridge.TrajectoryRefused) as info:
            b.call("fixture__echo", {"text": "x"}, trajectory="owned-by-a")
        assert info.value.status == 403 and "belongs to another client" in info.value.message
        with pytest.raises(toolbridge.RequestRejected) as info:
            b.release("owned-by-a")
        assert info.value.status == 403
        assert a.release("owned-by-a") == 0


def test_bad_requests_raise_request_rejected(client):
    with pytest.raises(toolbridge.RequestRejected) as info:
        client.batch([])
    assert info.value.status == 400 and info.value.code == "invalid_request"
    with pytest.raises(toolbridge.RequestRejected) as info:
        client.batch([("fixture__echo", {"text": "x"})] * 300)
    assert info.value.status == 413 and info.value.code == "too_many_calls"
    with pytest.raises(toolbridge.RequestRejected):
        client.call("fixture__echo", {"text": "x"}, trajectory="bad name")


def test_connections_are_kept_alive_and_shared_by_threads(gw):
    with toolbridge.Client(gw.base_url) as c:
        before = connections(gw)
        for i in range(50):
            assert c.call("fixture__echo", {"text": str(i)}).text == str(i)
        assert connections(gw) - before <= 1
        errors: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                for i in range(20):
                    assert c.call("fixture__echo", {"text": f"{k}-{i}"}).text == f"{k}-{i}"
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert connections(gw) - before <= 4


def test_unreachable_gateway_raises_connection_failed():
    with toolbridge.Client("http://127.0.0.1:9") as c:
        with pytest.raises(toolbridge.ConnectionFailed):
            c.call("fixture__echo", {"text": "x"})

    async def main():
        async with toolbridge.AsyncClient("http://127.0.0.1:9") as c:
            await c.tools()

    with pytest.raises(toolbridge.ConnectionFailed):
        asyncio.run(main())


def test_overloaded_is_typed_with_retry_after(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(concurrency_limit=1)}, {"admission_queue_size": 1})
    with toolbridge.Client(gw.base_url) as c:
        holders = [threading.Thread(target=c.call, args=("fixture__sleep", {"ms": 1500})) for _ in range(2)]
        for t in holders:
            t.start()
        gw.wait_health(lambda h: h["admission"]["servers"]["fixture"]["queued"] == 1, 10,
                       "one call on the slot and one in the queue")
        with pytest.raises(toolbridge.Overloaded) as info:
            c.batch([("fixture__echo", {"text": "x"})])
        for t in holders:
            t.join()
    assert info.value.status == 429 and info.value.retry_after >= 1


def test_async_client(gw):
    async def main():
        async with toolbridge.AsyncClient(gw.mcp_url) as c:  # the /mcp URL works too
            tools = await c.tools()
            assert await c.tools() is tools
            r = await c.call("fixture__echo", {"text": "async"})
            assert r.text == "async"
            # Many calls at once from one client, each on a pooled connection.
            texts = await asyncio.gather(*(c.call("fixture__echo", {"text": str(i)}) for i in range(40)))
            assert [t.text for t in texts] == [str(i) for i in range(40)]
            results = await c.batch([("fixture__sleep", {"ms": 100}), ("fixture__fail", {})])
            assert [x.outcome for x in results] == ["ok", "tool_error"]
            with pytest.raises(toolbridge.InvalidCall):
                await c.call("fixture__nope", {})
            async with c.trajectory("async-traj") as t:
                await t.call("memory__create_entities", entity("Carol"))
                assert names_in_graph(await t.call("memory__read_graph", {})) == {"Carol"}
            assert t.released
            # A large result (1 MB) comes through whole.
            big = await c.call("fixture__payload", {"bytes": 1 << 20})
            assert len(big.text) == 1 << 20

    asyncio.run(main())


@pytest.mark.timeout(60)
def test_gateway_from_python_has_its_client_ready(tmp_path):
    cfg = tmp_path / "servers.yaml"
    cfg.write_text(f"servers:\n  fixture:\n    command: {fixture_bin()}\n")
    with toolbridge.Gateway(cfg, binary=str(BUILD_DIR / "toolbridge")) as gateway:
        assert gateway.client.call("fixture__echo", {"text": "ready"}).text == "ready"
        assert gateway.client is gateway.client

        async def main():
            async with gateway.async_client() as c:
                return (await c.call("fixture__add", {"a": 2, "b": 3})).text

        assert asyncio.run(main()) == "5"
