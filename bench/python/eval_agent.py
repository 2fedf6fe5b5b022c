"""The agent loop of the `eval` bench, in the two forms users run it: a model turn (OpenAI chat
request: shared system prompt + task + the growing history), then the tool calls the model's text
contains, then the next turn, until the model gives its final answer (`\\boxed{...}`, as the
graders of these benchmarks read it) or `max_turns` is reached. Both loops end on that same rule,
so a turn whose calls a reader dropped does not end the task early: the two stacks make the same
model turns per task, and the model (deterministic per task and turn) writes the same text.

- `toolbridge_task`: model calls through the gateway's OpenAI-compatible router, the turn's text
  sent to `POST /v1/parse` with `execute: true` (toolbridge.AsyncClient.parse_and_execute): one
  round trip parses, repairs, caches, admits and runs the turn's calls.
- `today_task`: what the frameworks do today: model calls to a router (sglang-router) or straight
  to the workers, calls read from the text with regular expressions (parse_reference.py), each
  call a fresh stdio server through the official MCP SDK (`stdio_client` + `initialize` + call +
  exit), the task's servers listed first (in parallel), no backpressure.

Both keep the conversation the same way, so the model (the simulated workers' scripted agent)
sees the same turns. Run by eval_bench.py: a JSON spec on stdin, one JSON object on stdout with
a record per task. Copy `toolbridge_task` for your own loop.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))

from eval_tools import INT_PARAMS, TOOLS, as_int  # noqa: E402

MODEL = "sim-model"


def system_prompt(words: int) -> str:
    """A shared system prompt of `words` tokens (the workers count whitespace-separated words)."""
    rng = random.Random("eval-system-prompt")
    tools = " ".join(f"{server}__{name}: {desc}" for server, (name, desc, _) in TOOLS.items())
    vocab = "you are a careful research agent use the tools cite sources verify every claim".split()
    filler = " ".join(rng.choice(vocab) for _ in range(max(0, words - len(tools.split()))))
    return f"{tools}\n{filler}"


def task_message(task: dict) -> str:
    return (f"[eval-task id={task['id']} turns={task['turns']} format={task['format']}] "
            f"Question {task['id']}: find the figure the sources agree on and give it as a number.")


FINAL_ANSWER = re.compile(r"\\boxed\{")


def is_final(text: str) -> bool:
    """The model's final answer: the task ends here, in either stack. Not "no call found": a
    reader that drops a call it cannot read would otherwise end the task early, and the two
    stacks would do different work (the runs of 2026-11-27 ended 33 of 128 tasks early)."""
    return bool(FINAL_ANSWER.search(text))


NO_CALL_READ = ("No tool call could be read from your reply. Call a tool, or give your final answer "
                "as \\boxed{...}.")


def canonical(name: str, args: dict) -> str:
    """A call's identity for the per-task comparison: resolved name and its arguments as the
    server reads them (integers written as strings are integers; nulls dropped)."""
    out = {}
    for k, v in (args or {}).items():
        if v is None:
            continue
        if k in INT_PARAMS:
            try:
                v = as_int(v, k)
            except ValueError:
                pass
        out[k] = v
    return json.dumps([name, out], sort_keys=True)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def results_message(entries: list[tuple[str, str]]) -> dict:
    """One user message with the turn's tool results, as MiroFlow appends them."""
    return {"role": "user", "content": "\n\n".join(f"Result of {name}:\n{text}" for name, text in entries)}


class Record:
    """What one task did: per turn, the calls executed and the errors the model was told."""

    def __init__(self, task: dict):
        self.task = task
        self.turns: list[dict] = []
        self.error = ""
        self.start = self.end = 0.0
        self.model_s = 0.0
        self.tool_s = 0.0

    def as_json(self) -> dict:
        return {"id": self.task["id"], "turns": self.turns, "error": self.error,
                "seconds": self.end - self.start, "model_s": self.model_s, "tool_s": self.tool_s}


async def model_turn(llm, messages: list[dict], record: Record, headers: dict | None = None) -> str:
    t0 = time.perf_counter()
    resp = await llm.chat.completions.create(model=MODEL, messages=messages, extra_headers=headers)
    record.model_s += time.perf_counter() - t0
    return resp.choices[0].message.content or ""


# ---- toolbridge ----

