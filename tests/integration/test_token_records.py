"""Token records (models.NAME.record_tokens, docs/token-records.md): the gateway keeps the token
ids and logprobs simulated vLLM- and SGLang-shaped workers return, per trajectory and turn,
without changing a byte of what the client receives; GET /v1/trajectories/ID/model_calls
returns them (JSON or MessagePack), bounded per trajectory and in all."""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
import urllib.parse
import uuid

import httpx
import msgpack
import pytest

from llm_support import Worker, chat_body, model_entry, sse_events, start_llm_gateway
from tb_support import metric

FAST = ("--decode-ms-per-token", "0", "--prefill-us-per-token", "0")
SYSTEM = " ".join(f"sys{i}" for i in range(40))


@pytest.fixture(scope="module")
def workers():
    ws = {"vllm": Worker("wv", "--shape", "vllm", *FAST), "sglang": Worker("ws", "--shape", "sglang", *FAST)}
    yield ws
    for w in ws.values():
        w.kill()


@pytest.fixture
def gw(tmp_path, workers):
    models = {f"{shape}-model": model_entry([w], record_tokens=True) for shape, w in workers.items()}
    models["plain"] = model_entry([workers["vllm"]])  # record_tokens off
    gw = start_llm_gateway(tmp_path / "gw", models, {"token_records_ttl": "2s"})
    yield gw
    gw.close()


def ask(shape: str) -> dict:
    """The request fields each engine reads to return token ids and logprobs."""
    if shape == "vllm":
        return {"return_token_ids": True, "logprobs": True}
    return {"return_meta_info": True, "logprobs": True}


def model_calls(gw, trajectory: str, **kw) -> httpx.Response:
    name = urllib.parse.quote(trajectory, safe="")
    return httpx.get(f"{gw.base_url}/v1/trajectories/{name}/model_calls", timeout=10, **kw)


