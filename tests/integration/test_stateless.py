"""MCP 2026-07-28 (stateless) clients on the same /mcp endpoint as handshake clients, in front of
a handshake-era server (the fixture over stdio): the revision's envelope and header rules, list
caching hints, and a server's elicitation during a stateless call turned into an input_required
result and back (by hand over HTTP, and with the official Python SDK 2.3's stateless client). Behind
the gateway, also a 2026-07-28 server (stateless_server.py, on the SDK's MCPServer) whose own
input_required results reach a handshake client as ordinary requests and a stateless client as
the gateway's own rounds, and whose rounds are bounded."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from tb_support import RawSession, fixture_server, parse_body, text_of, wait_listening

pytestmark = pytest.mark.timeout(120)

V = "2026-07-28"
CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


def meta(caps: dict | None = None, **extra) -> dict:
    return {"io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": CAPS if caps is None else caps, **extra}


def post(url: str, method: str, params: dict, req_id=1, headers: dict | None = None,
         client: httpx.Client | None = None) -> httpx.Response:
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "MCP-Protocol-Version": V, "Mcp-Method": method}
    name = params.get("uri" if method == "resources/read" else "name")
    if method in ("tools/call", "prompts/get", "resources/read") and isinstance(name, str):
        h["Mcp-Name"] = name
    h.update(headers or {})
    body = json.dumps({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params})
    return (client or httpx).post(url, content=body, headers=h, timeout=60)


def answer(resp: httpx.Response, req_id=1) -> dict:
    for m in parse_body(resp):
        if m.get("id") == req_id and "method" not in m:
            return m
    raise AssertionError(f"no answer with id {req_id}: {resp.status_code} {resp.text[:500]}")


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server("--conformance")}, ready=["fixture"])


def test_discover_and_lists_carry_the_revisions_fields(gw):
    resp = post(gw.mcp_url, "server/discover", {"_meta": meta()})
    assert resp.status_code == 200, resp.text
    assert "mcp-session-id" not in resp.headers
    result = answer(resp)["result"]
    assert V in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert result["resultType"] == "complete"
    assert "tools" in result["capabilities"] and "prompts" in result["capabilities"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolbridge"
    assert result["cacheScope"] == "public" and result["ttlMs"] == 60000
    for method, key in (("tools/list", "tools"), ("prompts/list", "prompts"),
                        ("resources/list", "resources"), ("resources/templates/list", "resourceTemplates")):
        result = answer(post(gw.mcp_url, method, {"_meta": meta()}))["result"]
        assert isinstance(result[key], list), (method, result)
        assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == ("complete", 60000, "public")
    names = [t["name"] for t in answer(post(gw.mcp_url, "tools/list", {"_meta": meta()}))["result"]["tools"]]
    assert "fixture__echo" in names


def test_the_ladder_rejects_with_the_revisions_errors(gw):
    url = gw.mcp_url
    r = post(url, "server/discover", {}, req_id=101)
    assert (r.status_code, answer(r, 101)["error"]["code"]) == (400, -32602)
    r = post(url, "server/discover", {"_meta": meta()}, req_id=7, headers={"Mcp-Method": "tools/list"})
    assert (r.status_code, answer(r, 7)["error"]["code"]) == (400, -32020)
    r = post(url, "tools/call", {"_meta": meta(), "name": "fixture__echo", "arguments": {"text": "x"}},
             headers={"Mcp-Name": "fixture__add"})
    assert (r.status_code, answer(r)["error"]["code"]) == (400, -32020)
    wrong = {**meta(), "io.modelcontextprotocol/protocolVersion": "v999"}
    r = post(url, "server/discover", {"_meta": wrong}, headers={"MCP-Protocol-Version": "v999"})
    err = answer(r)["error"]
    assert (r.status_code, err["code"], err["data"]) == (400, -32022, {"supported": [V], "requested": "v999"})
    for removed in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"):
        r = post(url, removed, {"_meta": meta()}, req_id=500)
        assert (r.status_code, answer(r, 500)["error"]["code"]) == (404, -32601), removed
    # No sessions: GET and DELETE are not this revision's.
    for verb in ("GET", "DELETE"):
        r = httpx.request(verb, url, headers={"MCP-Protocol-Version": V, "Accept": "text/event-stream"})
        assert r.status_code == 405 and r.headers["allow"] == "POST", verb
    # A notification is accepted and dropped.
    r = httpx.post(url, content=json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": 1}}),
                   headers={"MCP-Protocol-Version": V, "Content-Type": "application/json"})
    assert r.status_code == 202


def test_a_stateless_call_runs_on_the_warm_handshake_server(gw):
    r = post(gw.mcp_url, "tools/call", {"_meta": meta(), "name": "fixture__echo", "arguments": {"text": "hi"}})
    assert r.status_code == 200, r.text
    result = answer(r)["result"]
    assert text_of(result) == "hi" and result["resultType"] == "complete"
    # A missing resource is -32602 in this revision (the fixture, a 2025 server, says -32002).
    r = post(gw.mcp_url, "resources/read", {"_meta": meta(), "uri": "test://nonexistent"})
    assert (r.status_code, answer(r)["error"]["code"]) == (400, -32602)
    r = post(gw.mcp_url, "resources/read", {"_meta": meta(), "uri": "test://static-text"})
    result = answer(r)["result"]
    assert result["contents"] and (result["ttlMs"], result["cacheScope"]) == (0, "private")


def test_elicitation_becomes_input_required_and_the_retry_completes_the_call(gw):
    call = {"name": "fixture__test_input_required_result_elicitation", "arguments": {}}
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta()}, req_id=1)
    first = answer(r, 1)["result"]
    assert first["resultType"] == "input_required", first
    ask = first["inputRequests"]["user_name"]
    assert ask["method"] == "elicitation/create" and ask["params"]["message"] == "What is your name?"
    state = first["requestState"]
    # A tampered state is refused and leaves the parked call alone.
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta(), "requestState": state + "x",
                                        "inputResponses": {"user_name": {"action": "accept"}}}, req_id=2)
    assert (r.status_code, answer(r, 2)["error"]["code"]) == (400, -32602)
    assert "integrity" in answer(r, 2)["error"]["message"]
    reply = {"action": "accept", "content": {"name": "Alice"}}
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta(), "requestState": state,
                                        "inputResponses": {"user_name": reply}}, req_id=3)
    done = answer(r, 3)["result"]
    assert done["resultType"] == "complete" and text_of(done) == "Hello, Alice!", done
    # Used once: a replay runs the call again (and is asked again).
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta(), "requestState": state,
                                        "inputResponses": {}}, req_id=4)
    assert answer(r, 4)["result"]["resultType"] == "input_required"


def test_without_the_capability_the_server_is_refused_with_the_revisions_error(gw):
    r = post(gw.mcp_url, "tools/call", {"_meta": meta({}), "name": "fixture__test_missing_capability",
                                        "arguments": {}})
    err = answer(r)["error"]
    assert (r.status_code, err["code"]) == (400, -32021), err
    assert err["data"]["requiredCapabilities"] == {"sampling": {}}


def test_handshake_clients_keep_working_beside_stateless_ones(gw):
    s = RawSession(gw.mcp_url, "2025-11-25").initialize()
    try:
        assert text_of(s.call_tool("fixture__echo", {"text": "old"})["result"]) == "old"
        r = post(gw.mcp_url, "tools/call", {"_meta": meta(), "name": "fixture__echo", "arguments": {"text": "new"}})
        assert text_of(answer(r)["result"]) == "new"
        assert text_of(s.call_tool("fixture__echo", {"text": "old2"}, 2)["result"]) == "old2"
    finally:
        s.close()


def test_official_python_sdk_stateless_client_completes_the_elicitation_round_trip(gw):
    from mcp import Client
    import mcp.types as types

    asked: list[str] = []

    async def on_elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def main():
        async with Client(gw.mcp_url, elicitation_callback=on_elicit) as client:
            assert client.protocol_version == V
            tools = await client.list_tools()
            assert any(t.name == "fixture__echo" for t in tools.tools)
            echoed = await client.call_tool("fixture__echo", {"text": "sdk"})
            result = await client.call_tool("fixture__test_input_required_result_elicitation", {})
            return echoed, result

    echoed, result = anyio.run(main)
    assert echoed.content[0].text == "sdk"
    assert asked == ["What is your name?"]
    assert result.content[0].text == "Hello, Ada!"


def test_subscriptions_listen_acknowledges_then_tags_list_changed(gw):
    h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
         "MCP-Protocol-Version": V, "Mcp-Method": "subscriptions/listen"}
    body = json.dumps({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen",
                       "params": {"_meta": meta(), "notifications": {"toolsListChanged": True,
                                                                     "promptsListChanged": True}}})
    frames: list[dict] = []
    with httpx.Client(timeout=30) as client:
        with client.stream("POST", gw.mcp_url, content=body, headers=h) as resp:
            assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/event-stream")
            lines = resp.iter_lines()
            for line in lines:
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
                    break
            # The fixture announces a new tool list; the gateway re-lists and tells listeners.
            r = post(gw.mcp_url, "tools/call", {"_meta": meta(), "name": "fixture__test_trigger_tool_change",
                                                "arguments": {}})
            assert answer(r)["result"]["resultType"] == "complete"
            for line in lines:
                if line.startswith("data:"):
                    frames.append(json.loads(line[5:]))
                    break
    ack, changed = frames
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    # Only what the gateway announces is acknowledged.
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub-1"


def test_a_parked_call_expires_and_its_state_then_runs_the_call_again(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server("--conformance")},
                         {"input_required_ttl": "1s", "max_input_required": 2}, ready=["fixture"])
    call = {"name": "fixture__test_input_required_result_elicitation", "arguments": {}}
    states = []
    for n in range(3):  # the third pushes the first out (max_input_required: 2)
        first = answer(post(gw.mcp_url, "tools/call", {**call, "_meta": meta()}, req_id=n), n)["result"]
        states.append(first["requestState"])
    reply = {"user_name": {"action": "accept", "content": {"name": "Late"}}}
    # Pushed out: the server's question was refused; the authentic state runs the call again, and
    # the responses it carries answer the new run's question at once.
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta(), "requestState": states[0],
                                        "inputResponses": reply}, req_id=10)
    assert text_of(answer(r, 10)["result"]) == "Hello, Late!"
    import time
    time.sleep(1.5)  # past input_required_ttl: the others expired too
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta(), "requestState": states[2],
                                        "inputResponses": {}}, req_id=11)
    assert answer(r, 11)["result"]["resultType"] == "input_required"


def test_stateless_calls_keep_their_trajectorys_per_session_instance(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server(policy="per_session", spares=1)}, ready=["fixture"])

    def pid(trajectory: str | None, headers: dict | None = None) -> str:
        m = meta() if trajectory is None else meta(**{"toolbridge/session": trajectory})
        r = post(gw.mcp_url, "tools/call", {"_meta": m, "name": "fixture__pid", "arguments": {}},
                 headers=headers)
        return text_of(answer(r)["result"])

    # Lists may differ per trajectory with a per_session server: not for shared caches.
    assert answer(post(gw.mcp_url, "tools/list", {"_meta": meta()}))["result"]["cacheScope"] == "private"
    a1, b1, a2 = pid("traj-a"), pid("traj-b"), pid("traj-a")
    assert a1 == a2 and a1 != b1, (a1, b1, a2)
    # The header names the same trajectory as _meta; calls naming none share the client's own.
    assert pid(None, {"X-Toolbridge-Trajectory": "traj-a"}) == a1
    own1, own2 = pid(None), pid(None)
    assert own1 == own2 and own1 not in (a1, b1)


@pytest.fixture(scope="module")
def stateless_upstream():
    """stateless_server.py (the official Python SDK's MCPServer, 2026-07-28) on a free port."""
    import socket
    import subprocess
    import sys
    import time
    from pathlib import Path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "stateless_server.py"), str(port)],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(port, server, "the SDK server")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        server.wait(10)


