"""A Jaeger all-in-one (v2, built from its Go module by scripts/setup into .deps/jaeger) on
loopback ports, with in-memory storage: the OTLP/HTTP receiver the gateway exports to and the
query API the tests read spans back from."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tb_support import REPO, _require, stop_process, wait_listening

JAEGER_BIN = REPO / ".deps" / "jaeger" / "jaeger"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


CONFIG = """\
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"""


class Jaeger:
    def __init__(self, workdir: Path) -> None:
        binary = _require(JAEGER_BIN, "jaeger all-in-one", "run scripts/setup (builds it with Go)")
        self.otlp, self.query, query_grpc = free_port(), free_port(), free_port()
        config = workdir / "jaeger.yaml"
        config.write_text(CONFIG.format(otlp=self.otlp, query=self.query, query_grpc=query_grpc))
        self.log = open(workdir / "jaeger.log", "wb")
        self.proc = subprocess.Popen([str(binary), "--config", str(config)],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        try:
            wait_listening(self.otlp, self.proc, "jaeger's OTLP receiver", timeout=60)
            wait_listening(self.query, self.proc, "jaeger's query API", timeout=60)
        except BaseException:
            self.close()
            raise
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.query}", timeout=10)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.otlp}"

    def trace(self, trace_id: str, want_spans: int, timeout: float = 20) -> dict[str, Any]:
        """The trace (Jaeger's JSON: spans, processes) once it holds at least `want_spans`."""
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            resp = self.client.get(f"/api/traces/{trace_id}")
            if resp.status_code == 200:
                data = resp.json().get("data") or []
                if data and len(data[0]["spans"]) >= want_spans:
                    return data[0]
                last = data
            else:
                last = resp.text[:300]
            time.sleep(0.2)
        raise AssertionError(f"trace {trace_id}: fewer than {want_spans} spans after {timeout} s: {last}")

    def close(self) -> None:
        stop_process(self.proc)
        self.log.close()
