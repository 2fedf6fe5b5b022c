"""Streamable HTTP transport rules (MCP 2025-03-26 / 2025-06-18 / 2025-11-25), checked with raw httpx."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tb_support import (PROTOCOL_VERSIONS, RawSession, fixture_server, headers_for, initialize_params,
                        parse_body, response_for, rpc, text_of)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()}, name="http")


@pytest.fixture
def session(gw):
    s = RawSession(gw.mcp_url, version="2025-06-18").initialize()
    yield s
    s.close()


def echo_call(req_id=1, text="hi"):
    return rpc("tools/call", {"name": "fixture__echo", "arguments": {"text": text}}, req_id)


def error_of(resp: httpx.Response, req_id) -> dict:
    """The JSON-RPC error answering req_id (from a JSON or SSE body)."""
    msgs = parse_body(resp)
    answer = response_for(msgs, req_id)
    assert "error" in answer, f"expected a JSON-RPC error, got {answer}"
    return answer["error"]


@pytest.mark.parametrize("version", PROTOCOL_VERSIONS)
def test_initialize_negotiates_each_version(gw, version):
    s = RawSession(gw.mcp_url, version=version).initialize()
    try:
        assert s.init_result["protocolVersion"] == version
        assert "tools" in s.init_result["capabilities"]
        assert s.init_result["serverInfo"]["name"]
        answer = s.call_tool("fixture__echo", {"text": version}, 1)
        assert text_of(answer["result"]) == version
    finally:
        s.close()


def test_initialize_with_unknown_version_gets_a_supported_one(gw):
    resp = httpx.post(gw.mcp_url, json=rpc("initialize", initialize_params("2099-01-01"), 0),
                      headers=headers_for(None, None), timeout=30)
    assert resp.status_code == 200, resp.text
    result = response_for(parse_body(resp), 0)["result"]
    assert result["protocolVersion"] in PROTOCOL_VERSIONS


def test_ping(session):
    assert session.request("ping", None, 3) == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_notification_is_accepted_with_202(session):
    resp = session.post(rpc("notifications/roots/list_changed"))
    assert resp.status_code == 202
    assert resp.content == b""


def test_post_without_session_id_is_400(session):
    resp = httpx.post(session.url, json=echo_call(), headers=headers_for(None, session.version), timeout=30)
    assert resp.status_code == 400, f"HTTP {resp.status_code}: {resp.text[:300]}"


def test_unknown_session_id_is_404(session):
    resp = httpx.post(session.url, json=echo_call(),
                      headers=headers_for("0000-not-a-session-0000", session.version), timeout=30)
    assert resp.status_code == 404, f"HTTP {resp.status_code}: {resp.text[:300]}"


def test_bad_origin_is_403(gw, session):
    resp = httpx.post(gw.mcp_url, json=rpc("initialize", initialize_params("2025-06-18"), 0),
                      headers=headers_for(None, None, Origin="http://evil.example.com"), timeout=30)
    assert resp.status_code == 403, f"HTTP {resp.status_code}: {resp.text[:300]}"
    resp = session.post(echo_call(), Origin="https://attacker.invalid")
    assert resp.status_code == 403, f"HTTP {resp.status_code}: {resp.text[:300]}"


def test_localhost_origin_is_accepted(gw):
    resp = httpx.post(gw.mcp_url, json=rpc("initialize", initialize_params("2025-06-18"), 0),
                      headers=headers_for(None, None, Origin=f"http://localhost:{gw.port}"), timeout=30)
    assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text[:300]}"


def test_unsupported_protocol_version_header_is_400(session):
    resp = session.post(echo_call(), **{"MCP-Protocol-Version": "1999-01-01"})
    assert resp.status_code == 400, f"HTTP {resp.status_code}: {resp.text[:300]}"


def test_get_opens_sse_stream(session):
    # A session's GET opens its event stream (docs/endpoints.md); 405 is only for stateless MCP.
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session.session_id,
               "MCP-Protocol-Version": session.version}
    with session.client.stream("GET", session.url, headers=headers, timeout=10) as resp:
        assert resp.status_code == 200, f"HTTP {resp.status_code}"
        assert resp.headers["content-type"].split(";")[0].strip() == "text/event-stream"


def test_delete_ends_session(gw):
    s = RawSession(gw.mcp_url, version="2025-06-18").initialize()
    try:
        resp = s.client.delete(s.url, headers={"Mcp-Session-Id": s.session_id,
                                               "MCP-Protocol-Version": s.version})
        assert resp.status_code == 200, f"DELETE: HTTP {resp.status_code}: {resp.text[:300]}"
        assert resp.json() == {}, resp.text[:300]
        after = s.post(echo_call())
        assert after.status_code == 404, f"POST after DELETE: HTTP {after.status_code}: {after.text[:300]}"
    finally:
        s.close()


def test_batch_accepted_on_2025_03_26(gw):
    s = RawSession(gw.mcp_url, version="2025-03-26").initialize()
    try:
        resp = s.post([echo_call(1, "first"), echo_call(2, "second"), rpc("ping", None, 3)])
        assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text[:300]}"
        msgs = parse_body(resp)
        assert text_of(response_for(msgs, 1)["result"]) == "first"
        assert text_of(response_for(msgs, 2)["result"]) == "second"
        assert response_for(msgs, 3)["result"] == {}
    finally:
        s.close()


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_batch_rejected_after_2025_03_26(gw, version):
    s = RawSession(gw.mcp_url, version=version).initialize()
    try:
        resp = s.post([echo_call(1, "first"), echo_call(2, "second")])
        if resp.status_code == 200:
            msgs = parse_body(resp)
            assert msgs and all("error" in m for m in msgs), f"batch was not rejected: {msgs}"
            assert all(m["error"]["code"] == -32600 for m in msgs), msgs
        else:
            assert resp.status_code == 400, f"HTTP {resp.status_code}: {resp.text[:300]}"
    finally:
        s.close()


MALFORMED_BATCHES = {
    "empty": (b"[]", -32600),
    "unclosed": (b"[", -32700),
    "truncated": (b"[1,2", -32700),
    "truncated_object": (b'[{"jsonrpc":"2.0","id":1,"method":"ping"', -32700),
    "nested_600": (b"[" * 600 + b"]" * 600, -32700),
}


@pytest.mark.parametrize("case", sorted(MALFORMED_BATCHES))
def test_malformed_batch_is_answered_and_the_gateway_survives(gw, case):
    # Regression: a `[]` body (no session needed) once killed the whole gateway (issue 10, point 1).
    body, code = MALFORMED_BATCHES[case]
    resp = httpx.post(gw.mcp_url, content=body, headers=headers_for(None, None), timeout=30)
    assert resp.status_code == 400, f"HTTP {resp.status_code}: {resp.text[:300]}"
    assert resp.json()["error"]["code"] == code, resp.text[:300]
    assert gw.proc.poll() is None, f"gateway exited with {gw.proc.returncode}:\n{gw.stderr_tail()}"
    s = RawSession(gw.mcp_url, version="2025-06-18").initialize()
    try:
        assert text_of(s.call_tool("fixture__echo", {"text": case}, 1)["result"]) == case
    finally:
        s.close()


@pytest.mark.parametrize("name", ["fixture__no_such_tool_zz", "nosuchserver__qqq_unknown"])
def test_unknown_tool_error_names_it(session, name):
    resp = session.post(rpc("tools/call", {"name": name, "arguments": {}}, 9))
    assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text[:300]}"
    answer = response_for(parse_body(resp), 9)
    if "error" in answer:
        text = answer["error"]["message"] + json.dumps(answer["error"].get("data"))
    else:
        assert answer["result"].get("isError") is True, answer
        text = text_of(answer["result"])
    assert name in text, f"error does not name the tool {name!r}: {answer}"


def test_malformed_json_is_parse_error(session):
    resp = session.post(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"')
    assert resp.status_code == 400, f"HTTP {resp.status_code}: {resp.text[:300]}"
    msgs = parse_body(resp)
    assert len(msgs) == 1, msgs
    assert msgs[0]["error"]["code"] == -32700, msgs
    assert msgs[0].get("id") is None


def test_unknown_method_is_method_not_found(session):
    resp = session.post(rpc("no/such/method", {}, 11))
    assert resp.status_code == 200, f"HTTP {resp.status_code}: {resp.text[:300]}"
    assert error_of(resp, 11)["code"] == -32601


def test_body_over_cap_is_413(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, {"max_body_bytes": "1KiB"})
    s = RawSession(gw.mcp_url, version="2025-06-18").initialize()
    try:
        small = s.post(echo_call(1, "y" * 800))
        assert small.status_code == 200, f"HTTP {small.status_code}: {small.text[:300]}"
        assert text_of(response_for(parse_body(small), 1)["result"]) == "y" * 800
        big = s.post(echo_call(2, "y" * 2000))
        assert big.status_code == 413, f"HTTP {big.status_code}: {big.text[:300]}"
        # The session survives a rejected body.
        again = s.call_tool("fixture__echo", {"text": "still here"}, 3)
        assert text_of(again["result"]) == "still here"
    finally:
        s.close()


def test_progress_reaches_the_agent_while_its_call_runs(session):
    # A POST of one call runs the call in the request's own coroutine; the events the call sends
    # meanwhile must still go out as they come, not with the answer.
    body = json.dumps(rpc("tools/call", {"name": "fixture__progress",
                                         "arguments": {"steps": 2, "delay_ms": 700},
                                         "_meta": {"progressToken": "p21"}}, 21))
    arrivals: list[tuple[float, dict]] = []
    start = time.monotonic()
    with session.client.stream("POST", session.url, content=body,
                               headers=headers_for(session.session_id, session.version)) as resp:
        assert resp.status_code == 200, resp.read()[:300]
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data:"):
                arrivals.append((time.monotonic() - start, json.loads(line[5:])))
    methods = [m.get("method", "answer") for _, m in arrivals]
    assert methods == ["notifications/progress", "notifications/progress", "answer"], methods
    assert text_of(arrivals[-1][1]["result"]) == "done"
    first_progress, answered = arrivals[0][0], arrivals[-1][0]
    assert answered - first_progress > 1.0, f"progress came {answered - first_progress:.2f} s before the answer"
