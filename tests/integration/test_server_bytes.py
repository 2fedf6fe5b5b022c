"""What servers send us at the byte level never wedges an instance: invalid UTF-8 is replaced by
U+FFFD, a message nested deeper than the JSON depth limit (128) is dropped with a precise error
for the request it answers, and clients' deep arguments or bad bytes get precise answers too."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tb_support import Gateway, RawSession, fixture_server, parse_body, response_for, rpc, text_of

pytestmark = pytest.mark.timeout(90)

ROGUE = str(Path(__file__).resolve().parent / "rogue_server.py")


def rogue(mode: str, *args: str, **extra) -> dict:
    return {"command": sys.executable, "args": [ROGUE, mode, *args], **extra}


def start(tmp_path, servers, gateway=None, ready=None):
    gw = Gateway(tmp_path, servers, gateway)
    gw.start()
    try:
        if ready:
            gw.wait_ready(ready, timeout=30)
    except BaseException:
        gw.kill_quietly()
        raise
    return gw


def nested(depth: int):
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def test_initialize_error_with_bad_byte_fails_start_and_frees_the_permit(tmp_path, binaries):
    servers = {"bad": rogue("init-error-ff", startup_timeout="20s"), "good": fixture_server()}
    gw = start(tmp_path, servers, gateway={"start_concurrency": 1})
    try:
        began = time.monotonic()
        gw.wait_ready(["good"], timeout=10)

        def bad_reported(h):
            s = h.get("servers", {}).get("bad", {})
            return s.get("state") in ("backoff", "failed") and s.get("last_error")

        health = gw.wait_health(bad_reported, 10, "bad server reported")
        assert time.monotonic() - began < 10, "start took the startup_timeout, not the answer"
        error = health["servers"]["bad"]["last_error"]
        assert "initialize failed" in error and "no \ufffd way" in error, error
    finally:
        gw.close()


def test_ping_error_with_bad_byte_recycles_instead_of_wedging(tmp_path, binaries):
    gw = start(tmp_path, {"rogue": rogue("ping-error-ff", call_timeout="500ms")}, ready=["rogue"])
    s = RawSession(gw.mcp_url).initialize()
    try:
        hung = s.call_tool("rogue__hang", {}, 1)
        assert "timed out" in json.dumps(hung), hung
        # The ping after the deadline gets an error: the instance is recycled, and calls work.
        deadline = time.monotonic() + 15
        answer = None
        while time.monotonic() < deadline:
            answer = s.call_tool("rogue__echo", {"text": "back"}, 2)
            if "result" in answer and text_of(answer["result"]) == "back":
                break
            time.sleep(0.3)
        assert answer and "result" in answer and text_of(answer["result"]) == "back", answer
    finally:
        s.close()
        gw.close()


@pytest.mark.parametrize("mode,args", [("deep-schema", ["15"]), ("latin1", []),
                                       ("lone-surrogate", []), ("huge-number", [])])
def test_deep_schema_or_odd_description_is_listed(tmp_path, binaries, mode, args):
    gw = start(tmp_path, {"rogue": rogue(mode, *args)}, ready=["rogue"])
    s = RawSession(gw.mcp_url).initialize()
    try:
        listed = s.post(rpc("tools/list", {}, 1))
        assert "Infinity" not in listed.text  # not JSON, though Python's json would take it
        tools = {t["name"]: t for t in response_for(parse_body(listed), 1)["result"]["tools"]}
        assert "rogue__echo" in tools, sorted(tools)
        if mode == "latin1":
            assert tools["rogue__echo"]["description"] == "caf\ufffd"
        if mode == "lone-surrogate":
            assert tools["rogue__echo"]["description"] == "cut \ufffd"
        if mode == "huge-number":
            maximum = tools["rogue__echo"]["inputSchema"]["properties"]["n"]["maximum"]
            assert maximum == sys.float_info.max, maximum
        answer = s.call_tool("rogue__echo", {"text": "hi"}, 2)
        assert text_of(answer["result"]) == "hi", answer
    finally:
        s.close()
        gw.close()


def test_results_with_bad_bytes_or_too_deep(tmp_path, binaries):
    servers = {"ff": rogue("ff-result"), "deep": rogue("deep-result", "300"),
               "fine": rogue("deep-result", "40")}
    gw = start(tmp_path, servers, ready=list(servers))
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("ff__echo", {}, 1)
        assert text_of(answer["result"]) == "bad \ufffd byte", answer
        began = time.monotonic()
        answer = s.call_tool("deep__echo", {}, 2)
        assert time.monotonic() - began < 5
        assert "nested deeper than 128" in json.dumps(answer), answer
        answer = s.call_tool("fine__echo", {}, 3)
        assert "result" in answer, answer
        # The instance is still serving.
        assert "nested deeper than 128" in json.dumps(s.call_tool("deep__echo", {}, 4))
    finally:
        s.close()
        gw.close()


def test_client_arguments_nested_deep(tmp_path, binaries):
    gw = start(tmp_path, {"rogue": rogue("ok")}, ready=["rogue"])
    s = RawSession(gw.mcp_url).initialize()
    try:
        answer = s.call_tool("rogue__echo", {"text": "deep", "more": nested(40)}, 1)
        assert "result" in answer and text_of(answer["result"]) == "deep", answer
        answer = s.call_tool("rogue__echo", {"text": "deeper", "more": nested(300)}, 2)
        assert "error" in answer, answer
        assert "nested deeper than 128" in answer["error"]["message"], answer
        assert "Unknown tool" not in answer["error"]["message"], answer
    finally:
        s.close()
        gw.close()


def test_client_bad_bytes_in_method_or_id_are_not_echoed(tmp_path, binaries):
    gw = start(tmp_path, {"rogue": rogue("ok")}, ready=["rogue"])
    s = RawSession(gw.mcp_url).initialize()
    try:
        for body in (b'{"jsonrpc":"2.0","id":1,"method":"tools/\xffcall","params":{}}',
                     b'{"jsonrpc":"2.0","id":"a\xffb","method":"ping"}'):
            resp = s.post(body)
            assert b"\xff" not in resp.content, resp.content
            resp.content.decode("utf-8")  # what we send is valid UTF-8
            if resp.content:
                json.loads(resp.text.split("data:", 1)[-1]) if resp.text.startswith("event") else resp.json()
    finally:
        s.close()
        gw.close()
