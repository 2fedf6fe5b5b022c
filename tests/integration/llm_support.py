"""Simulated inference workers (tests/llm_worker/worker.py) and gateways with a `models` section,
for the LLM routing tests."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tb_support import Gateway, to_yaml

WORKER = Path(__file__).resolve().parents[1] / "llm_worker" / "worker.py"


class Worker:
    def __init__(self, name: str, *args: str):
        self.name = name
        self.proc = subprocess.Popen([sys.executable, str(WORKER), "--port", "0", "--name", name, *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = self.proc.stdout.readline().decode()
        assert line.startswith("PORT "), f"worker {name} did not start: {line!r}"
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def stats(self) -> dict:
        return httpx.get(self.url + "/stats", timeout=10).json()

    def fault(self, kind: str, count: int = 1, retry_after: int = 1) -> None:
        r = httpx.post(self.url + "/fault", json={"kind": kind, "count": count, "retry_after": retry_after},
                       timeout=10)
        assert r.status_code == 200

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def alive(self) -> bool:
        return self.proc.poll() is None


def start_workers(n: int, *args: str) -> list[Worker]:
    return [Worker(f"w{i}", *args) for i in range(n)]


def model_entry(workers: list[Worker], **keys) -> dict:
    entry = {"workers": [{"url": w.url, "name": w.name} for w in workers]}
    entry.update(keys)
    return entry


def start_llm_gateway(workdir: Path, models: dict, gateway: dict | None = None) -> Gateway:
    gw = Gateway(workdir, {}, gateway)
    doc = {}
    if gateway:
        doc["gateway"] = gateway
    doc["servers"] = {}
    doc["models"] = models
    gw.config_path.write_text(to_yaml(doc))
    gw.start()
    return gw


def chat_body(messages: list[dict], model: str = "sim", **extra) -> dict:
    return {"model": model, "messages": messages, **extra}


def sse_events(text: str) -> list[str]:
    return [line[len("data: "):] for line in text.split("\n") if line.startswith("data: ")]
