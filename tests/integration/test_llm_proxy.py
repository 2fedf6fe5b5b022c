"""The OpenAI-compatible front end: /v1/chat/completions, /v1/completions and /v1/models in front
of simulated inference workers (tests/llm_worker/worker.py)."""
from __future__ import annotations

import re
import threading

import httpx
import pytest

from llm_support import chat_body, model_entry, sse_events, start_llm_gateway, start_workers

SYSTEM = " ".join(f"sys{i}" for i in range(400))


@pytest.fixture
def workers():
    ws = start_workers(2, "--decode-ms-per-token", "1")
    yield ws
    for w in ws:
        w.kill()


@pytest.fixture
def gw(tmp_path, workers):
    gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(workers, routing="round_robin")})
    yield gw
    gw.close()


def test_models_lists_configured_models(gw):
    r = httpx.get(gw.base_url + "/v1/models", timeout=10)
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == ["sim"]


def test_chat_non_streaming_passes_body_and_usage(gw, workers):
    body = chat_body([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "hi"}],
                     max_tokens=4)
    r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["object"] == "chat.completion"
    assert doc["usage"]["prompt_tokens"] == 403
    assert r.headers["x-toolbridge-worker"] in {"w0", "w1"}
    assert doc["system_fingerprint"] == r.headers["x-toolbridge-worker"]


def test_completions_endpoint(gw):
    r = httpx.post(gw.base_url + "/v1/completions", json={"model": "sim", "prompt": "a b c"}, timeout=30)
    assert r.status_code == 200, r.text
    assert r.json()["object"] == "text_completion"


def test_streaming_passthrough_is_byte_identical(gw, workers):
    body = chat_body([{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}],
                     stream=True, max_tokens=6)
    pieces = []
    with httpx.stream("POST", gw.base_url + "/v1/chat/completions", json=body, timeout=30) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        worker = next(w for w in workers if w.name == r.headers["x-toolbridge-worker"])
        for chunk in r.iter_raw():
            pieces.append(chunk)
    via = b"".join(pieces)
    # The same worker asked directly sends the same bytes, but for its request counter in the id
    # (and the prompt is now cached there: the usage differs in cached_tokens only).
    direct = httpx.post(worker.url + "/v1/chat/completions", json=body, timeout=30).content
    normal = lambda b: re.sub(rb"cmpl-w\d-\d+", b"ID", re.sub(rb'"cached_tokens": \d+', b"C", b))
    assert normal(via) == normal(direct)
    assert via.endswith(b"data: [DONE]\n\n")
    assert len(sse_events(via.decode())) == 8  # 6 tokens, the usage chunk, [DONE]
    # More than one chunk reached the client: nothing buffered the stream whole.
    assert len(pieces) > 1


def test_streaming_chunks_arrive_before_the_answer_ends(tmp_path):
    ws = start_workers(1, "--decode-ms-per-token", "300")
    try:
        gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(ws)})
        try:
            body = chat_body([{"role": "user", "content": "x"}], stream=True, max_tokens=5)
            import time
            t0 = time.monotonic()
            first = None
            with httpx.stream("POST", gw.base_url + "/v1/chat/completions", json=body, timeout=30) as r:
                for chunk in r.iter_raw():
                    if first is None and b"data: " in chunk:
                        first = time.monotonic() - t0
            total = time.monotonic() - t0
            # 4 decode steps of 300 ms follow the first token: it must arrive well before them.
            assert first is not None and total - first > 0.9, (first, total)
        finally:
            gw.close()
    finally:
        ws[0].kill()


