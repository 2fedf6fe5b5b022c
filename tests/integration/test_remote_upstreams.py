"""Remote upstreams: servers given as a URL (Streamable HTTP, legacy HTTP+SSE, https), driven
through the gateway by the official Python SDK."""

from __future__ import annotations

import http.server
import json
import os
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import anyio
import httpx
import mcp.types as types
import pytest

from tb_sdk import only_text, run, sdk_session
from tb_support import fixture_bin, node_bin, npm_entry, stop_process

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Remote:
    """A server process listening on HTTP; stopped (and reaped) by close()."""

    def __init__(self, cmd: list[str], url: str | None = None, env: dict | None = None,
                 wait_url: str | None = None):
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})
        self.url = url
        if url is None:  # the fixture prints where it listens
            line = self.proc.stdout.readline().decode()
            assert line.startswith("listening on "), line
            self.url = line.split()[-1] + "/mcp"
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        if wait_url:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                try:
                    with socket.create_connection(("127.0.0.1", int(wait_url)), timeout=0.5):
                        return
                except OSError:
                    time.sleep(0.1)
            raise AssertionError(f"{cmd} did not listen on port {wait_url}")

    def close(self) -> None:
        stop_process(self.proc)


@pytest.fixture
def remotes():
    started: list[Remote] = []

    def start(*args, **kw) -> Remote:
        r = Remote(*args, **kw)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


def fixture_http(remotes) -> Remote:
    return remotes([str(fixture_bin()), "--http", "127.0.0.1:0"])


def everything_http(remotes, mode: str) -> Remote:
    port = free_port()
    path = "/mcp" if mode == "streamableHttp" else "/sse"
    return remotes([node_bin(), str(npm_entry("@modelcontextprotocol/server-everything")), mode],
                   url=f"http://127.0.0.1:{port}{path}", env={"PORT": str(port)},
                   wait_url=str(port))


def test_fixture_over_streamable_http(gateway_factory, remotes):
    fx = fixture_http(remotes)
    gw = gateway_factory({"remote": {"url": fx.url, "call_timeout": "2s"}})
    health = gw.wait_ready(["remote"])
    assert health["servers"]["remote"]["state"] == "ready", health
    progress: list[float] = []

    async def on_progress(p, total, message):
        progress.append(p)

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            echo = await s.call_tool("remote__echo", {"text": "over http"})
            add = await s.call_tool("remote__add", {"a": 2, "b": 40})
            prog = await s.call_tool("remote__progress", {"steps": 3}, progress_callback=on_progress)
            err = await s.call_tool("remote__fail", {"message": "on purpose"})
            slow = await s.call_tool("remote__sleep", {"ms": 10000})
            after = await s.call_tool("remote__echo", {"text": "still alive"})
            return names, echo, add, prog, err, slow, after

    names, echo, add, prog, err, slow, after = run(main)
    assert {"remote__echo", "remote__add", "remote__sleep"} <= names
    assert only_text(echo) == "over http"
    assert "42" in only_text(add)
    assert not prog.is_error and len(progress) == 3, (prog, progress)
    assert err.is_error and "on purpose" in only_text(err)
    assert slow.is_error and "timed out" in only_text(slow), slow
    assert only_text(after) == "still alive"


def test_sampling_and_elicitation_cross_a_remote(gateway_factory, remotes):
    fx = fixture_http(remotes)
    gw = gateway_factory({"remote": {"url": fx.url, "transport": "streamable_http"}})
    gw.wait_ready(["remote"])

    async def sampling(context, params):
        content = params.messages[0].content
        prompt = (content[0] if isinstance(content, list) else content).text
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text=f"s<{prompt}>"))

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    async def main():
        async with sdk_session(gw.mcp_url, sampling_callback=sampling,
                               elicitation_callback=elicitation) as s:
            a = await s.call_tool("remote__sample", {"prompt": "6*7"})
            b = await s.call_tool("remote__elicit", {"message": "ok?"})
            return a, b

    a, b = run(main)
    assert only_text(a) == "s<6*7>", a
    assert "yes" in only_text(b), b