def test_a_remote_server_that_answers_discover_is_spoken_to_statelessly(gateway_factory, stateless_upstream):
    gw = gateway_factory({"py": {"url": stateless_upstream}, "fixture": fixture_server()},
                         ready=["py", "fixture"])
    assert "[py] speaks MCP 2026-07-28" in gw.stderr_tail()
    # The fixture (stdio, handshake era) was not probed; a handshake client and a stateless
    # client both reach the stateless server.
    s = RawSession(gw.mcp_url, "2025-11-25").initialize()
    try:
        assert text_of(s.call_tool("py__add", {"a": 2, "b": 3})["result"]) == "5"
    finally:
        s.close()
    r = post(gw.mcp_url, "tools/call", {"_meta": meta(), "name": "py__echo", "arguments": {"text": "hi"}})
    assert text_of(answer(r)["result"]) == "hi"


def test_a_stateless_servers_input_required_becomes_requests_to_a_handshake_client(
        gateway_factory, stateless_upstream):
    """`interview` answers with input_required twice (an elicitation; then sampling and roots);
    the official SDK's handshake-era ClientSession gets them as ordinary requests, and the
    server's final answer shows what reached it: the last requestState and every response."""
    import mcp.types as types
    from tb_sdk import only_text, sdk_session

    gw = gateway_factory({"py": {"url": stateless_upstream}}, ready=["py"])
    asked: list[str] = []

    async def on_elicit(context, params):
        asked.append(f"elicit:{params.message}")
        assert "_meta" not in (params.model_dump(by_alias=True, exclude_none=True)), params
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def on_sample(context, params):
        asked.append(f"sample:{params.messages[0].content.text}")
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="a draft"))

    async def on_roots(context):
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///work/ada")])

    async def main():
        async with sdk_session(gw.mcp_url, elicitation_callback=on_elicit, sampling_callback=on_sample,
                               list_roots_callback=on_roots) as s:
            return await s.call_tool("py__interview", {"topic": "gateways"})

    result = anyio.run(main)
    got = json.loads(only_text(result))
    assert sorted(asked) == ["elicit:Who asks about gateways?", "roots", "sample:Draft for Ada"]
    # The upstream's own state came back to it unchanged, with the second round's answers.
    assert got["state"] == "round-2:Ada", got
    assert got["answers"]["draft"]["content"]["text"] == "a draft"
    assert got["answers"]["where"]["roots"][0]["uri"] == "file:///work/ada"


