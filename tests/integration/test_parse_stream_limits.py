"""Parse stream limits as config keys (gateway.parse_max_streams, parse_stream_max_bytes,
parse_stream_idle) through a real gateway and the fixture server: the caps refuse with errors
naming their key, and an idle stream is dropped by the sweep on its own — no other request
comes — with its call in flight cancelled upstream."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tb_support import fixture_server, metric

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory(
        {"fixture": fixture_server(call_timeout="20s")},
        {"parse_max_streams": 3, "parse_stream_max_bytes": "1KiB", "parse_stream_idle": "400ms"})



def hermes(name, arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def wait_for(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_an_idle_stream_is_swept_and_its_call_cancelled_without_another_request(gw):
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        resp = client.post("/v1/parse/streams", json={
            "format": "hermes", "execute": True, "text": hermes("fixture__sleep", {"ms": 15000})})
        assert resp.status_code == 201 and [c["name"] for c in resp.json()["calls"]] == ["fixture__sleep"]
        sid = resp.json()["stream"]
        assert wait_for(lambda: metric(gw, "toolbridge_in_flight", server="fixture") == 1, 5)
        assert metric(gw, "toolbridge_parse_streams") == 1
        opened = time.monotonic()
        # Only /metrics is asked from now on (not a parse request): the sweep alone drops it.
        assert wait_for(lambda: metric(gw, "toolbridge_parse_streams") == 0, 5)
        idle = time.monotonic() - opened
        assert idle < 2.0, f"{idle:.2f} s: the stream outlived parse_stream_idle (400ms) by far"
        assert metric(gw, "toolbridge_parse_streams_expired_total") == 1
        # Its call was cancelled, long before the 15 s sleep would have ended.
        assert wait_for(lambda: metric(gw, "toolbridge_in_flight", server="fixture") == 0, 3)
        resp = client.post(f"/v1/parse/streams/{sid}", json={"text": "more"})
        assert resp.status_code == 404
        assert "idle for longer than 400 ms" in resp.json()["error"]["message"]


def test_a_stream_kept_busy_is_not_swept(gw):
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        sid = client.post("/v1/parse/streams", json={"format": "hermes"}).json()["stream"]
        text = hermes("fixture__echo", {"text": "kept"})
        for i in range(0, len(text), 4):  # ~1.5 s in all, each gap well under 400 ms
            assert client.post(f"/v1/parse/streams/{sid}", json={"text": text[i:i + 4]}).status_code == 200
            time.sleep(0.1)
        done = client.post(f"/v1/parse/streams/{sid}", json={"done": True}).json()
        assert [c["arguments"] for c in done["calls"]] == [{"text": "kept"}]


def test_the_stream_caps_come_from_config_and_name_their_keys(gw):
    with httpx.Client(base_url=gw.base_url, timeout=10) as client:
        opened = [client.post("/v1/parse/streams", json={"format": "hermes"}) for _ in range(3)]
        assert [r.status_code for r in opened] == [201] * 3
        resp = client.post("/v1/parse/streams", json={"format": "hermes"})
        assert resp.status_code == 503
        assert "3 parse streams are open" in resp.json()["error"]["message"]
        assert "gateway.parse_max_streams" in resp.json()["error"]["message"]
        sid = opened[0].json()["stream"]
        assert client.post(f"/v1/parse/streams/{sid}", json={"text": "a" * 1000}).status_code == 200
        resp = client.post(f"/v1/parse/streams/{sid}", json={"text": "a" * 25})
        assert resp.status_code == 413
        assert "pass 1024 bytes" in resp.json()["error"]["message"]
        assert "gateway.parse_stream_max_bytes" in resp.json()["error"]["message"]
        for r in opened:
            client.delete(f"/v1/parse/streams/{r.json()['stream']}")
        resp = client.post("/v1/parse/streams", json={"format": "hermes", "text": "b" * 1025})
        assert resp.status_code == 413 and "at most 1024 bytes" in resp.json()["error"]["message"]
        assert metric(gw, "toolbridge_parse_streams") == 0