def test_server_everything_streamable_http_and_legacy_sse(gateway_factory, remotes):
    streamable = everything_http(remotes, "streamableHttp")
    legacy = everything_http(remotes, "sse")
    gw = gateway_factory({"ev": {"url": streamable.url},
                          # auto-detection: the POST to /sse fails, the legacy GET stream works
                          "evsse": {"url": legacy.url}},
                         ready_timeout=60)
    gw.wait_ready(["ev", "evsse"])

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            a = await s.call_tool("ev__echo", {"message": "hi"})
            b = await s.call_tool("evsse__echo", {"message": "legacy"})
            c = await s.call_tool("evsse__get-sum", {"a": 1, "b": 2})
            return a, b, c

    a, b, c = run(main)
    assert "hi" in only_text(a), a
    assert "legacy" in only_text(b), b
    assert "3" in only_text(c), c


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Records request headers and answers 401, like an API behind a key."""
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802
        _Recorder.seen.append({k.lower(): v for k, v in self.headers.items()})
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"error":"bad key"}'
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_configured_headers_reach_the_server_and_http_errors_are_reported(gateway_factory):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        os.environ["TB_TEST_API_KEY"] = "k-123"
        gw = gateway_factory({"keyed": {"url": f"http://127.0.0.1:{server.server_port}/mcp",
                                        "headers": {"Authorization": "Bearer ${env:TB_TEST_API_KEY}",
                                                    "X-Team": "eval"},
                                        "restart_backoff": {"initial": "200ms", "max": "1s"}}},
                             ready=[])
        health = gw.wait_health(lambda h: h["servers"]["keyed"].get("last_error"), 20, "an error")
        err = health["servers"]["keyed"]["last_error"]
        assert "HTTP 401" in err and "bad key" in err, err
        assert _Recorder.seen, "no request reached the server"
        h = _Recorder.seen[0]
        assert h["authorization"] == "Bearer k-123"
        assert h["x-team"] == "eval"
        assert h["accept"] == "application/json, text/event-stream"
    finally:
        server.shutdown()


def test_remote_dying_is_reported_and_restarted(gateway_factory, remotes):
    port = free_port()
    fx = remotes([str(fixture_bin()), "--http", f"127.0.0.1:{port}"])
    # max_retries 0: a call that never reached the server is not re-sent; its error says why.
    gw = gateway_factory({"remote": {"url": fx.url, "max_retries": 0,
                                     "restart_backoff": {"initial": "100ms", "max": "500ms"}}})
    gw.wait_ready(["remote"])
    fx.close()

    async def call():
        async with sdk_session(gw.mcp_url) as s:
            return await s.call_tool("remote__echo", {"text": "x"})

    result = run(call)
    assert result.is_error, result
    text = only_text(result)
    assert "Connection refused" in text or "is starting" in text or "unavailable" in text, text
    health = gw.wait_health(lambda h: "refused" in (h["servers"]["remote"].get("last_error") or "") or
                            "broke" in (h["servers"]["remote"].get("last_error") or ""), 20,
                            "a connection error")
    assert "remote" in health["servers"]
    # The same address comes back: the restart with backoff finds it and initializes a new session.
    remotes([str(fixture_bin()), "--http", f"127.0.0.1:{port}"])
    gw.wait_ready(["remote"], timeout=30)
    assert only_text(run(call)) == "x"


def test_https_with_a_private_ca(gateway_factory, remotes, tmp_path):
    fx = fixture_http(remotes)
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    # A small TLS terminator in front of the fixture's plain HTTP port.
    upstream_port = int(fx.url.split(":")[2].split("/")[0])
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    tls_port = listener.getsockname()[1]

    def pipe(a, b):
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def serve():
        while True:
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            try:
                conn = ctx.wrap_socket(raw, server_side=True)
                up = socket.create_connection(("127.0.0.1", upstream_port))
            except (OSError, ssl.SSLError):  # a rejected handshake (the untrusted server)
                raw.close()
                continue
            threading.Thread(target=pipe, args=(conn, up), daemon=True).start()
            threading.Thread(target=pipe, args=(up, conn), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{tls_port}/mcp"
        gw = gateway_factory({
            "good": {"url": url, "ca_file": str(cert)},
            "unverified": {"url": url.replace("127.0.0.1", "localhost"), "tls_verify": False},
            # The system store does not trust a self-signed certificate: a clear error.
            "untrusted": {"url": url, "restart_backoff": {"initial": "5s", "max": "5s"}},
        }, ready=[])
        gw.wait_ready(["good", "unverified"], timeout=30)
        health = gw.wait_health(lambda h: h["servers"]["untrusted"].get("last_error"), 20, "an error")
        assert "certificate verify failed" in health["servers"]["untrusted"]["last_error"], health

        async def main():
            async with sdk_session(gw.mcp_url) as s:
                return (await s.call_tool("good__echo", {"text": "tls"}),
                        await s.call_tool("unverified__echo", {"text": "tls2"}))

        a, b = run(main)
        assert only_text(a) == "tls" and only_text(b) == "tls2"
    finally:
        listener.close()


def test_idle_keep_alive_connections_closed_by_the_server(gateway_factory, remotes):
    # Node's HTTP server closes a keep-alive connection after 5 s idle: the next call must open
    # a new one rather than fail on the dead one.
    ev = everything_http(remotes, "streamableHttp")
    gw = gateway_factory({"ev": {"url": ev.url}})
    gw.wait_ready(["ev"])

    async def main():
        async with sdk_session(gw.mcp_url) as s:
            first = await s.call_tool("ev__echo", {"message": "one"})
            await anyio.sleep(5.6)
            second = await s.call_tool("ev__echo", {"message": "two"})
            return first, second

    first, second = run(main)
    assert "one" in only_text(first) and "two" in only_text(second), (first, second)
    assert gw.health()["servers"]["ev"].get("restarts", 0) == 0, gw.health()["servers"]["ev"]


def test_per_session_remote_gives_each_session_its_own_mcp_session(gateway_factory, remotes):
    fx = fixture_http(remotes)
    gw = gateway_factory({"remote": {"url": fx.url, "policy": "per_session", "spares": 1}})
    gw.wait_ready(["remote"])

    async def main():
        async with sdk_session(gw.mcp_url) as a, sdk_session(gw.mcp_url) as b:
            ra = await a.call_tool("remote__echo", {"text": "a"})
            rb = await b.call_tool("remote__echo", {"text": "b"})
            return only_text(ra), only_text(rb), gw.health()["servers"]["remote"]

    ra, rb, health = run(main)
    assert (ra, rb) == ("a", "b")
    assert health["sessions_bound"] == 2, health
    assert health["pids"] == [], health  # a remote instance has no process of ours
