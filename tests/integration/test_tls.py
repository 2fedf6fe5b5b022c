"""TLS on the downstream listener, with a private CA made at test time by `openssl`: clients
that trust the CA complete the handshake (raw HTTP, the MCP SDK's transport via httpx, the
toolbridge Python client), clients that do not are refused, plain HTTP to the TLS port gets no
answer, and SIGHUP takes a renewed certificate without a restart (a broken one is refused and
the old one kept)."""

from __future__ import annotations

import asyncio
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tb_support import Gateway, RawSession, fixture_server, text_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
import toolbridge  # noqa: E402


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d: Path, name: str) -> tuple[Path, Path]:
    """A self-signed CA (EC P-256, one day): its certificate and key."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "1", "-subj", f"/CN={name}", cwd=d)
    return d / f"{name}.pem", d / f"{name}.key"


def make_server_cert(d: Path, ca: str, name: str) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost signed by `ca`."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    (d / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile", f"{name}.ext", cwd=d)
    return d / f"{name}.pem", d / f"{name}.key"


@pytest.fixture
def pki(tmp_path):
    d = tmp_path / "pki"
    d.mkdir()
    ca, _ = make_ca(d, "ca")
    other_ca, _ = make_ca(d, "other-ca")
    cert, key = make_server_cert(d, "ca", "server")
    live_cert, live_key = d / "live.pem", d / "live.key"
    live_cert.write_bytes(cert.read_bytes())
    live_key.write_bytes(key.read_bytes())
    return {"dir": d, "ca": ca, "other_ca": other_ca, "cert": live_cert, "key": live_key}


@pytest.fixture
def tls_gateway(gateway_factory, pki, tmp_path):
    gw = Gateway(tmp_path / "gw", {"fixture": fixture_server()},
                 {"tls": {"cert": str(pki["cert"]), "key": str(pki["key"])}})
    gw.verify = ssl.create_default_context(cafile=str(pki["ca"]))
    gw.start()
    gateway_factory.gateways.append(gw)  # stopped and checked at teardown
    gw.wait_ready()
    assert gw.base_url.startswith("https://127.0.0.1:")
    return gw


def handshake(port: int, ca: Path) -> str:
    """The server certificate's subject after a handshake that trusts only `ca` (raises if refused)."""
    import socket
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            return dict(x[0] for x in tls.getpeercert()["issuer"])["commonName"]


def test_a_client_that_trusts_the_ca_completes_the_handshake(tls_gateway, pki):
    gw = tls_gateway
    assert handshake(gw.port, pki["ca"]) == "ca"
    s = RawSession(gw.mcp_url, client=httpx.Client(timeout=60, verify=ssl.create_default_context(cafile=str(pki["ca"])))).initialize()
    assert text_of(s.call_tool("fixture__echo", {"text": "over tls"})["result"]) == "over tls"
    with toolbridge.Client(gw.base_url, ca_file=str(pki["ca"])) as c:
        assert c.call("fixture__echo", {"text": "sync"}).text == "sync"
        assert c.call("fixture__echo", {"text": "again, same connection"}).text == "again, same connection"

    async def async_calls() -> list[str]:
        async with toolbridge.AsyncClient(gw.base_url, ca_file=str(pki["ca"])) as c:
            return [(await c.call("fixture__echo", {"text": t})).text for t in ("a", "b")]
    assert asyncio.run(async_calls()) == ["a", "b"]


def test_a_client_without_the_ca_is_refused_and_plain_http_gets_nothing(tls_gateway, pki):
    gw = tls_gateway
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(gw.port, pki["other_ca"])
    with pytest.raises(httpx.ConnectError):
        httpx.get(gw.base_url + "/healthz")  # the system's CAs do not know ours
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(f"http://127.0.0.1:{gw.port}/healthz", timeout=10)
    with toolbridge.Client(gw.base_url) as c, pytest.raises(toolbridge.ConnectionFailed):
        c.call("fixture__echo", {"text": "x"})
    deadline = time.monotonic() + 5
    while 'reason="tls_handshake"} 0' in gw.metrics() and time.monotonic() < deadline:
        time.sleep(0.05)
    line = [x for x in gw.metrics().splitlines() if 'reason="tls_handshake"' in x][0]
    assert float(line.split()[-1]) >= 3, line
    assert gw.health()["status"] in ("ok", "degraded")  # still serving


def wait_log(gw, text: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while text not in gw.stderr_tail(500):
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{gw.stderr_tail(40)}"
        time.sleep(0.05)


def test_sighup_takes_a_renewed_certificate_and_keeps_the_old_one_if_broken(tls_gateway, pki):
    gw = tls_gateway
    d = pki["dir"]
    cert, key = make_server_cert(d, "other-ca", "renewed")
    pki["cert"].write_bytes(cert.read_bytes())
    pki["key"].write_bytes(key.read_bytes())
    gw.proc.send_signal(signal.SIGHUP)
    wait_log(gw, "SIGHUP: TLS certificate and key reloaded")
    assert handshake(gw.port, pki["other_ca"]) == "other-ca"
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(gw.port, pki["ca"])
    # A key that does not match: refused, the renewed certificate stays in use.
    pki["key"].write_bytes((d / "server.key").read_bytes())
    gw.proc.send_signal(signal.SIGHUP)
    wait_log(gw, "the previous certificate stays in use")
    assert handshake(gw.port, pki["other_ca"]) == "other-ca"


def test_the_official_sdk_reaches_a_gateway_with_tls_and_an_api_key(gateway_factory, pki, tmp_path):
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    token = "sdk-token-0123456789abcdef"
    gw = Gateway(tmp_path / "gw-auth", {"fixture": fixture_server()},
                 {"tls": {"cert": str(pki["cert"]), "key": str(pki["key"])},
                  "auth": {"keys": [{"name": "sdk", "token": token, "tenant": "sdk",
                                     "allow": ["fixture__echo"]}]}})
    gw.verify = ssl.create_default_context(cafile=str(pki["ca"]))
    gw.start()
    gateway_factory.gateways.append(gw)
    gw.wait_ready()

    async def session() -> tuple[list[str], str]:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                    verify=ssl.create_default_context(cafile=str(pki["ca"])))
        async with client, streamable_http_client(gw.mcp_url, http_client=client) as (read, write, *_):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = [t.name for t in (await s.list_tools()).tools]
                result = await s.call_tool("fixture__echo", {"text": "sdk over tls"})
                return tools, result.content[0].text

    assert asyncio.run(session()) == (["fixture__echo"], "sdk over tls")


def test_a_client_that_stalls_its_handshake_is_closed_after_idle_timeout(gateway_factory, pki, tmp_path):
    import socket
    gw = Gateway(tmp_path / "gw", {"fixture": fixture_server()},
                 {"tls": {"cert": str(pki["cert"]), "key": str(pki["key"])}, "idle_timeout": "1s"})
    gw.verify = ssl.create_default_context(cafile=str(pki["ca"]))
    gw.start()
    gateway_factory.gateways.append(gw)
    gw.wait_ready()
    with socket.create_connection(("127.0.0.1", gw.port), timeout=15) as raw:
        raw.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
        began = time.monotonic()
        assert raw.recv(4096) == b"", "the gateway answered a handshake that never came"
        waited = time.monotonic() - began
    # Never before idle_timeout (the sweep counts from one interval late), at most half of it after.
    assert 0.95 <= waited < 10, f"closed after {waited:.2f} s (idle_timeout 1s)"
    # Others are served meanwhile and after.
    assert handshake(gw.port, pki["ca"]) == "ca"