def post(gw, path: str, body: dict, trajectory: str, stream: bool) -> tuple[bytes, httpx.Headers]:
    headers = {"X-Toolbridge-Trajectory": trajectory}
    if not stream:
        r = httpx.post(gw.base_url + path, json=body, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        return r.content, r.headers
    pieces = []
    with httpx.stream("POST", gw.base_url + path, json=body, headers=headers, timeout=30) as r:
        assert r.status_code == 200
        for chunk in r.iter_raw():
            pieces.append(chunk)
        return b"".join(pieces), r.headers


def worker_ids(raw: bytes, shape: str, stream: bool) -> tuple[list[int], list[int], list[float]]:
    """The prompt ids, completion ids and logprobs in what the worker sent, read as a trainer
    reading the engine's own answer would."""
    docs = [json.loads(e) for e in sse_events(raw.decode()) if e != "[DONE]"] if stream else [json.loads(raw)]
    prompt, completion, logprobs = [], [], []
    for d in docs:
        c = d["choices"][0]
        if shape == "vllm":
            prompt = d.get("prompt_token_ids", prompt)
            completion += c.get("token_ids", [])
            lp = c.get("logprobs") or {}
            logprobs += [x["logprob"] for x in lp.get("content", [])] + lp.get("token_logprobs", [])
        else:
            meta = c["meta_info"]
            completion = c["output_ids"]  # cumulative
            logprobs = [x[0] for x in meta["output_token_logprobs"]]
            prompt = [x[1] for x in meta["input_token_logprobs"]]
    return prompt, completion, logprobs


def response_id(raw: bytes, stream: bool) -> str:
    first = sse_events(raw.decode())[0] if stream else raw
    return json.loads(first)["id"]


@pytest.mark.parametrize("shape", ["vllm", "sglang"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_bytes_pass_unchanged_and_records_hold_the_workers_ids(gw, workers, shape, stream):
    worker = workers[shape]
    trajectory = f"tok-{shape}-{stream}-{uuid.uuid4().hex[:8]}"
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "héllo \"world\""}]
    sent = []
    for turn in range(2):
        body = chat_body(messages, model=f"{shape}-model", stream=stream, max_tokens=5, **ask(shape))
        raw, headers = post(gw, "/v1/chat/completions", body, trajectory, stream)
        assert headers["x-toolbridge-worker"] == worker.name
        # Byte for byte what the worker wrote (its own record of the answer it sent).
        direct = httpx.get(f"{worker.url}/sent/{response_id(raw, stream)}", timeout=10)
        assert direct.status_code == 200
        assert raw == direct.content
        sent.append((raw, messages))
        messages = messages + [{"role": "assistant", "content": "ok"}, {"role": "user", "content": f"t{turn}"}]

    r = model_calls(gw, trajectory)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["trajectory"] == trajectory and doc["turns_kept"] == 2 and doc["turns_dropped"] == 0
    assert doc["released"] is False
    calls = doc["model_calls"]
    assert [c["turn"] for c in calls] == [0, 1]
    for call, (raw, msgs) in zip(calls, sent):
        prompt, completion, logprobs = worker_ids(raw, shape, stream)
        assert len(completion) == 5 and len(prompt) > 40
        assert call["prompt_token_ids"] == prompt
        assert call["completion_token_ids"] == completion
        assert call["completion_logprobs"] == pytest.approx(logprobs, abs=1e-6)
        assert call["shape"] == shape
        assert call["worker"] == worker.name and call["model"] == f"{shape}-model"
        assert call["stream"] is stream and call["status"] == 200 and call["complete"] is True
        assert call["usage"]["prompt_tokens"] == len(prompt)
        assert call["usage"]["completion_tokens"] == 5
        assert call["finish_reason"] == "length"
        assert call["truncated"] is False and call["malformed"] == 0
        compact = json.dumps(msgs, separators=(",", ":"), ensure_ascii=False).encode()
        assert call["messages_hash"] == "sha256:" + hashlib.sha256(compact).hexdigest()
        t = call["timings"]
        assert 0 <= t["queue_s"] <= t["total_s"] and 0 <= t["ttft_s"] <= t["total_s"]
    # The second turn's prompt extends the first's: the ids a trainer concatenates.
    assert calls[1]["prompt_token_ids"][: len(calls[0]["prompt_token_ids"])] == calls[0]["prompt_token_ids"]

    # MessagePack, by Accept or by ?format=msgpack: the same records.
    for kw in ({"headers": {"Accept": "application/msgpack"}}, {"params": {"format": "msgpack"}}):
        m = model_calls(gw, trajectory, **kw)
        assert m.status_code == 200 and m.headers["content-type"] == "application/msgpack"
        packed = msgpack.unpackb(m.content, raw=False)
        assert [c["completion_token_ids"] for c in packed["model_calls"]] == [c["completion_token_ids"] for c in calls]
        assert packed["model_calls"][0]["completion_logprobs"] == pytest.approx(calls[0]["completion_logprobs"], abs=1e-6)
        assert len(m.content) < len(r.content)


def test_completions_endpoint_and_unrecorded_models(gw, workers):
    trajectory = "tok-cmpl-" + uuid.uuid4().hex[:8]
    body = {"model": "vllm-model", "prompt": "a b c d", "max_tokens": 3, "return_token_ids": True, "logprobs": 1}
    raw, _ = post(gw, "/v1/completions", body, trajectory, False)
    prompt, completion, _ = worker_ids(raw, "vllm", False)
    doc = model_calls(gw, trajectory).json()
    call = doc["model_calls"][0]
    assert call["endpoint"] == "completions"
    assert (call["prompt_token_ids"], call["completion_token_ids"]) == (prompt, completion)
    assert len(call["completion_logprobs"]) == 3
    # record_tokens off: the answer passes, nothing is kept.
    other = "tok-plain-" + uuid.uuid4().hex[:8]
    post(gw, "/v1/chat/completions", chat_body([{"role": "user", "content": "x"}], model="plain", **ask("vllm")),
         other, False)
    r = model_calls(gw, other)
    assert r.status_code == 404 and "record_tokens" in r.json()["error"]


def test_released_records_stay_until_they_age_out(gw):
    trajectory = "tok-rel-" + uuid.uuid4().hex[:8]
    post(gw, "/v1/chat/completions", chat_body([{"role": "user", "content": "x"}], model="vllm-model",
                                               **ask("vllm")), trajectory, False)
    released = httpx.delete(f"{gw.base_url}/sessions/{trajectory}", timeout=10)
    assert released.status_code == 200, released.text
    doc = model_calls(gw, trajectory).json()
    assert doc["released"] is True and 0 < doc["expires_in_s"] <= 2
    assert len(doc["model_calls"]) == 1
    time.sleep(2.2)  # gateway.token_records_ttl: 2s
    assert model_calls(gw, trajectory).status_code == 404
    assert metric(gw, "toolbridge_token_records_dropped_total", reason="expired") >= 1


def test_python_client_trajectory_tokens(gw):
    import toolbridge

    trajectory = "tok-py-" + uuid.uuid4().hex[:8]
    raw, _ = post(gw, "/v1/chat/completions", chat_body([{"role": "user", "content": "x"}], model="sglang-model",
                                                       max_tokens=4, **ask("sglang")), trajectory, False)
    _, completion, _ = worker_ids(raw, "sglang", False)
    with toolbridge.Client(gw.base_url) as client:
        tokens = client.trajectory_tokens(trajectory)
        assert isinstance(tokens, toolbridge.TrajectoryTokens)
        assert [c["completion_token_ids"] for c in tokens.model_calls] == [completion]
        assert tokens.turns_dropped == 0 and tokens.released is False
        assert client.trajectory(trajectory).tokens().model_calls == tokens.model_calls
        assert client.trajectory_tokens("never-" + uuid.uuid4().hex).model_calls == []
    with toolbridge.Client(gw.base_url, encoding="msgpack") as client:
        assert client.trajectory_tokens(trajectory).model_calls[0]["completion_token_ids"] == completion

    async def via_async():
        async with toolbridge.AsyncClient(gw.base_url) as client:
            return await client.trajectory_tokens(trajectory)

    assert asyncio.run(via_async()).model_calls[0]["completion_token_ids"] == completion


@pytest.mark.timeout(300)
def test_a_1000_turn_trajectory_stays_within_its_bounds(tmp_path, workers):
    limits = {"token_records_max_turns": 100, "token_records_trajectory_max_bytes": "256KiB",
              "token_records_max_bytes": "512KiB"}
    gw = start_llm_gateway(tmp_path / "gw", {"m": model_entry([workers["vllm"]], record_tokens=True)}, limits)
    try:
        trajectory = "tok-long-" + uuid.uuid4().hex[:8]
        messages = [{"role": "system", "content": SYSTEM}]
        with httpx.Client(timeout=30) as http:
            for turn in range(1000):
                # The conversation grows as a rollout's does, within a window (the request bound).
                messages = (messages + [{"role": "user", "content": f"turn {turn} " + "w " * 20}])[-60:]
                body = chat_body(messages, model="m", max_tokens=4, **ask("vllm"))
                r = http.post(gw.base_url + "/v1/chat/completions", json=body,
                              headers={"X-Toolbridge-Trajectory": trajectory})
                assert r.status_code == 200, r.text
                last = r.json()
                if turn % 100 == 0:
                    assert metric(gw, "toolbridge_token_records_bytes") <= 512 * 1024
        doc = model_calls(gw, trajectory).json()
        turns = [c["turn"] for c in doc["model_calls"]]
        # Oldest turns dropped first, counted; the rest in order, up to the last.
        assert turns == list(range(turns[0], 1000)), turns[:5]
        assert doc["turns_kept"] == len(turns) <= 100
        assert doc["turns_dropped"] == 1000 - len(turns)
        assert doc["bytes"] <= 256 * 1024
        assert doc["model_calls"][-1]["completion_token_ids"] == last["choices"][0]["token_ids"]
        assert doc["model_calls"][-1]["prompt_token_ids"] == last["prompt_token_ids"]
        assert metric(gw, "toolbridge_token_records_bytes") <= 512 * 1024
        assert metric(gw, "toolbridge_token_records_kept_total") == 1000
        dropped = metric(gw, "toolbridge_token_records_dropped_total")
        assert dropped == 1000 - len(turns)
    finally:
        gw.close()


def test_model_calls_has_the_trajectory_views_access_rule(tmp_path, workers):
    token = "token-records-key-0123456789"
    gateway = {"auth": {"keys": [{"name": "a", "token": token, "tenant": "run-a"}]}}
    gw = start_llm_gateway(tmp_path / "gw", {"m": model_entry([workers["vllm"]], record_tokens=True)}, gateway)
    try:
        trajectory = "tok-auth-" + uuid.uuid4().hex[:8]
        key = {"Authorization": f"Bearer {token}"}
        body = chat_body([{"role": "user", "content": "x"}], model="m", **ask("vllm"))
        r = httpx.post(gw.base_url + "/v1/chat/completions", json=body,
                       headers={**key, "X-Toolbridge-Trajectory": trajectory}, timeout=30)
        assert r.status_code == 200, r.text
        assert model_calls(gw, trajectory).status_code == 401
        assert httpx.get(f"{gw.base_url}/v1/trajectories/{trajectory}", timeout=10).status_code == 401
        assert model_calls(gw, trajectory, headers=key).json()["model_calls"][0]["completion_token_ids"] == \
            r.json()["choices"][0]["token_ids"]
    finally:
        gw.close()
    # gateway.dashboard: off closes the trajectory view and its model calls alike.
    gw = start_llm_gateway(tmp_path / "gw2", {"m": model_entry([workers["vllm"]], record_tokens=True)},
                           {"dashboard": "off"})
    try:
        r = model_calls(gw, "any")
        assert r.status_code == 403 and "gateway.dashboard" in r.json()["error"]
    finally:
        gw.close()