def test_a_stateless_servers_input_required_reaches_a_stateless_client_under_the_gateways_state(
        gateway_factory, stateless_upstream):
    """A stateless client sees the server's keys, but the gateway's own signed requestState: the
    server's state stays in the gateway with the parked call, and comes back to the server with
    the client's inputResponses."""
    gw = gateway_factory({"py": {"url": stateless_upstream}}, ready=["py"])
    call = {"name": "py__interview", "arguments": {"topic": "tea"}}
    first = answer(post(gw.mcp_url, "tools/call", {**call, "_meta": meta()}, req_id=1), 1)["result"]
    assert first["resultType"] == "input_required", first
    assert list(first["inputRequests"]) == ["who"]
    assert first["inputRequests"]["who"]["method"] == "elicitation/create"
    assert "toolbridge/input_key" not in json.dumps(first)
    assert first["requestState"] != "round-1"
    second = answer(post(gw.mcp_url, "tools/call", {
        **call, "_meta": meta(), "requestState": first["requestState"],
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Bo"}}}}, req_id=2), 2)["result"]
    assert second["resultType"] == "input_required", second
    assert sorted(second["inputRequests"]) == ["draft", "where"]
    assert "round-2" not in second["requestState"]
    replies = {"draft": {"role": "assistant", "model": "m", "content": {"type": "text", "text": "tea draft"}},
               "where": {"roots": [{"uri": "file:///tea"}]}}
    third = answer(post(gw.mcp_url, "tools/call", {
        **call, "_meta": meta(), "requestState": second["requestState"], "inputResponses": replies},
        req_id=3), 3)["result"]
    assert third["resultType"] == "complete", third
    got = json.loads(text_of(third))
    assert got["state"] == "round-2:Bo" and got["answers"] == replies, got
    # A client without the sampling capability is refused with the revision's error, which the
    # gateway passes on as the call's error (the server has no way to receive it).
    r = post(gw.mcp_url, "tools/call", {**call, "_meta": meta({"elicitation": {}})}, req_id=4)
    state = answer(r, 4)["result"]["requestState"]
    r = post(gw.mcp_url, "tools/call", {
        **call, "_meta": meta({"elicitation": {}}), "requestState": state,
        "inputResponses": {"who": {"action": "accept", "content": {"name": "Cy"}}}}, req_id=5)
    err = answer(r, 5)["error"]
    assert err["code"] == -32021 and "sampling" in err["message"], err


def test_a_server_that_never_stops_asking_is_cut_off_after_16_rounds(gateway_factory, stateless_upstream):
    gw = gateway_factory({"py": {"url": stateless_upstream}}, ready=["py"])
    s = RawSession(gw.mcp_url, "2025-11-25").initialize()
    try:
        before = int(text_of(s.call_tool("py__insisted_count", {})["result"]))
        err = s.call_tool("py__insist", {})["error"]
        assert err["code"] == -32603 and "after 16 rounds" in err["message"], err
        # The first call and 16 retries, each with the state of the round before; no 18th.
        assert int(text_of(s.call_tool("py__insisted_count", {})["result"])) - before == 17
    finally:
        s.close()


@pytest.mark.parametrize("count,key_bytes,bound", [
    (17, 8, "it asked for 17 inputs at once (at most 16)"),
    (1, 257, "an inputRequests key is malformed"),
    (16, 256, None)])
def test_a_round_of_more_than_16_requests_or_a_key_over_256_bytes_is_refused(
        gateway_factory, stateless_upstream, count, key_bytes, bound):
    gw = gateway_factory({"py": {"url": stateless_upstream}}, ready=["py"])
    s = RawSession(gw.mcp_url, "2025-11-25").initialize()  # no elicitation capability declared
    try:
        err = s.call_tool("py__ask", {"count": count, "key_bytes": key_bytes})["error"]
        if bound:
            assert err["code"] == -32603 and bound in err["message"], err
            assert "server 'py' cannot be answered" in err["message"], err
        else:  # within the bounds: the requests are read, and refused only for the capability
            assert "at most 16" not in err["message"] and "malformed" not in err["message"], err
            assert "elicitation" in err["message"], err
    finally:
        s.close()
