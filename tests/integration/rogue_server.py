"""A tiny MCP-ish stdio server that misbehaves at the byte level, for hardening tests.

Usage: rogue_server.py MODE [ARG]. Every mode answers like a normal server except for its one
fault. Lines are written as raw bytes so invalid UTF-8 reaches the gateway unchanged.

Modes:
  ok                 a plain server with one tool, `echo`
  init-error-ff      initialize gets an error whose message holds a \\xff byte
  ping-error-ff      ping gets an error whose message holds a \\xff byte
  deep-schema N      the tool's inputSchema is nested N schema levels deep (2 JSON levels each)
  latin1             the tool's description is Latin-1 ("caf\\xe9")
  lone-surrogate     the tool's description ends in half an emoji (JavaScript's "\\ud83d")
  huge-number        the tool's schema has "maximum": 1e999 (past a double)
  deep-result N      tools/call answers with a result nested N JSON levels deep
  ff-result          tools/call answers with a text holding a \\xff byte
  list-changed N     each tools/call first sends N notifications/tools/list_changed
  garbage N          each tools/call first prints N lines that are not JSON-RPC
  stderr N           each tools/call first prints N lines to stderr
  sampling           each tools/call sends a sampling/createMessage request and waits for it
  deaf               stops reading its stdin once it has listed its tools
  bad-schema         the tool's inputSchema has a remote $ref (no JSON Schema library fetches it)
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
ARG = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out = sys.stdout.buffer
list_calls = 0


def send(raw: bytes) -> None:
    out.write(raw + b"\n")
    out.flush()


def reply(req_id, result) -> None:
    send(json.dumps({"jsonrpc": "2.0", "id": req_id, "result": result}).encode())


def deep_schema(levels: int) -> dict:
    schema: dict = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


def tool() -> bytes:
    schema = deep_schema(ARG) if MODE == "deep-schema" else {
        "type": "object", "properties": {"text": {"type": "string"}}}
    if MODE == "huge-number":
        schema["properties"]["n"] = {"type": "number", "maximum": "MAX"}
    if MODE == "bad-schema":
        schema["properties"]["text"] = {"$ref": "http://schemas.invalid/text.json#"}
    desc = "DESC" if MODE in ("latin1", "lone-surrogate") else "Echoes its text."
    raw = json.dumps({"name": "echo", "description": desc, "inputSchema": schema}).encode()
    raw = raw.replace(b"DESC", b"caf\xe9") if MODE == "latin1" else raw
    raw = raw.replace(b"DESC", b"cut \\ud83d") if MODE == "lone-surrogate" else raw
    raw = raw.replace(b'"MAX"', b"1e999") if MODE == "huge-number" else raw
    plain = {"type": "object"}
    others = [{"name": "hang", "description": "Never answers.", "inputSchema": plain},
              {"name": "list_calls", "description": "How many tools/list it got.", "inputSchema": plain}]
    return b",".join([raw] + [json.dumps(t).encode() for t in others])


def note_event(what: str) -> None:
    """With ROGUE_LOG set, appends "WHAT PID" to it: which instance of a pool did what."""
    if os.environ.get("ROGUE_LOG"):
        with open(os.environ["ROGUE_LOG"], "a") as log:
            log.write(f"{what} {os.getpid()}\n")


def on_call(req_id, params) -> None:
    note_event("call")
    time.sleep(float(os.environ.get("ROGUE_CALL_DELAY", "0")))
    if MODE == "list-changed":
        note = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
        out.write(note * ARG)
        out.flush()
    if MODE == "garbage":
        out.write(b"this is not JSON-RPC\n" * ARG)
        out.flush()
    if MODE == "stderr":
        sys.stderr.write("stderr flood line\n" * ARG)
        sys.stderr.flush()
    if MODE == "sampling":
        send(json.dumps({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage",
                         "params": {"messages": [], "maxTokens": 1}}).encode())
        return  # the call is answered when the sampling reply arrives
    if MODE == "deep-result":
        send(b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() + b',"result":' +
             b"[" * ARG + b"]" * ARG + b"}")
        return
    if MODE == "ff-result":
        send(b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() +
             b',"result":{"content":[{"type":"text","text":"bad \xff byte"}]}}')
        return
    text = (params.get("arguments") or {}).get("text", "")
    reply(req_id, {"content": [{"type": "text", "text": str(text)}]})


pending_call = None


def main() -> None:
    global pending_call, list_calls
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, req_id = msg.get("method"), msg.get("id")
        if method is None:  # a response (to our sampling request)
            if pending_call is not None:
                reply(pending_call, {"content": [{"type": "text", "text": json.dumps(msg)}]})
                pending_call = None
            continue
        if req_id is None:
            continue
        if method == "initialize":
            if MODE == "init-error-ff":
                send(b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() +
                     b',"error":{"code":-32000,"message":"no \xff way"}}')
                continue
            reply(req_id, {"protocolVersion": msg["params"]["protocolVersion"],
                           "capabilities": {"tools": {"listChanged": True}},
                           "serverInfo": {"name": "rogue", "version": "1"}})
        elif method == "tools/list":
            list_calls += 1
            note_event("list")
            send(b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() + b',"result":{"tools":[' +
                 tool() + b"]}}")
            if MODE == "deaf":
                time.sleep(3600)
        elif method == "ping":
            if MODE == "ping-error-ff":
                send(b'{"jsonrpc":"2.0","id":' + json.dumps(req_id).encode() +
                     b',"error":{"code":-32000,"message":"ping \xff broke"}}')
            else:
                reply(req_id, {})
        elif method == "tools/call":
            if MODE == "sampling":
                pending_call = req_id
            if (msg.get("params") or {}).get("name") == "hang":
                continue
            if (msg.get("params") or {}).get("name") == "list_calls":
                reply(req_id, {"content": [{"type": "text", "text": str(list_calls)}]})
                continue
            on_call(req_id, msg.get("params") or {})
        else:
            send(json.dumps({"jsonrpc": "2.0", "id": req_id,
                             "error": {"code": -32601, "message": "no " + method}}).encode())


if __name__ == "__main__":
    main()
