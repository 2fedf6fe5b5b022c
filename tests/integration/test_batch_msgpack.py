"""POST /v1/batch in MessagePack (Content-Type application/msgpack): the same results as JSON
(small, 1 MB, every kind of error), hostile bodies refused with a precise 400, and the Python
client's encoding="msgpack"."""

from __future__ import annotations

import json

import httpx
import msgpack
import pytest
import toolbridge

from tb_support import fixture_server

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()}, gateway={"max_body_bytes": "8MiB"})


def post_msgpack(gw, body: bytes) -> httpx.Response:
    return httpx.post(gw.base_url + "/v1/batch", content=body,
                      headers={"Content-Type": "application/msgpack"}, timeout=60)


def both(gw, body: dict) -> tuple[dict, dict]:
    as_json = httpx.post(gw.base_url + "/v1/batch", content=json.dumps(body),
                         headers={"Content-Type": "application/json"}, timeout=60)
    as_msgpack = post_msgpack(gw, msgpack.packb(body))
    assert as_json.status_code == 200 and as_msgpack.status_code == 200, as_msgpack.text[:300]
    assert as_msgpack.headers["content-type"] == "application/msgpack"
    return as_json.json(), msgpack.unpackb(as_msgpack.content, raw=False)


def without_timing(doc: dict) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "timing"} for r in doc["results"]]


def test_msgpack_and_json_give_identical_results(gw):
    body = {"calls": [
        {"tool": "fixture__echo", "arguments": {"text": "héllo ✓"}},
        {"tool": "fixture__add", "arguments": {"a": 2, "b": 3.5}},
        {"tool": "fixture__fail", "arguments": {"message": "no"}},
        {"tool": "fixture__nope"},
        {"tool": "fixture__sleep", "arguments": {"ms": 1000}, "timeout_ms": 50},
        {"tool": "fixture__echo", "arguments": "not an object"},
        {"tool": "fixture__progress", "arguments": {"steps": 2, "delay_ms": 1}},
    ]}
    j, m = both(gw, body)
    assert without_timing(j) == without_timing(m)
    assert [r["outcome"] for r in m["results"]] == [r["outcome"] for r in j["results"]]
    assert m["results"][0]["result"]["content"][0]["text"] == "héllo ✓"
    for r in m["results"]:
        assert set(r["timing"]) == {"queue_ms", "execution_ms", "total_ms"}
    assert isinstance(m["timing"]["total_ms"], float)


def test_a_1_mb_result_is_identical_in_both(gw):
    j, m = both(gw, {"calls": [{"tool": "fixture__payload", "arguments": {"bytes": 1 << 20}}] * 2})
    assert without_timing(j) == without_timing(m)
    assert len(m["results"][1]["result"]["content"][0]["text"]) == 1 << 20


@pytest.mark.parametrize("body, message", [
    (b"\xc1", "the body is not MessagePack"),                               # a never-used byte
    (msgpack.packb({"calls": []})[:-1] + b"\x92", "the body is not MessagePack"),  # cut short
    (msgpack.packb({"calls": [{"tool": "fixture__echo"}]}) + b"\x00", "bytes follow it"),
    (msgpack.packb({"calls": [{"tool": b"fixture__echo"}]}, use_bin_type=True), "binary values are not accepted"),
    (msgpack.packb({1: 2}), "a map key is not a string"),
    (msgpack.packb(msgpack.ExtType(5, b"x")), "extension values are not accepted"),
    (msgpack.packb({"calls": [{"tool": "fixture__add", "arguments": {"a": float("nan")}}]}), "NaN or infinite"),
    (b"\x91" * 200 + b"\xc0", "nested deeper than 128"),
])
def test_hostile_msgpack_bodies_get_a_precise_400(gw, body, message):
    resp = post_msgpack(gw, body)
    assert resp.status_code == 400, resp.text
    # Whole-request errors are JSON, whatever the request's encoding.
    error = resp.json()["error"]
    assert error["code"] == "invalid_body" and message in error["message"], error


def test_invalid_utf8_in_a_msgpack_string_becomes_the_replacement_character(gw):
    # A str value with bytes that are not UTF-8: the gateway passes on only valid JSON.
    packed = msgpack.packb({"calls": [{"tool": "fixture__echo", "arguments": {"text": "PLACEHOLDER"}}]})
    packed = packed.replace(b"\xabPLACEHOLDER", b"\xa3a\xffb")
    resp = post_msgpack(gw, packed)
    assert resp.status_code == 200, resp.text
    out = msgpack.unpackb(resp.content, raw=False)
    assert out["results"][0]["result"]["content"][0]["text"] == "a\ufffdb"


def test_the_python_client_speaks_msgpack(gw):
    with toolbridge.Client(gw.base_url, encoding="msgpack") as c:
        r = c.call("fixture__echo", {"text": "packed"})
        assert r.text == "packed" and r.timing.total_ms > 0
        results = c.batch([("fixture__fail", {}), ("fixture__payload", {"bytes": 100_000})])
        assert results[0].outcome == "tool_error" and len(results[1].text) == 100_000
        with pytest.raises(toolbridge.InvalidCall):
            c.call("fixture__nope", {})
        with pytest.raises(toolbridge.RequestRejected) as info:
            c.batch([])
        assert info.value.code == "invalid_request"
    with pytest.raises(ValueError):
        toolbridge.Client(gw.base_url, encoding="xml")
