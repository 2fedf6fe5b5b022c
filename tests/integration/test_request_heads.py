"""Strict request heads (issue 33): the DNS-rebinding guard judges the head a browser could have
sent. Two Host or two Origin headers, a Host whose port is not a number and an Origin that is not
a serialized origin are refused with 400 on every endpoint of both listeners (unknown paths and
wrong methods included), while the same request with a well-formed head is served. Requests go
over raw sockets: HTTP clients merge or refuse duplicate headers."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from llm_support import start_llm_gateway
from tb_support import fixture_server, initialize_params, rpc, toolbridge_bin, to_yaml

pytestmark = pytest.mark.timeout(120)

PROTOCOL = "2025-06-18"

# (method, path, extra header lines, body, status of the request with a well-formed head)
MAIN_ENDPOINTS = [
    ("POST", "/mcp", ["Content-Type: application/json",
                      "Accept: application/json, text/event-stream"],
     json.dumps(rpc("initialize", initialize_params(PROTOCOL), 0)), 200),
    ("GET", "/sse", ["Accept: text/event-stream"], "", 200),
    ("POST", "/messages?sessionId=nope", ["Content-Type: application/json"],
     json.dumps(rpc("ping", {}, 1)), 404),
    ("POST", "/t/heads/mcp", ["Content-Type: application/json",
                              "Accept: application/json, text/event-stream"],
     json.dumps(rpc("initialize", initialize_params(PROTOCOL), 0)), 200),
    ("POST", "/v1/batch", ["Content-Type: application/json"],
     json.dumps({"calls": [{"tool": "fixture__echo", "arguments": {"text": "hi"}}]}), 200),
    ("POST", "/v1/parse", ["Content-Type: application/json"],
     json.dumps({"text": "no calls here", "format": "auto"}), 200),
    ("POST", "/v1/parse/streams", ["Content-Type: application/json"], json.dumps({}), 201),
    ("DELETE", "/v1/parse/streams/nope", [], "", 404),
    # Without a session: "Mcp-Session-Id header is required", not a guard's refusal.
    ("GET", "/mcp", ["Accept: text/event-stream"], "", 400),
    ("DELETE", "/mcp", [], "", 400),
    ("GET", "/t/heads/sse", ["Accept: text/event-stream"], "", 200),
    ("GET", "/v1/tools", [], "", 200),
    ("GET", "/v1/trajectories", [], "", 200),
    ("GET", "/v1/trajectories/nope", [], "", 404),
    ("GET", "/healthz", [], "", 200),
    ("GET", "/metrics", [], "", 200),
    ("GET", "/dashboard", [], "", 200),
    ("GET", "/dashboard/state", [], "", 200),
    ("DELETE", "/sessions/nope", [], "", 200),
    ("GET", "/no-such-path", [], "", 404),  # the router's fallback
    ("PUT", "/healthz", [], "", 405),  # a path served with another method
]

ADMIN_ENDPOINTS = [
    ("GET", "/healthz", [], "", 200),
    ("GET", "/metrics", [], "", 200),
    ("GET", "/dashboard", [], "", 200),
    ("GET", "/dashboard/state", [], "", 200),
    ("GET", "/v1/trajectories", [], "", 200),
    ("DELETE", "/sessions/nope", [], "", 200),
    ("POST", "/mcp", [], "", 404),
]

LLM_ENDPOINTS = [
    ("GET", "/v1/models", [], "", 200),
    ("POST", "/v1/chat/completions", ["Content-Type: application/json"], "{}", 400),
    ("POST", "/v1/completions", ["Content-Type: application/json"], "{}", 400),
]


def malformed(port: int) -> dict[str, tuple[list[str], str]]:
    """The four malformed heads: their Host/Origin lines and what the refusal must say."""
    host = f"Host: 127.0.0.1:{port}"
    return {
        "two Host": ([host, "Host: evil.example"], "2 Host headers"),
        "two Origin": ([host, "Origin: http://localhost", "Origin: http://evil.example"],
                       "2 Origin headers"),
        "Host port": (["Host: 127.0.0.1:abc"], "'127.0.0.1:abc' is not host[:port]: the port"),
        "Origin userinfo": ([host, "Origin: http://a@127.0.0.1"],
                            "'http://a@127.0.0.1' is not a serialized origin"),
    }


def exchange(port: int, method: str, path: str, lines: list[str], body: str = "") -> tuple[int, dict, bytes]:
    """Sends one request as raw bytes; returns its status, headers and (whole or first) body."""
    data = body.encode()
    head = [f"{method} {path} HTTP/1.1", *lines, "Connection: close", f"Content-Length: {len(data)}"]
    raw = ("\r\n".join(head) + "\r\n\r\n").encode() + data
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(raw)
        received = b""
        while b"\r\n\r\n" not in received:
            chunk = s.recv(65536)
            assert chunk, f"closed before an answer to {method} {path}: {received!r}"
            received += chunk
        head_bytes, _, rest = received.partition(b"\r\n\r\n")
        status_line, *header_lines = head_bytes.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines)}
        length = int(headers.get("content-length", "-1"))
        while 0 <= length and len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
        # A stream (SSE) is not read to its end: its status is the answer.
        return int(status_line.split()[1]), headers, rest


def error_message(body: bytes) -> str:
    return json.loads(body)["error"]["message"]


def check_endpoints(port: int, endpoints: list) -> None:
    for method, path, extra, body, served in endpoints:
        status, _, answer = exchange(port, method, path, [f"Host: 127.0.0.1:{port}", *extra], body)
        assert status == served, (method, path, status, answer[:300])
        for case, (lines, says) in malformed(port).items():
            status, headers, answer = exchange(port, method, path, [*lines, *extra], body)
            assert status == 400, (case, method, path, status, answer[:300])
            assert headers["content-type"] == "application/json", (case, path, headers)
            message = error_message(answer)
            assert message.startswith("Bad Request: ") and says in message, (case, path, message)


@pytest.fixture(scope="module")
def gw(module_gateway_factory):
    return module_gateway_factory({"fixture": fixture_server()})


def test_malformed_heads_are_refused_on_every_endpoint(gw):
    check_endpoints(gw.port, MAIN_ENDPOINTS)


def test_a_well_formed_head_in_any_spelling_is_served(gw):
    for lines in (["host: localhost"], ["HOST: [::1]:1", "origin: http://[::1]:3000"],
                  [f"Host: 127.0.0.1:{gw.port}", "Origin: https://localhost"]):
        status, _, answer = exchange(gw.port, "GET", "/healthz", lines)
        assert status == 200, (lines, answer[:300])


@pytest.mark.parametrize("lines, status, says", [
    (["Host: localhost:"], 400, "the port after ':' is empty"),
    (["Host: [::1]:8x"], 400, "the port is not a number"),
    (["Host: localhost:65536"], 400, "the port is not a number from 0 to 65535"),
    (["Host: ::1"], 400, "an IPv6 address goes in brackets"),
    (["Host: localhost", "hOsT: localhost"], 400, "2 Host headers"),
    (["Host: localhost", "Origin: http://localhost/"], 400, "it has a path"),
    (["Host: localhost", "Origin: http://localhost?x"], 400, "it has a query"),
    (["Host: localhost", "Origin: http://localhost#x"], 400, "it has a fragment"),
    (["Host: localhost", "Origin: http://localhost:x@evil.example"], 400, "it has userinfo"),
    (["Host: localhost", "Origin: http://localhost:99999"], 400, "the port is not a number"),
    (["Host: localhost", "Origin: null"], 403, "Origin 'null' (an opaque origin"),
    (["Host: localhost", "Origin: http://evil.example"], 403, "is not allowed"),
    (["Host: evil.example"], 403, "'evil.example' is not a loopback name"),
    ([], 400, "an HTTP/1.1 request needs a Host header"),
    (["Host: " + "a" * 3000 + ":x"], 400, "'" + "a" * 64 + "' (cut, 3002 bytes)"),
])
def test_each_rule_names_what_is_wrong(gw, lines, status, says):
    got, _, answer = exchange(gw.port, "POST", "/v1/batch", lines, "{}")
    message = error_message(answer)
    assert got == status and says in message, (got, message)
    assert len(message) < 300, message


def test_the_admin_listener_refuses_malformed_heads(gateway_factory):
    gw = gateway_factory({"fixture": fixture_server()}, {"admin_listen": "127.0.0.1:0"})
    match = re.search(r"admin endpoints \(no token\) at http://127\.0\.0\.1:(\d+)", gw.stderr_tail(200))
    assert match, gw.stderr_tail(200)
    check_endpoints(int(match.group(1)), ADMIN_ENDPOINTS)


def test_the_llm_endpoints_refuse_malformed_heads(tmp_path):
    # The routes exist with a `models` section; its one worker never answers (nothing reaches it).
    llm = start_llm_gateway(tmp_path / "llm", {"sim": {"workers": [{"url": "http://127.0.0.1:9",
                                                                     "name": "w0"}]}})
    try:
        check_endpoints(llm.port, LLM_ENDPOINTS)
    finally:
        llm.close()


def test_a_loopback_admin_listener_checks_host_beside_a_public_one(tmp_path):
    # The admin listener has no token: a rebound page must not read it even when `listen` is
    # public (its Host was checked against `listen`'s address, so it was not checked at all).
    config = tmp_path / "toolbridge.yaml"
    config.write_text(to_yaml({"gateway": {"allow_unauthenticated": True, "admin_listen": "127.0.0.1:0"},
                               "servers": {"fixture": fixture_server()}}))
    log = tmp_path / "stderr.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([str(toolbridge_bin()), "serve", "--config", str(config),
                                 "--listen", "0.0.0.0:0"], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        line = proc.stdout.readline()
        main = re.match(r"^listening on http://0\.0\.0\.0:(\d+)$", line)
        assert main, line
        admin = None
        deadline = time.monotonic() + 30
        while admin is None and time.monotonic() < deadline:
            admin = re.search(r"admin endpoints \(no token\) at http://127\.0\.0\.1:(\d+)",
                              log.read_text(errors="replace"))
            time.sleep(0.05)
        assert admin, log.read_text(errors="replace")
        admin_port, main_port = int(admin.group(1)), int(main.group(1))
        status, _, answer = exchange(admin_port, "GET", "/metrics", ["Host: evil.example:9848"])
        assert status == 403 and "'evil.example:9848' is not a loopback name" in error_message(answer)
        assert exchange(admin_port, "GET", "/metrics", [f"Host: 127.0.0.1:{admin_port}"])[0] == 200
        # The public listener answers to any name (its callers hold keys or a proxy vouches).
        assert exchange(main_port, "GET", "/healthz", ["Host: gateway.example"])[0] == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert proc.returncode == 0, Path(log).read_text(errors="replace")


def test_the_python_client_names_an_ipv6_gateway_in_brackets(tmp_path):
    # toolbridge.AsyncClient writes its own Host: a bare IPv6 address there is not host[:port].
    import asyncio
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    import toolbridge

    config = tmp_path / "toolbridge.yaml"
    config.write_text(to_yaml({"servers": {"fixture": fixture_server()}}))
    proc = subprocess.Popen([str(toolbridge_bin()), "serve", "--config", str(config), "--listen", "[::1]:0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        assert re.match(r"^listening on http://\[::1\]:\d+$", line), line

        async def tools() -> list:
            async with toolbridge.AsyncClient(line.split()[-1], timeout=30) as client:
                return await client.tools()

        assert "fixture__echo" in [t["name"] for t in asyncio.run(tools())]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
