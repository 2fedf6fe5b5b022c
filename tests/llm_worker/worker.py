#!/usr/bin/env python3
"""A simulated inference worker: an OpenAI-compatible server whose time cost follows a KV prefix
cache, for toolbridge's LLM routing tests and the `llm-routing` bench (not part of the product).

Standard library only (asyncio, a small HTTP/1.1 server with keep-alive), so it runs under any
Python 3.10+ and costs little CPU: it never computes anything, it sleeps as long as a GPU would
(see README.md in this folder for the cost model).

Endpoints:
  POST /v1/chat/completions, POST /v1/completions   (stream true: SSE; false: one JSON body)
  GET  /v1/models, /health, /health_generate, /model_info, /server_info, /get_server_info
  GET  /stats                      counters (requests, prompt/cached/computed tokens, running),
                                   and the traceparent header of the last request with one
  POST /fault {"kind": K, "count": N, "retry_after": S}
       K: "5xx" (503), "429" (with Retry-After), "hang" (accepts, never answers),
          "die" (exits at the next request, before answering),
          "die_mid_stream" (exits after the first streamed chunk), "none" (clears).
       N: requests affected (default 1; -1 for all of them).
  POST /reset                      empties the KV cache and counters
  GET  /sent/ID                    the exact bytes answered for response ID (the de-chunked body
                                   of a stream), for byte-for-byte passthrough checks (last 256)

Answer shapes (`--shape`, or the request's own `sim_shape` field): `openai` (the default: token
ids never, `logprobs` as OpenAI writes them when asked), `vllm` (with `return_token_ids: true`:
`prompt_token_ids` and each choice's `token_ids`, per chunk when streamed), `sglang` (with
`return_meta_info: true`: each choice's `output_ids` and `meta_info` with `output_token_logprobs`
[[logprob, id, null], ...] and `input_token_logprobs`, cumulative when streamed, as SGLang sends).
A token's id is the CRC-32 of its word modulo 151,936; its logprob a function of the word.

Scripted agent: a chat request whose first user message holds a task marker
`[eval-task id=ID turns=N format=hermes|use_mcp_tool]` is answered, instead of filler words, with
the turn's text of a scripted agent (`script_turn`): 1-3 tool calls in that format, with the
mistakes models make at fixed rates, and a final answer at turn N-1. The turn is the number of
assistant messages in the request. Deterministic per (task, turn): any stack sees the same
outputs. The bench's checks import `script_turn` from this file.

Start: worker.py --port 0 [options]; prints "PORT <n>" on stdout once listening.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import time
import zlib
from collections import OrderedDict

MAX_HEADER_BYTES = 64 << 10
MAX_BODY_BYTES = 64 << 20


class KvCache:
    """Token blocks keyed by a hash of the whole prefix up to and including the block, LRU."""

    def __init__(self, capacity_tokens: int, block: int):
        self.block = block
        self.capacity_blocks = max(1, capacity_tokens // block)
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def block_keys(self, tokens: list[str]) -> list[int]:
        keys = []
        h = 0
        b = self.block
        for i in range(0, len(tokens) - len(tokens) % b, b):
            h = hash((h, *tokens[i:i + b]))
            keys.append(h)
        return keys

    def lookup_and_insert(self, tokens: list[str]) -> int:
        """Cached prefix length in tokens; then the prompt's blocks become the most recent."""
        keys = self.block_keys(tokens)
        hit = 0
        for k in keys:
            if k in self.blocks:
                hit += 1
            else:
                break
        for k in keys:
            if k in self.blocks:
                self.blocks.move_to_end(k)
            else:
                self.blocks[k] = None
        while len(self.blocks) > self.capacity_blocks:
            self.blocks.popitem(last=False)
        return hit * self.block


SENT_KEPT = 256
VOCAB = 151_936
SHAPES = ("openai", "vllm", "sglang")


def token_id(word: str) -> int:
    return zlib.crc32(word.strip().encode()) % VOCAB


def token_logprob(word: str) -> float:
    return -round((zlib.crc32(b"lp" + word.encode()) % 4000) / 1000, 3)