EXECUTED = {"ok", "tool_error", "timeout", "server_error", "crashed"}  # outcomes that reached a server


async def toolbridge_task(rec: Record, llm, tb, ctx: dict) -> None:
    """One task through toolbridge: the whole tool side of a turn is one parse_and_execute."""
    task = rec.task
    trajectory = f"eval-{task['id']}"
    messages = [{"role": "system", "content": ctx["system"]}, {"role": "user", "content": task_message(task)}]
    headers = {"X-Toolbridge-Trajectory": trajectory}  # the router keeps a trajectory on one worker
    if tb.tenant:
        headers["X-Toolbridge-Tenant"] = tb.tenant  # the run, as the tool calls name it
    await tb.tools()  # the catalog, as an agent shows it to its model (cached by the client)
    for _ in range(ctx["max_turns"]):
        text = await model_turn(llm, messages, rec, headers)
        messages.append({"role": "assistant", "content": text})
        t0 = time.perf_counter()
        r = await tb.parse_and_execute(text, task["format"], trajectory=trajectory)
        rec.tool_s += time.perf_counter() - t0
        turn = {"model": digest(text), "executed": [], "reported": 0, "errors": {}}
        entries = []
        for c in r.calls:
            res = c.result
            outcome = res.outcome if res is not None else "not_run"
            if outcome in EXECUTED:
                turn["executed"].append({"key": canonical(c.name, c.arguments), "outcome": outcome,
                                         "text": digest(res.text), "repaired": bool(c.repairs)})
            else:
                turn["reported"] += 1
            if outcome != "ok":
                turn["errors"][outcome] = turn["errors"].get(outcome, 0) + 1
                turn.setdefault("error_texts", []).append((res.text if res is not None else str(c.problem))[:200])
            entries.append((c.name, res.text if res is not None else f"not run: {c.problem}"))
        for u in r.unparsed:  # never run, never dropped: the model is told why
            turn["reported"] += 1
            turn["errors"]["unparsed"] = turn["errors"].get("unparsed", 0) + 1
            entries.append(("(unparsed call)", f"Error: this call could not be read ({u.reason}): {u.text[:200]}"))
        rec.turns.append(turn)
        if is_final(text):
            break
        messages.append(results_message(entries) if entries else {"role": "user", "content": NO_CALL_READ})
    try:
        await tb.release(trajectory)
    except Exception:  # noqa: BLE001 - nothing bound to it: nothing to release
        pass


# ---- today's stack ----

