"""HTTP/1.1 keep-alive transports to one gateway: a thread-safe pool of ``http.client``
connections (sync) and a small asyncio client (async).

Chosen by measurement (bench/python/client_http_libs.py, docs/python.md): for one call per
request, http.client costs about a quarter of httpx's client CPU and about half of urllib3's;
on asyncio, this module's stream client costs less than aiohttp and a fraction of
httpx.AsyncClient. The gateway always answers with Content-Length; chunked answers are read
too, for proxies in between."""

from __future__ import annotations

import asyncio
import http.client
import queue
import socket
import ssl
import threading
import urllib.parse
from typing import Mapping

from .errors import ConnectionFailed

# An answer's head (status line and headers) is never near this; a body may be large.
_MAX_HEAD = 64 * 1024


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path prefix) of an http:// or https:// base URL ("http://h:p", "http://h:p/mcp")."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the gateway URL must be http://HOST:PORT or https://HOST:PORT, not {url!r}")
    prefix = parts.path.rstrip("/")
    if prefix.endswith("/mcp"):
        prefix = prefix[: -len("/mcp")]
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), prefix


def tls_context(url: str, ca_file: str | None) -> ssl.SSLContext | None:
    """The TLS context of an https:// URL (the system's CAs, or ``ca_file``); None for http://."""
    if urllib.parse.urlsplit(url).scheme != "https":
        return None
    return ssl.create_default_context(cafile=ca_file)


class Response:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class SyncTransport:
    """Connections kept alive and reused; any number of threads may send at once."""

    def __init__(self, host: str, port: int, timeout: float, headers: Mapping[str, str] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.headers = dict(headers or {})  # sent with every request (Authorization)
        self.tls = tls
        self._idle: queue.LifoQueue[http.client.HTTPConnection] = queue.LifoQueue()
        self._closed = False
        self._lock = threading.Lock()

    def _connect(self) -> http.client.HTTPConnection:
        if self.tls is not None:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self.host, self.port, timeout=self.timeout, context=self.tls)
        else:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.connect()
        except OSError as exc:
            raise ConnectionFailed(f"cannot connect to the gateway at {self.host}:{self.port}: {exc}") from exc
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: Mapping[str, str] | None = None) -> Response:
        try:
            conn, reused = self._idle.get_nowait(), True
        except queue.Empty:
            conn, reused = self._connect(), False
        for attempt in (0, 1):
            try:
                conn.request(method, path, body, {**self.headers, **headers} if headers else self.headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.will_close or self._closed:
                    conn.close()
                else:
                    self._idle.put(conn)
                return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                # A kept-alive connection the gateway closed while idle (idle_timeout): the
                # request never reached it, so it is sent once more on a new connection.
                if attempt == 0 and reused:
                    conn, reused = self._connect(), False
                    continue
                raise ConnectionFailed(f"the connection to the gateway broke: {exc!r}") from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise ConnectionFailed(f"request to the gateway failed: {exc!r}") from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                self._idle.get_nowait().close()
            except queue.Empty:
                return


class _AsyncConnection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def close(self) -> None:
        self.writer.close()


class AsyncTransport:
    """A pool of kept-alive asyncio connections; any number of tasks may send at once."""

    def __init__(self, host: str, port: int, timeout: float, headers: Mapping[str, str] | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.headers = dict(headers or {})  # sent with every request (Authorization)
        self.tls = tls
        self._idle: list[_AsyncConnection] = []
        # An IPv6 address goes in brackets (RFC 9110 section 7.2); the gateway refuses it bare.
        self._host_header = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    async def _connect(self) -> _AsyncConnection:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=_MAX_HEAD, ssl=self.tls)
        except OSError as exc:
            raise ConnectionFailed(f"cannot connect to the gateway at {self.host}:{self.port}: {exc}") from exc
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _AsyncConnection(reader, writer)

    async def request(self, method: str, path: str, body: bytes | None = None,
                      headers: Mapping[str, str] | None = None) -> Response:
        body = body or b""
        head = [f"{method} {path} HTTP/1.1\r\nHost: {self._host_header}\r\nContent-Length: {len(body)}\r\n"]
        for k, v in ({**self.headers, **headers} if headers else self.headers).items():
            head.append(f"{k}: {v}\r\n")
        head.append("\r\n")
        payload = "".join(head).encode("latin-1") + body
        reused = bool(self._idle)
        conn = self._idle.pop() if reused else await self._connect()
        for attempt in (0, 1):
            try:
                resp, keep = await asyncio.wait_for(self._exchange(conn, payload), self.timeout)
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                if attempt == 0 and reused:
                    conn, reused = await self._connect(), False
                    continue
                raise ConnectionFailed(f"the connection to the gateway broke: {exc!r}") from exc
            except (OSError, ValueError, asyncio.LimitOverrunError, asyncio.TimeoutError) as exc:
                conn.close()
                raise ConnectionFailed(f"request to the gateway failed: {exc!r}") from exc
            except BaseException:
                conn.close()  # cancelled mid-request: the connection's state is unknown
                raise
            if keep:
                self._idle.append(conn)
            else:
                conn.close()
            return resp
        raise AssertionError("unreachable")

    @staticmethod
    async def _exchange(conn: _AsyncConnection, payload: bytes) -> tuple[Response, bool]:
        conn.writer.write(payload)
        raw = await conn.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status_line = lines[0].split(" ", 2)
        if len(status_line) < 2 or not status_line[0].startswith("HTTP/1."):
            raise ValueError(f"not an HTTP/1.1 answer: {lines[0][:100]!r}")
        status = int(status_line[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                k, _, v = line.partition(":")
                headers[k.strip().lower()] = v.strip()
        reader = conn.reader
        if headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass
                    break
                parts.append(await reader.readexactly(size))
                await reader.readexactly(2)
            data = b"".join(parts)
        else:
            data = await reader.readexactly(int(headers.get("content-length", "0")))
        keep = headers.get("connection", "").lower() != "close" and status_line[0] != "HTTP/1.0"
        return Response(status, headers, data), keep

    async def close(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            try:
                await conn.writer.wait_closed()
            except OSError:
                pass