class Shape:
    """What a request asked of the answer's shape: token ids and logprobs, per engine."""

    def __init__(self, w_shape: str, body: dict, prompt_tokens: list[str]):
        kind = body.get("sim_shape", w_shape)
        self.kind = kind if kind in SHAPES else w_shape
        self.logprobs = body.get("logprobs") not in (None, False, 0)
        self.vllm_ids = self.kind == "vllm" and body.get("return_token_ids") is True
        self.sglang_meta = self.kind == "sglang" and body.get("return_meta_info") is True
        self.prompt_ids = [token_id(t) for t in prompt_tokens]

    def openai_logprobs(self, chat: bool, words: list[str]) -> dict | None:
        if not self.logprobs:
            return None
        if chat:
            return {"content": [{"token": x, "logprob": token_logprob(x), "bytes": list(x.encode()),
                                 "top_logprobs": []} for x in words]}
        return {"tokens": words, "token_logprobs": [token_logprob(x) for x in words],
                "top_logprobs": None, "text_offset": []}

    def decorate(self, top: dict, choice: dict, chat: bool, words: list[str], done: list[str],
                 first: bool, usage: dict, finish) -> None:
        """Adds this shape's fields for `words` (this event's) to `top` and `choice`; `done` are
        all the words so far (SGLang's fields are cumulative)."""
        lp = self.openai_logprobs(chat, words)
        if lp is not None and words:
            choice["logprobs"] = lp
        if self.vllm_ids:
            if first:
                top["prompt_token_ids"] = self.prompt_ids
            choice["token_ids"] = [token_id(x) for x in words]
        if self.sglang_meta:
            ids = [token_id(x) for x in done]
            choice["output_ids"] = ids
            meta = {"id": top.get("id"), "finish_reason": finish,
                    "prompt_tokens": usage["prompt_tokens"], "completion_tokens": len(done),
                    "cached_tokens": usage["prompt_tokens_details"]["cached_tokens"]}
            if self.logprobs:
                meta["output_token_logprobs"] = [[token_logprob(x), token_id(x), None] for x in done]
                meta["input_token_logprobs"] = [[None if i == 0 else -1.0, t, None]
                                                for i, t in enumerate(self.prompt_ids)]
            choice["meta_info"] = meta


class Worker:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.cache = KvCache(args.cache_tokens, args.block)
        self.running = 0
        self.slots = asyncio.Semaphore(args.max_running)
        self.prefill_lane = asyncio.Lock()  # prefill is compute-bound: one batch at a time
        self.fault_kind = "none"
        self.fault_count = 0
        self.fault_retry_after = 1
        self.stats = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "computed_tokens": 0,
                      "completion_tokens": 0, "faults": 0, "max_running": 0, "scripted": 0}
        self.created = int(time.time())
        self.seq = 0
        self.last_traceparent = ""  # of the last request that carried one (/stats)
        self.sent: OrderedDict[str, bytes] = OrderedDict()  # response id -> the bytes answered

    def remember(self, rid: str, data: bytes) -> None:
        self.sent[rid] = data
        while len(self.sent) > SENT_KEPT:
            self.sent.popitem(last=False)

    # ---- faults ----
    def take_fault(self) -> str:
        if self.fault_kind == "none" or self.fault_count == 0:
            return "none"
        if self.fault_count > 0:
            self.fault_count -= 1
        self.stats["faults"] += 1
        return self.fault_kind

    # ---- the cost model ----
    def prompt_of(self, path: str, body: dict) -> str:
        if path == "/v1/completions":
            p = body.get("prompt", "")
            if isinstance(p, list):
                p = " ".join(x for x in p if isinstance(x, str))
            return p if isinstance(p, str) else ""
        parts = []
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            content = m.get("content", "")
            if isinstance(content, list):
                content = " ".join(c.get("text", "") for c in content if isinstance(c, dict))
            parts.append(f"<|{m.get('role', 'user')}|> {content if isinstance(content, str) else ''}")
        return " ".join(parts)

    def output_tokens(self, body: dict) -> int:
        n = self.args.output_tokens
        for key in ("max_tokens", "max_completion_tokens"):
            v = body.get(key)
            if isinstance(v, int) and v > 0:
                n = min(n, v)
        return max(1, n)


