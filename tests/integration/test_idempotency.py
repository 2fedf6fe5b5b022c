"""Idempotency keys (docs/idempotency.md) against a real gateway and the fixture server: a client
that drops its connection after sending a keyed sandbox call and retries it gets one execution
(the fixture's counter proves it), over MCP and /v1/batch; the same key with other arguments is
-32602 with a message naming both; calls without a key run every time."""

from __future__ import annotations

import json
import time
import uuid

import httpx
import pytest

from tb_support import RawSession, fixture_server, headers_for, rpc, text_of

pytestmark = pytest.mark.timeout(90)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server(call_timeout="20s")},
                                  {"tool_naming": "prefixed", "idempotency_ttl": "1m"}, name="idem")


def runs(s: RawSession) -> int:
    return int(text_of(s.call_tool("fixture__sandbox_runs", {}, 900)["result"]))


def keyed(key: str | None, arguments: dict, req_id: int) -> dict:
    params = {"name": "fixture__sandbox_exec", "arguments": arguments}
    if key is not None:
        params["_meta"] = {"toolbridge/idempotency_key": key}
    return rpc("tools/call", params, req_id)


def send_and_drop(s: RawSession, message: dict) -> None:
    """Posts `message` on a connection of its own and closes it before the answer comes."""
    with httpx.Client(timeout=httpx.Timeout(10, read=0.3)) as c:
        with pytest.raises(httpx.ReadTimeout):
            c.post(s.url, content=json.dumps(message), headers=headers_for(s.session_id, s.version))


def execution(answer: dict) -> int:
    assert "result" in answer and not answer["result"].get("isError"), answer
    return json.loads(text_of(answer["result"]))["execution"]


def test_a_dropped_keyed_call_retried_runs_once(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        before = runs(s)
        key = str(uuid.uuid4())
        args = {"code": "rm -rf /tmp/x && echo done", "delay_ms": 1000}
        send_and_drop(s, keyed(key, args, 1))
        # The retry arrives while the first still runs: it waits for it rather than run again.
        started = time.monotonic()
        retry = s.request("tools/call", keyed(key, args, 2)["params"], 2)
        assert time.monotonic() - started < 1.5, "the retry did not join the running call"
        first_execution = execution(retry)
        assert first_execution == before + 1
        # And once it finished, a retry gets the kept result (under its own id).
        again = s.request("tools/call", keyed(key, args, 3)["params"], 3)
        assert again["id"] == 3 and execution(again) == first_execution
        assert runs(s) == before + 1, "the keyed call ran more than once"
        # The control: the same call without a key runs each time.
        send_and_drop(s, keyed(None, args, 4))
        execution(s.request("tools/call", keyed(None, args, 5)["params"], 5))
        time.sleep(1.0)
        assert runs(s) == before + 3
    finally:
        s.close()


def test_the_same_key_with_other_arguments_is_invalid_params(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        key = "k-" + uuid.uuid4().hex
        execution(s.request("tools/call", keyed(key, {"code": "a"}, 1)["params"], 1))
        other = s.request("tools/call", keyed(key, {"code": "b"}, 2)["params"], 2)
        assert other["error"]["code"] == -32602, other
        message = other["error"]["message"]
        assert key in message and '{"code":"a"}' in message and '{"code":"b"}' in message, message
        assert other["error"]["data"]["toolbridge/fault"] == "agent"
        bad = s.request("tools/call", {"name": "fixture__echo", "arguments": {"text": "x"},
                                       "_meta": {"toolbridge/idempotency_key": 42}}, 3)
        assert bad["error"]["code"] == -32602 and "toolbridge/idempotency_key" in bad["error"]["message"], bad
    finally:
        s.close()


def test_the_key_stays_out_of_what_the_server_receives(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.request("tools/call", {"name": "fixture__meta", "arguments": {},
                                          "_meta": {"toolbridge/idempotency_key": "m-" + uuid.uuid4().hex,
                                                    "mine": 1}}, 1)
        assert json.loads(text_of(answer["result"])).get("mine") == 1
        assert "toolbridge/idempotency_key" not in text_of(answer["result"])
    finally:
        s.close()


def test_a_retried_batch_call_with_an_id_runs_once(gw):
    s = RawSession(gw.mcp_url).initialize()
    try:
        before = runs(s)
        trajectory = "idem-" + uuid.uuid4().hex[:8]
        body = {"trajectory": trajectory,
                "calls": [{"tool": "fixture__sandbox_exec", "arguments": {"code": "x", "delay_ms": 800},
                           "id": "call-1"}]}
        with httpx.Client(timeout=httpx.Timeout(10, read=0.3)) as c:
            with pytest.raises(httpx.ReadTimeout):
                c.post(gw.base_url + "/v1/batch", content=json.dumps(body),
                       headers={"Content-Type": "application/json"})
        resp = httpx.post(gw.base_url + "/v1/batch", content=json.dumps(body),
                          headers={"Content-Type": "application/json"}, timeout=30)
        assert resp.status_code == 200, resp.text
        entry = resp.json()["results"][0]
        assert entry["outcome"] == "ok", entry
        assert json.loads(entry["result"]["content"][0]["text"])["execution"] == before + 1
        assert runs(s) == before + 1
        metrics = gw.metrics()
        assert 'toolbridge_idempotent_calls_total{result="joined"}' in metrics
    finally:
        s.close()


def hermes(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_a_retried_parse_request_with_an_id_runs_its_calls_once(gw):
    """/v1/parse with "id": each extracted call's key is ID/N (its place in the turn), so a turn
    sent again after a lost connection gets its first results and runs nothing again."""
    s = RawSession(gw.mcp_url).initialize()
    try:
        before = runs(s)
        turn = "turn-" + uuid.uuid4().hex[:8]
        text = (hermes("fixture__sandbox_exec", {"code": "a", "delay_ms": 800}) +
                hermes("fixture__sandbox_exec", {"code": "b"}))
        body = {"text": text, "format": "hermes", "execute": True, "id": turn,
                "trajectory": "idem-parse-" + uuid.uuid4().hex[:8]}
        with httpx.Client(timeout=httpx.Timeout(10, read=0.3)) as c:
            with pytest.raises(httpx.ReadTimeout):
                c.post(gw.base_url + "/v1/parse", json=body)
        resp = httpx.post(gw.base_url + "/v1/parse", json=body, timeout=30)
        assert resp.status_code == 200, resp.text
        calls = resp.json()["calls"]
        assert [c["outcome"] for c in calls] == ["ok", "ok"], calls
        executions = sorted(json.loads(c["result"]["content"][0]["text"])["execution"] for c in calls)
        assert executions == [before + 1, before + 2]
        assert runs(s) == before + 2, "the retried turn ran its calls again"

        # The same id with another call in a place: that call is refused, naming the key.
        changed = dict(body, text=hermes("fixture__sandbox_exec", {"code": "other"}))
        again = httpx.post(gw.base_url + "/v1/parse", json=changed, timeout=30).json()["calls"][0]
        assert again["outcome"] == "invalid_params", again
        assert f"'{turn}/0'" in again["error"]["message"], again
        assert runs(s) == before + 2

        # A malformed id is refused before anything runs.
        bad = httpx.post(gw.base_url + "/v1/parse", json=dict(body, id="has space"), timeout=30)
        assert bad.status_code == 400 and "id" in bad.json()["error"]["message"], bad.text
        assert runs(s) == before + 2
    finally:
        s.close()