@pytest.mark.parametrize("payload,status,needle", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1,2]", 400, "JSON object"),
    (b'{"messages": []}', 400, '"model"'),
    (b'{"model": "nope", "messages": []}', 404, "does not exist"),
    (b'{"model": "sim", "stream": "yes"}', 400, "stream"),
    (b'{"model": "sim", "user": "\\u0001bad"}', 400, "user"),
])
def test_bad_requests_get_precise_errors(gw, payload, status, needle):
    r = httpx.post(gw.base_url + "/v1/chat/completions", content=payload,
                   headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert needle in err["message"], err


def test_bad_trajectory_header_is_refused(gw):
    r = httpx.post(gw.base_url + "/v1/chat/completions", json=chat_body([]),
                   headers={"X-Toolbridge-Trajectory": "-rf /"}, timeout=10)
    assert r.status_code == 400
    assert "trajectory" in r.json()["error"]["message"]


def test_admission_limits_apply_to_model_calls(tmp_path):
    ws = start_workers(1, "--decode-ms-per-token", "200")
    try:
        gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(ws, concurrency_limit=1)},
                               gateway={"admission_queue_size": 1})
        try:
            body = chat_body([{"role": "user", "content": "slow"}], max_tokens=5)
            results = []

            def call():
                results.append(httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30))

            threads = [threading.Thread(target=call) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            codes = sorted(r.status_code for r in results)
            # One runs, one waits in the queue, the rest are shed with a hint.
            assert codes.count(200) >= 2 and 429 in codes, codes
            shed = next(r for r in results if r.status_code == 429)
            assert int(shed.headers["retry-after"]) >= 1
            assert shed.json()["error"]["code"] == "admission_shed"
            assert ws[0].stats()["max_running"] == 1
            metrics = gw.metrics()
            assert 'toolbridge_admission_shed_total{server="sim"' in metrics
        finally:
            gw.close()
    finally:
        ws[0].kill()


def test_trajectory_from_metadata_or_user_keeps_affinity(tmp_path):
    from llm_support import start_workers as start
    ws = start(4)
    try:
        gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(ws, routing="affinity")})
        try:
            def worker_for(**extra):
                r = httpx.post(gw.base_url + "/v1/chat/completions",
                               json=chat_body([{"role": "user", "content": "x"}], **extra), timeout=30)
                assert r.status_code == 200, r.text
                return r.headers["x-toolbridge-worker"]

            for key in ("metadata", "user"):
                homes = set()
                for n in range(8):
                    ids = [worker_for(**({"metadata": {"trajectory_id": f"task-{n}"}} if key == "metadata"
                                         else {"user": f"task-{n}"})) for _ in range(5)]
                    assert len(set(ids)) == 1, (key, ids)
                    homes.add(ids[0])
                assert len(homes) >= 2  # different trajectories hash to different workers
            # The header wins over the body, and names the same trajectory as metadata does.
            by_header = httpx.post(gw.base_url + "/v1/chat/completions",
                                   json=chat_body([{"role": "user", "content": "x"}],
                                                  metadata={"trajectory_id": "other"}),
                                   headers={"X-Toolbridge-Trajectory": "task-3"}, timeout=30)
            assert by_header.headers["x-toolbridge-worker"] == worker_for(metadata={"trajectory_id": "task-3"})
            bad = httpx.post(gw.base_url + "/v1/chat/completions",
                             json=chat_body([], metadata={"trajectory_id": "../etc"}), timeout=10)
            assert bad.status_code == 400
            assert "metadata.trajectory_id" in bad.json()["error"]["message"]
        finally:
            gw.close()
    finally:
        for w in ws:
            w.kill()


def test_model_requests_are_measured_traced_and_shown_in_their_trajectory(tmp_path, workers):
    import json
    import time

    trace = tmp_path / "calls.jsonl"
    gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(workers, routing="round_robin")},
                           {"trace": str(trace)})
    try:
        for i in range(2):
            body = chat_body([{"role": "user", "content": f"turn {i}"}], max_tokens=2)
            r = httpx.post(gw.base_url + "/v1/chat/completions", json=body, timeout=30,
                           headers={"X-Toolbridge-Trajectory": "agent-5"})
            assert r.status_code == 200, r.text
        deadline = time.monotonic() + 10
        lines: list[dict] = []
        while time.monotonic() < deadline and len(lines) < 2:
            lines = [json.loads(x) for x in trace.read_text().splitlines()] if trace.exists() else []
            time.sleep(0.05)
        assert len(lines) == 2, lines
        assert all(x["server"] == "sim" and x["tool"] == "chat/completions" and x["outcome"] == "ok"
                   and x["trajectory"] == "agent-5" and x["execution_s"] > 0 for x in lines), lines
        view = httpx.get(gw.base_url + "/v1/trajectories/agent-5", timeout=10).json()
        assert view["summary"]["calls"] == 2
        metrics = httpx.get(gw.base_url + "/metrics", timeout=10).text
        assert 'toolbridge_calls_total{server="sim",tool="chat/completions",outcome="ok"} 2' in metrics
    finally:
        gw.close()


def test_a_stop_lets_a_streaming_model_request_finish_then_exits_at_once(tmp_path):
    """SIGTERM while a completion streams: the stream still ends with [DONE], and the gateway
    exits as soon as it has ended (the drain wakes when the last request ends), far inside
    shutdown_grace."""
    import signal
    import time
    ws = start_workers(1, "--decode-ms-per-token", "200")
    try:
        gw = start_llm_gateway(tmp_path / "gw", {"sim": model_entry(ws)}, {"shutdown_grace": "30s"})
        try:
            body = chat_body([{"role": "user", "content": "x"}], stream=True, max_tokens=8)
            with httpx.stream("POST", gw.base_url + "/v1/chat/completions", json=body, timeout=30) as r:
                text = b""
                chunks = r.iter_raw()
                while b"data: " not in text:
                    text += next(chunks)
                gw.proc.send_signal(signal.SIGTERM)
                stopped_at = time.monotonic()
                for chunk in chunks:
                    text += chunk
            ended_at = time.monotonic()
            events = sse_events(text.decode())
            assert r.status_code == 200 and events and events[-1] == "[DONE]", text[-300:]
            # Seven decode steps of 200 ms were left when the stop began.
            assert ended_at - stopped_at > 1.0, ended_at - stopped_at
            assert gw.proc.wait(timeout=20) == 0
            exited_after = time.monotonic() - ended_at
            assert exited_after < 3.0, f"the gateway exited {exited_after:.1f} s after the last stream ended"
        finally:
            gw.close(check=False)
    finally:
        ws[0].kill()