# ---- the scripted agent ----

EVAL_TASK = re.compile(r"\[eval-task id=([A-Za-z0-9_.:-]{1,64}) turns=(\d{1,4}) format=(hermes|use_mcp_tool)\]")
# The tools the script calls (bench/python/eval_tools.py serves them): server, tool, text
# parameter, integer parameter.
SCRIPT_TOOLS = (("search", "web_search", "query", "num_results"),
                ("scrape", "scrape_page", "url", "max_chars"),
                ("sandbox", "run_python_code", "code", "timeout"))
TOOL_WEIGHTS = (0.5, 0.3, 0.2)
# Per written call, at most one mistake, at these rates (the rest are written correctly).
MISTAKE_RATES = (("no_server", 0.08),    # hermes: the tool's own name; use_mcp_tool: the tool as the server
                 ("wrong_case", 0.05),   # Search__Web_Search, <tool_name>Web_Search
                 ("num_string", 0.08),   # "num_results": "5"
                 ("unparseable", 0.03))  # "num_results": five  (no reader can take it)
FENCED_RATE = 0.06                       # per turn: an example call inside a code fence, never to run
CALLS_WEIGHTS = (0.5, 0.35, 0.15)        # 1, 2 or 3 calls a turn
QUERY_POOL = 300                         # search queries, Zipf-distributed: repeated across tasks
PAGE_POOL = 400
FILLER = ("let me check the source first then compare the figures with the other report and "
          "see whether the dates agree before answering").split()


def _zipf(rng: random.Random, n: int, s: float = 1.1) -> int:
    weights = _zipf.cache.get((n, s))
    if weights is None:
        weights = _zipf.cache[(n, s)] = [1 / (k + 1) ** s for k in range(n)]
    return rng.choices(range(n), weights=weights)[0]


_zipf.cache = {}


def script_call(rng: random.Random, task: str, turn: int, k: int) -> dict:
    server, tool, text_param, int_param = rng.choices(SCRIPT_TOOLS, weights=TOOL_WEIGHTS)[0]
    if server == "search":
        args = {"query": f"query {_zipf(rng, QUERY_POOL)} about the topic"}
        int_value = rng.choice((3, 5, 8))
    elif server == "scrape":
        args = {"url": f"https://example.org/page/{_zipf(rng, PAGE_POOL, 0.8)}"}
        int_value = rng.choice((2000, 4000))
    else:
        args = {"code": f"print(sum(i * i for i in range({rng.randrange(10, 10000)})))  # {task} {turn} {k}"}
        int_value = rng.choice((10, 30))
    r = rng.random()
    mistake = "none"
    for kind, rate in MISTAKE_RATES:
        if r < rate:
            mistake = kind
            break
        r -= rate
    if mistake in ("num_string", "unparseable") or rng.random() < 0.6:
        args[int_param] = int_value
    return {"server": server, "tool": tool, "name": f"{server}__{tool}", "arguments": args,
            "int_param": int_param, "mistake": mistake, "fenced": False}


def render_call(call: dict, fmt: str) -> str:
    args = dict(call["arguments"])
    mistake = call["mistake"]
    bare = None
    if mistake == "num_string":
        args[call["int_param"]] = str(args[call["int_param"]])
    elif mistake == "unparseable":
        bare = args[call["int_param"]]
        args[call["int_param"]] = "@BARE@"
    body = json.dumps(args)
    if bare is not None:
        body = body.replace('"@BARE@"', f"n{bare}")  # a bare word: needs a guess, never repaired
    server, tool = call["server"], call["tool"]
    if fmt == "hermes":
        name = call["name"]
        if mistake == "no_server":
            name = tool
        elif mistake == "wrong_case":
            name = "__".join(p.title() for p in name.split("__"))
        return f'<tool_call>\n{{"name": "{name}", "arguments": {body}}}\n</tool_call>'
    if mistake == "no_server":
        server = tool
    elif mistake == "wrong_case":
        tool = tool.title()
    return (f"<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n"
            f"<arguments>\n{body}\n</arguments>\n</use_mcp_tool>")


