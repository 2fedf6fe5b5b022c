"""Ready when it says so: a call to a server that is still starting waits for it instead of
"Unknown tool"; a server that failed to start is named with its start error; initialize and
tools/list during start-up wait (gateway.ready_timeout) for every server; a server ready later
sends notifications/tools/list_changed; `serve --wait-ready` prints its line once all are up."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tb_support import Gateway, RawSession, fixture_server, text_of

pytestmark = pytest.mark.timeout(120)

MISSING = "/nonexistent/toolbridge-no-such-binary"


def started(tmp_path, servers: dict, gateway: dict | None = None, extra_args=()) -> Gateway:
    gw = Gateway(tmp_path, servers, gateway, extra_args=extra_args)
    gw.start()
    return gw


def tool_names(sess: RawSession, req_id: int) -> set[str]:
    return {t["name"] for t in sess.request("tools/list", {}, req_id)["result"]["tools"]}


def test_a_call_right_after_listening_waits_for_its_starting_server(tmp_path, binaries):
    # ready_timeout 0: initialize answers at once, so the call reaches a server still starting.
    gw = started(tmp_path, {"fast": fixture_server(),
                            "slow": fixture_server("--init-delay-ms", "1500")},
                 gateway={"ready_timeout": "0s"})
    try:
        sess = RawSession(gw.mcp_url).initialize()
        assert gw.health()["servers"]["slow"]["state"] == "starting"
        assert "slow__echo" not in tool_names(sess, 1)  # nothing waited for it
        answer = sess.call_tool("slow__echo", {"text": "patience"}, 2)
        assert "result" in answer and not answer["result"].get("isError"), answer
        assert text_of(answer["result"]) == "patience"
        # A name the started server does not have is then an ordinary unknown tool.
        unknown = sess.call_tool("slow__nope", {}, 3)
        assert unknown["error"]["code"] == -32602 and "Unknown tool" in unknown["error"]["message"]
        sess.close()
    finally:
        gw.close()


def test_a_server_that_cannot_start_is_named_with_its_start_error(tmp_path, binaries):
    gw = started(tmp_path, {"fixture": fixture_server(),
                            "ghost": {"command": MISSING, "args": []}})
    try:
        sess = RawSession(gw.mcp_url).initialize()
        answer = sess.call_tool("ghost__anything", {}, 1)
        assert answer["result"]["isError"] is True, answer
        text = text_of(answer["result"])
        assert "server 'ghost' is unavailable" in text, text
        assert MISSING in text or "no such file" in text.lower(), text
        assert "next start attempt in" in text, text
        assert "Unknown tool" not in text
        sess.close()
    finally:
        gw.close()


def test_tools_list_during_start_up_waits_for_servers_within_ready_timeout(tmp_path, binaries):
    gw = started(tmp_path, {"fast": fixture_server(),
                            "slow": fixture_server("--init-delay-ms", "1000"),
                            "late": fixture_server("--init-delay-ms", "6000"),
                            "ghost": {"command": MISSING, "args": []}},
                 gateway={"ready_timeout": "3s"})
    try:
        began = time.monotonic()
        sess = RawSession(gw.mcp_url).initialize()  # waits up to ready_timeout too
        # Open the GET stream to hear list_changed when "late" arrives.
        notes: list[dict] = []

        def listen():
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": sess.session_id,
                       "MCP-Protocol-Version": sess.version}
            with httpx.stream("GET", gw.mcp_url, headers=headers, timeout=30) as resp:
                for line in resp.iter_lines():
                    if line.startswith("data:"):
                        notes.append(json.loads(line[5:]))
                    if any(m.get("method") == "notifications/tools/list_changed" for m in notes):
                        return

        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        names = tool_names(sess, 1)
        waited = time.monotonic() - began
        assert {"fast__echo", "slow__echo"} <= names, sorted(names)
        assert not any(n.startswith("late__") for n in names), "late became ready within 3 s?"
        assert waited < 5.5, f"tools/list waited {waited:.1f} s (ready_timeout is 3 s)"
        listener.join(timeout=15)
        assert any(m.get("method") == "notifications/tools/list_changed" for m in notes), notes
        assert "late__echo" in tool_names(sess, 2)
        sess.close()
    finally:
        gw.close()


def test_serve_wait_ready_prints_listening_once_servers_are_ready_or_failed(tmp_path, binaries):
    gw = started(tmp_path, {"slow": fixture_server("--init-delay-ms", "1500"),
                            "ghost": {"command": MISSING, "args": []}},
                 extra_args=["--wait-ready"])
    try:
        servers = gw.health()["servers"]
        assert servers["slow"]["state"] == "ready", servers
        assert servers["ghost"]["state"] == "backoff", servers
    finally:
        gw.close()