async def spawn_call(ctx: dict, server: str, tool: str, args: dict, deadline_s: float | None):
    """spawn + initialize + call + exit through the official SDK; returns the CallToolResult."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=ctx["tool_command"][0],
                                   args=[*ctx["tool_command"][1:], "--kind", server])
    ctx["spawned"] += 1
    async with stdio_client(params, errlog=ctx["devnull"]) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            if tool == "":
                return await session.list_tools()
            if deadline_s is None:
                return await session.call_tool(tool, args)
            return await asyncio.wait_for(session.call_tool(tool, args), deadline_s)


def result_text(result) -> tuple[str, bool]:
    is_error = getattr(result, "is_error", None)
    if is_error is None:
        is_error = result.isError
    return "\n".join(getattr(c, "text", "") for c in result.content), bool(is_error)


async def today_task(rec: Record, llm, ctx: dict) -> None:
    from parse_reference import Parser

    task = rec.task
    # The task's servers are listed first, all three at once (get_all_tool_definitions).
    listed = await asyncio.gather(*(spawn_call(ctx, s, "", {}, None) for s in TOOLS))
    known = {f"{s}__{t.name}": (s, t.name) for s, lst in zip(TOOLS, listed) for t in lst.tools}
    parser = Parser({"server": "search", "tools": [{"name": n, "inputSchema": sch} for n, _, sch in TOOLS.values()]})
    messages = [{"role": "system", "content": ctx["system"]}, {"role": "user", "content": task_message(task)}]
    for _ in range(ctx["max_turns"]):
        text = await model_turn(llm, messages, rec)
        messages.append({"role": "assistant", "content": text})
        calls = parser.parse(task["format"], text)
        turn = {"model": digest(text), "executed": [], "reported": 0, "errors": {}}

        async def run(name: str, args: dict) -> tuple[str, str]:
            if name not in known:
                turn["reported"] += 1
                turn["errors"]["not_found"] = turn["errors"].get("not_found", 0) + 1
                return name, f"Error: tool '{name}' not found; available: {', '.join(sorted(known))}"
            server, tool = known[name]
            try:
                result = await spawn_call(ctx, server, tool, args, ctx["deadlines"][server])
                text, is_error = result_text(result)
                outcome = "tool_error" if is_error else "ok"
            except Exception as e:  # noqa: BLE001 - a timeout, spawn or protocol failure, told to the model
                while isinstance(e, BaseExceptionGroup) and e.exceptions:  # anyio wraps the cause
                    e = e.exceptions[0]
                if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
                    text, outcome = f"Error: {name} timed out after {ctx['deadlines'][server]:.3g} s", "timeout"
                else:
                    text, outcome = f"Error: {type(e).__name__}: {e}"[:300], "exception"
            turn["executed"].append({"key": canonical(name, args), "outcome": outcome, "text": digest(text),
                                     "repaired": False})
            if outcome != "ok":
                turn["errors"][outcome] = turn["errors"].get(outcome, 0) + 1
                turn.setdefault("error_texts", []).append(text[:200])
            return name, text

        t0 = time.perf_counter()
        entries = await asyncio.gather(*(run(n, a) for n, a in calls))
        rec.tool_s += time.perf_counter() - t0
        rec.turns.append(turn)
        if is_final(text):
            break
        # A turn whose calls the regex reader dropped: the model is not told which (they are lost),
        # only that nothing was read, and the task goes on.
        messages.append(results_message(list(entries)) if entries else {"role": "user", "content": NO_CALL_READ})


# ---- the driver's entry ----

class RoundRobin:
    """Model calls spread over the workers in turn, as a client without a router does."""

    def __init__(self, clients: list):
        self.clients = clients
        self.next = 0
        self.chat = self
        self.completions = self

    async def create(self, **kw):
        c = self.clients[self.next % len(self.clients)]
        self.next += 1
        return await c.chat.completions.create(**kw)


async def run(spec: dict) -> dict:
    from openai import AsyncOpenAI

    ctx = {"system": system_prompt(spec["system_words"]), "max_turns": spec["max_turns"],
           "tool_command": spec.get("tool_command", []), "deadlines": spec.get("deadlines", {}),
           "spawned": 0, "devnull": open("/dev/null", "w")}
    urls = spec["llm_urls"]  # one: a router; several: round robin over them by the client
    clients = [AsyncOpenAI(base_url=u, api_key="sim", max_retries=spec.get("llm_retries", 2),
                           timeout=spec.get("llm_timeout_s", 600)) for u in urls]
    llm = clients[0] if len(clients) == 1 else RoundRobin(clients)
    gate = asyncio.Semaphore(spec["concurrency"])
    tb = None
    if spec["stack"] == "toolbridge":
        import toolbridge
        tb = toolbridge.AsyncClient(spec["gateway_url"], tenant=spec.get("tenant"))

    async def one(task: dict) -> Record:
        async with gate:
            rec = Record(task)
            rec.start = time.perf_counter()
            try:
                if tb is not None:
                    await toolbridge_task(rec, llm, tb, ctx)
                else:
                    await today_task(rec, llm, ctx)
            except Exception as e:  # noqa: BLE001 - a failed task is reported, the others go on
                while isinstance(e, BaseExceptionGroup) and e.exceptions:
                    e = e.exceptions[0]
                rec.error = f"{type(e).__name__}: {e}"[:500]
            rec.end = time.perf_counter()
            return rec

    t_start = time.perf_counter()
    t_start_mono = time.monotonic()  # one clock across processes: the driver may run several
    cpu0 = time.process_time()
    records = await asyncio.gather(*(one(t) for t in spec["tasks"]))
    makespan = time.perf_counter() - t_start
    t_end_mono = time.monotonic()
    cpu = time.process_time() - cpu0
    if tb is not None:
        await tb.close()
    for c in clients:
        await c.close()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"makespan_s": makespan, "t_start": t_start_mono, "t_end": t_end_mono, "agent_cpu_s": cpu,
            "children_cpu_s": children.ru_utime + children.ru_stime, "spawned": ctx["spawned"],
            "tasks": [r.as_json() for r in records]}


def main() -> None:
    spec = json.load(sys.stdin)
    out = asyncio.run(run(spec))
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