def script_turn(task: str, turn: int, turns: int, fmt: str) -> dict:
    """The scripted agent's output at `turn` (0-based) of a task of `turns` turns: its text and
    the calls written in it (each: server, tool, name, arguments as meant, mistake, fenced)."""
    rng = random.Random(f"eval/{task}/{turn}")
    words = " ".join(rng.choice(FILLER) for _ in range(rng.randrange(30, 70)))
    lead = f"<think>\n{words}\n</think>\n" if fmt == "hermes" else f"{words}\n\n"
    if turn >= turns - 1:
        return {"text": f"{lead}Final answer: \\boxed{{{rng.randrange(10 ** 6)}}}", "calls": [], "final": True}
    n = rng.choices((1, 2, 3), weights=CALLS_WEIGHTS)[0]
    calls, seen = [], set()
    while len(calls) < n:
        c = script_call(rng, task, turn, len(calls))
        key = json.dumps([c["name"], c["arguments"]], sort_keys=True)
        if key not in seen:  # a turn never writes the same call twice
            seen.add(key)
            calls.append(c)
    parts = [lead + "I will use the tools."]
    if rng.random() < FENCED_RATE:
        example = {"server": "search", "tool": "web_search", "name": "search__web_search",
                   "arguments": {"query": f"example query {task} {turn}"}, "int_param": "num_results",
                   "mistake": "none", "fenced": True}
        parts.append("The call format, for example:\n```\n" + render_call(example, fmt) + "\n```")
        calls.append(example)
    parts += [render_call(c, fmt) for c in calls if not c["fenced"]]
    return {"text": "\n".join(parts), "calls": calls, "final": False}


