"""Fault classes (docs/faults.md) against a real gateway and the fixture server: every outcome a
test can provoke carries its documented class on all three front ends (MCP tools/call in both
protocol eras, /v1/batch in JSON and MessagePack, /v1/parse), in the trajectory view (counts by
class, infra_failed), trace-shaped call records and metrics; the Python client exposes it per
call and per trajectory."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import uuid

import httpx
import pytest

from tb_support import RawSession, fixture_server, metric, parse_body, response_for, rpc

pytestmark = pytest.mark.timeout(120)

V2026 = "2026-07-28"

# (tool, arguments, batch outcome, class): one row per outcome provoked on a healthy gateway.
CASES = [
    ("fixture__echo", {"text": "hi"}, "ok", "ok"),
    ("fixture__no_such_tool_zq", {}, "invalid_params", "agent"),
    # Arguments that fail the schema under validate: enforce (an array cannot be coerced to a
    # number): an isError result the gateway wrote; the tool never ran.
    ("strict__add", {"a": [1], "b": 2}, "tool_error", "agent"),
    ("fixture__fail", {"message": "no"}, "tool_error", "tool"),
    ("fixture__rpc_error", {"code": -32000, "message": "refused"}, "server_error", "tool"),
    ("fixture__sleep", {"ms": 3000}, "timeout", "infra"),
    ("quitter__echo", {"text": "x"}, "unavailable", "infra"),
]
TIMEOUT_MS = 300


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    servers = {
        "fixture": fixture_server(call_timeout="20s"),
        "strict": fixture_server(validate="enforce"),
        "quitter": {"command": "false", "args": []},
    }
    gw = module_gateway_factory(servers, {"tool_naming": "prefixed"}, name="faults", ready=["fixture", "strict"])
    gw.wait_health(lambda h: h["servers"]["quitter"].get("state") in ("backoff", "failed"), 20, "quitter down")
    return gw


def mcp_fault(answer: dict) -> str:
    """The class a tools/call answer names: result._meta or error.data; "ok" if none."""
    if "error" in answer:
        return (answer["error"].get("data") or {}).get("toolbridge/fault", "ok")
    return (answer["result"].get("_meta") or {}).get("toolbridge/fault", "ok")


def mcp_call(s: RawSession, tool: str, arguments: dict, req_id: int) -> dict:
    params = {"name": tool, "arguments": arguments, "_meta": {"toolbridge/timeout_ms": TIMEOUT_MS}}
    return s.request("tools/call", params, req_id)


def mcp_stateless_call(url: str, tool: str, arguments: dict, req_id: int) -> dict:
    meta = {"io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": {}, "toolbridge/timeout_ms": TIMEOUT_MS}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": V2026, "Mcp-Method": "tools/call", "Mcp-Name": tool}
    body = rpc("tools/call", {"name": tool, "arguments": arguments, "_meta": meta}, req_id)
    resp = httpx.post(url, content=json.dumps(body), headers=headers, timeout=60)
    return response_for(parse_body(resp), req_id)


def batch(gw, calls: list[dict], trajectory: str | None = None, msgpack: bool = False) -> list[dict]:
    body = {"calls": calls, "timeout_ms": TIMEOUT_MS}
    if trajectory:
        body["trajectory"] = trajectory
    if msgpack:
        import msgpack as mp
        resp = httpx.post(gw.base_url + "/v1/batch", content=mp.packb(body),
                          headers={"Content-Type": "application/msgpack", "Accept": "application/msgpack"},
                          timeout=60)
        assert resp.status_code == 200, resp.content[:300]
        return mp.unpackb(resp.content, raw=False)["results"]
    resp = httpx.post(gw.base_url + "/v1/batch", content=json.dumps(body),
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert resp.status_code == 200, resp.text[:300]
    return resp.json()["results"]


def hermes(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def trajectory_view(gw, name: str) -> dict:
    resp = httpx.get(gw.base_url + "/v1/trajectories/" + urllib.parse.quote(name, safe=""), timeout=10)
    assert resp.status_code == 200, resp.text[:300]
    return resp.json()


def test_every_outcome_has_its_class_on_mcp_in_both_eras(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        for i, (tool, args, outcome, cls) in enumerate(CASES):
            answer = mcp_call(s, tool, args, 10 + i)
            assert mcp_fault(answer) == cls, (tool, outcome, answer)
            if cls == "ok":
                assert "_meta" not in answer["result"], answer  # nothing added to a success
            stateless = mcp_stateless_call(gw.mcp_url, tool, args, 100 + i)
            assert mcp_fault(stateless) == cls, (tool, outcome, stateless)
    finally:
        s.close()


def test_the_servers_own_meta_is_kept_beside_the_class(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("fixture__fail", {"message": "no"}, 5)
        assert answer["result"]["isError"] is True and answer["result"]["content"][0]["text"] == "no"
        assert answer["result"]["_meta"]["toolbridge/fault"] == "tool"
        unknown = s.call_tool("fixture__no_such_tool_zq", {}, 6)
        assert unknown["error"]["code"] == -32602 and "fixture__no_such_tool_zq" in unknown["error"]["message"]
        assert unknown["error"]["data"]["toolbridge/fault"] == "agent"
    finally:
        s.close()


@pytest.mark.parametrize("msgpack", [False, True], ids=["json", "msgpack"])
def test_every_outcome_has_its_class_in_batch_entries(gw, msgpack):
    if msgpack:
        pytest.importorskip("msgpack")
    results = batch(gw, [{"tool": t, "arguments": a} for t, a, _, _ in CASES], msgpack=msgpack)
    got = [(r["tool"], r["outcome"], r["fault"]) for r in results]
    assert got == [(t, o, c) for t, _, o, c in CASES], results


def test_every_outcome_has_its_class_in_parse_entries(gw):
    # /v1/parse resolves names against the catalog first: a server that never listed its tools
    # has none there, so its call is an unknown tool (the agent's) rather than unavailable.
    cases = [(t, a, o, c) if not t.startswith("quitter__") else (t, a, "invalid_params", "agent")
             for t, a, o, c in CASES]
    text = "".join(hermes(t, a) for t, a, _, _ in cases) + "<tool_call>\n{not json at all\n</tool_call>"
    resp = httpx.post(gw.base_url + "/v1/parse",
                      content=json.dumps({"text": text, "format": "hermes", "execute": True,
                                          "timeout_ms": TIMEOUT_MS}),
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert resp.status_code == 200, resp.text[:500]
    r = resp.json()
    assert [(c["outcome"], c["fault"]) for c in r["calls"]] == [(o, c) for _, _, o, c in cases], r["calls"]
    # The call the model wrote that could not be read: the agent's.
    assert r["unparsed"] and all(u["fault"] == "agent" for u in r["unparsed"]), r["unparsed"]


def test_a_crash_and_shedding_are_infra(gateway_factory):
    gw = gateway_factory({"crashy": fixture_server(restart_backoff={"initial": "100ms"}),
                          "narrow": fixture_server(concurrency_limit=1)},
                         {"admission_queue_size": 0})
    crashed = batch(gw, [{"tool": "crashy__crash", "arguments": {"code": 3}}])[0]
    assert crashed["outcome"] in ("crashed", "not_sent") and crashed["fault"] == "infra", crashed
    results = batch(gw, [{"tool": "narrow__sleep", "arguments": {"ms": 200}},
                         {"tool": "narrow__echo", "arguments": {"text": "x"}}])
    assert [r["outcome"] for r in results] == ["ok", "shed"], results
    assert [r["fault"] for r in results] == ["ok", "infra"], results
    assert metric(gw, "toolbridge_call_faults_total", server="narrow", tool="narrow__echo", fault="infra") == 1


def test_trace_lines_carry_the_class(gateway_factory, tmp_path):
    trace = tmp_path / "calls.jsonl"
    gw = gateway_factory({"fixture": fixture_server()}, {"trace": {"file": str(trace)}})
    batch(gw, [{"tool": "fixture__echo", "arguments": {"text": "a"}},
               {"tool": "fixture__fail", "arguments": {"message": "no"}},
               {"tool": "fixture__sleep", "arguments": {"ms": 3000}}])
    deadline = time.monotonic() + 10
    lines: list[dict] = []
    while time.monotonic() < deadline and len(lines) < 3:
        time.sleep(0.05)
        if trace.exists():
            lines = [json.loads(x) for x in trace.read_text().splitlines() if x.strip()]
    by_tool = {line["tool"]: (line["outcome"], line["fault"]) for line in lines}
    assert by_tool == {"fixture__echo": ("ok", "ok"), "fixture__fail": ("tool_error", "tool"),
                       "fixture__sleep": ("timeout", "infra")}, lines


def test_one_timeout_makes_a_trajectory_infra_failed_and_tool_errors_do_not(gw):
    timed_out, tool_errors = f"faults-{uuid.uuid4().hex[:8]}", f"faults-{uuid.uuid4().hex[:8]}"
    batch(gw, [{"tool": "fixture__echo", "arguments": {"text": "a"}},
               {"tool": "fixture__sleep", "arguments": {"ms": 3000}},
               {"tool": "fixture__fail", "arguments": {"message": "no"}}], trajectory=timed_out)
    batch(gw, [{"tool": "fixture__fail", "arguments": {"message": "no"}},
               {"tool": "fixture__rpc_error", "arguments": {}},
               {"tool": "fixture__echo", "arguments": {"text": "b"}},
               {"tool": "strict__add", "arguments": {"a": [1], "b": 2}}], trajectory=tool_errors)
    view = trajectory_view(gw, timed_out)
    assert view["summary"]["faults"] == {"ok": 1, "agent": 0, "tool": 1, "infra": 1}, view["summary"]
    assert view["summary"]["infra_failed"] is True
    assert sorted(c["fault"] for c in view["calls"]) == ["infra", "ok", "tool"], view["calls"]
    view = trajectory_view(gw, tool_errors)
    assert view["summary"]["faults"] == {"ok": 1, "agent": 1, "tool": 2, "infra": 0}, view["summary"]
    assert view["summary"]["infra_failed"] is False
    listed = httpx.get(gw.base_url + "/v1/trajectories", timeout=10).json()["trajectories"]
    by_name = {t["trajectory"]: t for t in listed}
    assert by_name[timed_out]["infra_failed"] is True and by_name[tool_errors]["infra_failed"] is False
    assert metric(gw, "toolbridge_call_faults_total", server="fixture", tool="fixture__sleep", fault="infra") >= 1
    assert metric(gw, "toolbridge_call_faults_total", server="strict", tool="strict__add", fault="agent") >= 1


def test_the_python_client_exposes_the_class_per_call_and_per_trajectory(gw):
    import toolbridge

    with toolbridge.Client(gw.base_url) as client:
        with client.trajectory() as t:
            assert t.call("fixture__echo", {"text": "x"}).fault == "ok"
            assert t.call("fixture__fail", {"message": "no"}).fault == "tool"
            f = t.faults()
            assert (f.calls, f.ok, f.tool, f.infra, f.infra_failed) == (2, 1, 1, 0, False), f
            slow = t.call("fixture__sleep", {"ms": 3000}, timeout_ms=TIMEOUT_MS, check=False)
            assert (slow.outcome, slow.fault) == ("timeout", "infra")
            assert t.faults().infra_failed is True
        unknown = client.trajectory_faults("never-seen-" + uuid.uuid4().hex)
        assert (unknown.calls, unknown.infra_failed) == (0, False)

    async def main():
        async with toolbridge.AsyncClient(gw.base_url) as client:
            async with client.trajectory() as t:
                # An unknown tool is refused before it is routed: the answer has its class, the
                # trajectory's counts (calls routed to a server) do not.
                unknown = await t.call("fixture__no_such_tool_zq", {}, check=False)
                assert unknown.fault == "agent"
                r = await t.call("strict__add", {"a": [1], "b": 2}, check=False)
                f = await t.faults()
                return r.fault, f

    fault, f = asyncio.run(main())
    assert fault == "agent" and (f.agent, f.infra_failed) == (1, False), f