def scripted_text(body: dict) -> str | None:
    """The scripted agent's answer to a chat request with a task marker; None without one."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    first_user = next((m for m in messages if m.get("role") == "user"), None)
    content = first_user.get("content") if first_user else None
    m = EVAL_TASK.search(content) if isinstance(content, str) else None
    if not m:
        return None
    turn = sum(1 for x in messages if x.get("role") == "assistant")
    return script_turn(m.group(1), turn, int(m.group(2)), m.group(3))["text"]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--model", default="sim-model")
    p.add_argument("--name", default="worker", help="named in responses (system_fingerprint)")
    p.add_argument("--prefill-us-per-token", type=float, default=20.0,
                   help="prefill cost of one uncached prompt token, microseconds")
    p.add_argument("--decode-ms-per-token", type=float, default=2.0,
                   help="decode cost of one output token, milliseconds")
    p.add_argument("--output-tokens", type=int, default=8, help="tokens generated (max_tokens caps)")
    p.add_argument("--max-running", type=int, default=32, help="requests decoded at once")
    p.add_argument("--cache-tokens", type=int, default=200_000, help="KV cache capacity in tokens")
    p.add_argument("--block", type=int, default=16, help="KV cache block size in tokens")
    p.add_argument("--shape", choices=SHAPES, default="openai",
                   help="answer shape: token ids as vLLM (return_token_ids) or SGLang "
                        "(return_meta_info) send them; a request's sim_shape overrides")
    return p.parse_args(argv)


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large", 429: "Too Many Requests", 503: "Service Unavailable"}


class Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    async def send(self, status: int, body: bytes, ctype: str = "application/json",
                   extra: list[tuple[str, str]] = ()) -> None:
        head = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}",
                f"Content-Type: {ctype}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in extra]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await self.writer.drain()

    async def send_json(self, status: int, obj, extra=()) -> None:
        await self.send(status, json.dumps(obj).encode(), extra=extra)

    async def begin_chunked(self, ctype: str) -> None:
        self.writer.write((f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\n"
                           "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n").encode())
        await self.writer.drain()

    async def chunk(self, data: bytes) -> None:
        self.writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self.writer.drain()

    async def end_chunked(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()


def error_body(message: str, kind: str, code: int) -> dict:
    return {"error": {"message": message, "type": kind, "code": code}}


async def handle_generate(w: Worker, conn: Conn, path: str, body: dict) -> None:
    args = w.args
    # die_mid_stream is taken after the first chunk, not here.
    fault = w.take_fault() if w.fault_kind != "die_mid_stream" else "none"
    if fault == "die":
        os._exit(3)
    if fault == "5xx":
        await conn.send_json(503, error_body(f"{args.name}: injected failure", "server_error", 503))
        return
    if fault == "429":
        await conn.send_json(429, error_body(f"{args.name}: injected rate limit", "rate_limit", 429),
                             extra=[("Retry-After", str(w.fault_retry_after))])
        return
    if fault == "hang":
        await asyncio.sleep(3600)
        return
    prompt = w.prompt_of(path, body)
    tokens = prompt.split()
    script = scripted_text(body) if path == "/v1/chat/completions" else None
    n_out = len(script.split()) if script is not None else w.output_tokens(body)
    stream = body.get("stream") is True
    async with w.slots:
        w.running += 1
        w.stats["max_running"] = max(w.stats["max_running"], w.running)
        try:
            async with w.prefill_lane:
                cached = w.cache.lookup_and_insert(tokens)
                computed = len(tokens) - cached
                w.stats["requests"] += 1
                w.stats["prompt_tokens"] += len(tokens)
                w.stats["cached_tokens"] += cached
                w.stats["computed_tokens"] += computed
                w.stats["completion_tokens"] += n_out
                await asyncio.sleep(computed * args.prefill_us_per_token / 1e6)
            w.seq += 1
            rid = f"cmpl-{args.name}-{w.seq}"
            usage = {"prompt_tokens": len(tokens), "completion_tokens": n_out,
                     "total_tokens": len(tokens) + n_out,
                     "prompt_tokens_details": {"cached_tokens": cached}}
            if script is not None:
                w.stats["scripted"] += 1
                words = re.findall(r"\s*\S+", script)  # n_out tokens, each with the space before it
            else:
                words = [f"w{i}" if i == 0 else f" w{i}" for i in range(n_out)]
            finish = "stop" if script is not None else "length"
            step = args.decode_ms_per_token / 1e3
            chat = path == "/v1/chat/completions"
            obj = "chat.completion" if chat else "text_completion"
            shape = Shape(args.shape, body, tokens)
            if not stream:
                await asyncio.sleep(step * n_out)
                text = "".join(words)
                choice = ({"index": 0, "message": {"role": "assistant", "content": text},
                           "finish_reason": finish} if chat else
                          {"index": 0, "text": text, "finish_reason": finish})
                top = {"id": rid, "object": obj, "created": w.created, "model": args.model,
                       "system_fingerprint": args.name}
                shape.decorate(top, choice, chat, words, words, True, usage, finish)
                top["choices"] = [choice]
                top["usage"] = usage
                data = json.dumps(top).encode()
                w.remember(rid, data)
                await conn.send(200, data)
                return
            await conn.begin_chunked("text/event-stream")
            obj += ".chunk" if chat else ""
            sent = []
            for i, piece in enumerate(words):
                choice = ({"index": 0, "delta": ({"role": "assistant", "content": piece} if i == 0
                                                 else {"content": piece}), "finish_reason": None}
                          if chat else {"index": 0, "text": piece, "finish_reason": None})
                event = {"id": rid, "object": obj, "created": w.created, "model": args.model,
                         "system_fingerprint": args.name}
                shape.decorate(event, choice, chat, [piece], words[:i + 1], i == 0, usage, None)
                event["choices"] = [choice]
                if i > 0:
                    await asyncio.sleep(step)
                data = b"data: " + json.dumps(event).encode() + b"\n\n"
                sent.append(data)
                await conn.chunk(data)
                if i == 0 and w.take_fault() == "die_mid_stream":
                    os._exit(3)
            last = {"id": rid, "object": obj, "created": w.created, "model": args.model,
                    "system_fingerprint": args.name}
            choice = {"index": 0, ("delta" if chat else "text"): ({} if chat else ""),
                      "finish_reason": finish}
            shape.decorate(last, choice, chat, [], words, not words, usage, finish)
            last["choices"] = [choice]
            last["usage"] = usage
            data = b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n"
            sent.append(data)
            w.remember(rid, b"".join(sent))
            await conn.chunk(data)
            await conn.end_chunked()
        finally:
            w.running -= 1


async def handle(w: Worker, conn: Conn, method: str, path: str, body: bytes) -> None:
    args = w.args
    if method == "GET":
        if path in ("/health", "/health_generate", "/healthz"):
            await conn.send(200, b"", "text/plain")
        elif path == "/v1/models":
            await conn.send_json(200, {"object": "list", "data": [
                {"id": args.model, "object": "model", "created": w.created, "owned_by": "sim"}]})
        elif path == "/model_info":
            await conn.send_json(200, {"model_path": args.model, "tokenizer_path": args.model,
                                       "is_generation": True})
        elif path in ("/server_info", "/get_server_info"):
            await conn.send_json(200, {"model_path": args.model, "tokenizer_path": args.model,
                                       "max_running_requests": args.max_running,
                                       "page_size": args.block, "dp_size": 1, "tp_size": 1,
                                       "version": "sim"})
        elif path.startswith("/sent/"):
            data = w.sent.get(path[len("/sent/"):])
            if data is None:
                await conn.send_json(404, error_body(f"no answer {path[6:]} kept", "not_found", 404))
            else:
                await conn.send(200, data, "application/octet-stream")
        elif path == "/stats":
            await conn.send_json(200, {**w.stats, "running": w.running, "name": args.name,
                                       "cache_blocks": len(w.cache.blocks),
                                       "last_traceparent": w.last_traceparent})
        else:
            await conn.send_json(404, error_body(f"no route {path}", "not_found", 404))
        return
    if method != "POST":
        await conn.send_json(405, error_body(f"{method} not allowed", "invalid_request", 405))
        return
    try:
        doc = json.loads(body) if body else {}
    except ValueError as exc:
        await conn.send_json(400, error_body(f"invalid JSON: {exc}", "invalid_request_error", 400))
        return
    if not isinstance(doc, dict):
        await conn.send_json(400, error_body("the body must be an object", "invalid_request_error", 400))
        return
    if path in ("/v1/chat/completions", "/v1/completions", "/generate"):
        await handle_generate(w, conn, "/v1/completions" if path == "/generate" else path, doc)
    elif path == "/fault":
        w.fault_kind = str(doc.get("kind", "none"))
        w.fault_count = int(doc.get("count", 1))
        w.fault_retry_after = int(doc.get("retry_after", 1))
        await conn.send_json(200, {"kind": w.fault_kind, "count": w.fault_count})
    elif path == "/reset":
        w.cache = KvCache(args.cache_tokens, args.block)
        for k in w.stats:
            w.stats[k] = 0
        await conn.send_json(200, {})
    elif path in ("/flush_cache",):
        w.cache = KvCache(args.cache_tokens, args.block)
        await conn.send(200, b"", "text/plain")
    else:
        await conn.send_json(404, error_body(f"no route {path}", "not_found", 404))


async def serve_connection(w: Worker, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
    conn = Conn(reader, writer)
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                await conn.send_json(400, error_body("bad request line", "invalid_request", 400))
                return
            method, target, _ = parts
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                body = b""
                while True:
                    size_line = await reader.readuntil(b"\r\n")
                    size = int(size_line.split(b";")[0], 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")
                        break
                    if len(body) + size > MAX_BODY_BYTES:
                        await conn.send_json(413, error_body("body too large", "invalid_request", 413))
                        return
                    body += await reader.readexactly(size + 2)
                    body = body[:-2]
            else:
                length = int(headers.get("content-length", "0") or 0)
                if length > MAX_BODY_BYTES:
                    await conn.send_json(413, error_body("body too large", "invalid_request", 413))
                    return
                body = await reader.readexactly(length) if length else b""
            path = target.split("?", 1)[0]
            if "traceparent" in headers:
                w.last_traceparent = headers["traceparent"]
            await handle(w, conn, method, path, body)
            if headers.get("connection", "").lower() == "close":
                return
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        return
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def main_async(args: argparse.Namespace) -> None:
    w = Worker(args)
    server = await asyncio.start_server(lambda r, wr: serve_connection(w, r, wr), args.host,
                                        args.port, limit=MAX_HEADER_BYTES, backlog=1024)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


def main() -> None:
    args = parse_args(sys.argv[1:])
    try:
        asyncio.run(main_async(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
