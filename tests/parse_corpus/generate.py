"""Writes corpus.jsonl: model outputs in every format /v1/parse reads, each with the calls it
holds (names as the gateway resolves them, arguments as it runs them) and how many calls in it
cannot be read. Kinds: well_formed, multi_call, reasoning, malformed (repairable and not),
truncated (cut off by max_tokens inside the last call), fenced (calls in a code fence: not
calls) and mention (text naming a tag). Written by rule from the fixture server's tools
(tools.json), deterministic (seeded): `python3 tests/parse_corpus/generate.py`."""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = json.loads((HERE / "tools.json").read_text())
SERVER = TOOLS["server"]
FORMATS = ["hermes", "qwen3_coder", "llama3_json", "mistral", "deepseek_v3", "deepseek_v31", "use_mcp_tool"]
WORDS = ["weather", "Paris", "latest news", "rust async", "GAIA level 3", "née café", "a \"quoted\" word",
         "line one\nline two", "braces { and } inside", "</tool_call> in a string"]
PROSE = ["Let me look that up.", "I'll check two things.", "", "Sure — calling the tool now.",
         "First I need the data.\n", "OK."]
DS_CALLS_BEGIN, DS_CALLS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
DS_CALL_BEGIN, DS_CALL_END, DS_SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def args_for(tool: str, rng: random.Random) -> dict:
    w = rng.choice(WORDS)
    if tool == "echo":
        return {"text": w}
    if tool == "add":
        return {"a": rng.randint(-50, 500), "b": rng.choice([1, 2.5, 1000, -3])}
    if tool == "search":
        a = {"query": w}
        if rng.random() < 0.6:
            a["limit"] = rng.randint(1, 50)
        if rng.random() < 0.4:
            a["mode"] = rng.choice(["web", "news"])
        if rng.random() < 0.3:
            a["tags"] = rng.sample(["x", "y", "z"], 2)
        if rng.random() < 0.3:
            a["exact"] = rng.random() < 0.5
        return a
    if tool == "run_code":
        a = {"code_block": rng.choice(["print(1)", "import os\nprint(os.getcwd())", "x = {'a': 1}"]),
             "language": rng.choice(["python", "bash"])}
        if rng.random() < 0.5:
            a["timeout_s"] = rng.choice([5, 30, 2.5])
        return a
    return {"query": w, "delay_ms": rng.randint(0, 10)}


def qwen_value(v) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    return json.dumps(v)


def render(fmt: str, calls: list[tuple[str, dict]], rng: random.Random) -> str:
    exposed = lambda t: f"{SERVER}__{t}"  # noqa: E731
    if fmt == "hermes":
        return "\n".join("<tool_call>\n" + json.dumps({"name": exposed(t), "arguments": a}) + "\n</tool_call>"
                         for t, a in calls)
    if fmt == "qwen3_coder":
        out = []
        for t, a in calls:
            params = "".join(f"<parameter={k}>\n{qwen_value(v)}\n</parameter>\n" for k, v in a.items())
            out.append(f"<tool_call>\n<function={exposed(t)}>\n{params}</function>\n</tool_call>")
        return "\n".join(out)
    if fmt == "llama3_json":
        key = rng.choice(["parameters", "arguments"])
        return "<|python_tag|>" + "; ".join(json.dumps({"name": exposed(t), key: a}) for t, a in calls)
    if fmt == "mistral":
        if rng.random() < 0.5:
            return "[TOOL_CALLS] " + json.dumps([{"name": exposed(t), "arguments": a} for t, a in calls])
        return "".join(f"[TOOL_CALLS]{exposed(t)}{json.dumps(a)}" for t, a in calls)
    if fmt == "deepseek_v3":
        body = "\n".join(f"{DS_CALL_BEGIN}function{DS_SEP}{exposed(t)}\n```json\n{json.dumps(a)}\n```{DS_CALL_END}"
                         for t, a in calls)
        return DS_CALLS_BEGIN + body + DS_CALLS_END
    if fmt == "deepseek_v31":
        body = "".join(f"{DS_CALL_BEGIN}{exposed(t)}{DS_SEP}{json.dumps(a)}{DS_CALL_END}" for t, a in calls)
        return DS_CALLS_BEGIN + body + DS_CALLS_END
    assert fmt == "use_mcp_tool"
    return "\n".join(f"<use_mcp_tool>\n<server_name>{SERVER}</server_name>\n<tool_name>{t}</tool_name>\n"
                     f"<arguments>\n{json.dumps(a)}\n</arguments>\n</use_mcp_tool>" for t, a in calls)


MENTIONS = {"hermes": "The <tool_call> tag wraps a call.", "qwen3_coder": "I could write <tool_call> and a function.",
            "llama3_json": "The <|python_tag|> token starts code.", "mistral": "The [TOOL_CALLS] token is special.",
            "deepseek_v3": f"The {DS_CALLS_BEGIN} token opens calls.", "deepseek_v31": f"The {DS_CALLS_BEGIN} token.",
            "use_mcp_tool": "I call tools with a <use_mcp_tool> block."}


def expected(calls: list[tuple[str, dict]]) -> list[dict]:
    return [{"name": f"{SERVER}__{t}", "arguments": a} for t, a in calls]


def pick_calls(rng: random.Random, n: int) -> list[tuple[str, dict]]:
    tools = [t["name"] for t in TOOLS["tools"]]
    return [(t, args_for(t, rng)) for t in (rng.choice(tools) for _ in range(n))]


def truncate(fmt: str, text: str, calls: list[tuple[str, dict]]) -> str | None:
    """Cut inside a string value of the last call's arguments (max_tokens)."""
    last_args = calls[-1][1]
    strings = [v for v in last_args.values() if isinstance(v, str) and len(v) >= 4]
    if not strings:
        return None
    v = strings[0]
    rendered = v if fmt == "qwen3_coder" else json.dumps(v)[1:-1]
    at = text.rfind(rendered)
    return text[: at + len(rendered) // 2] if at > 0 else None


def case(fmt: str, kind: str, rng: random.Random) -> dict | None:
    prose = rng.choice(PROSE)
    n = 1 if kind in ("well_formed", "reasoning", "malformed", "fenced", "mention") else rng.randint(2, 3)
    calls = pick_calls(rng, n)
    unparsed = 0
    want = expected(calls)
    text = render(fmt, calls, rng)
    fresh_ok = fmt != "llama3_json"
    if kind == "reasoning":
        text = f"<think>\nThe user wants {rng.choice(WORDS)}. I should call a tool.\n</think>\n" + text
    elif kind in ("well_formed", "multi_call") and fresh_ok and prose:
        text = prose + "\n" + text
    elif kind == "truncated":
        calls = pick_calls(rng, rng.randint(1, 3))
        full = render(fmt, calls, rng)
        cut = truncate(fmt, full, calls)
        if cut is None:
            return None
        text, want, unparsed = cut, expected(calls[:-1]), 1
    elif kind == "malformed":
        if rng.random() < 0.5 and fmt in ("hermes", "llama3_json", "mistral", "use_mcp_tool"):
            # Repairable: a trailing comma before the arguments' closing brace.
            body = json.dumps(calls[0][1])
            text = text.replace(body, body[:-1] + ",}", 1) if body != "{}" else text
        else:
            # Unreadable: the tool's name is missing (or the separator, for deepseek).
            if fmt in ("hermes", "llama3_json", "mistral"):
                text = text.replace(f'"name": "{SERVER}__', '"nam": "', 1).replace(f"[TOOL_CALLS]{SERVER}__", "[TOOL_CALLS][{", 1)
            elif fmt == "qwen3_coder":
                text = text.replace(f"<function={SERVER}__{calls[0][0]}>", "<function=>", 1)
            elif fmt.startswith("deepseek"):
                text = text.replace(DS_SEP, "", 1)
            else:
                text = text.replace(f"<server_name>{SERVER}</server_name>", "", 1)
            want, unparsed = [], 1
    elif kind == "fenced":
        real = pick_calls(rng, 1)
        lead = "" if fmt == "llama3_json" else "For example:\n"
        text = lead + "```\n" + text + "\n```\n"
        if fmt != "llama3_json":
            text += "Now for real:\n" + render(fmt, real, rng)
            want = expected(real)
        else:
            want = []
    elif kind == "mention":
        text = MENTIONS[fmt] + " " + rng.choice(["Nothing to call.", "The answer is 42.", "Done."])
        want = []
    return {"format": fmt, "kind": kind, "text": text, "calls": want, "unparsed": unparsed}


def main() -> None:
    rng = random.Random(17)
    kinds = ["well_formed", "multi_call", "reasoning", "malformed", "truncated", "fenced", "mention"]
    out = []
    for fmt in FORMATS:
        for kind in kinds:
            made = 0
            while made < 7:
                c = case(fmt, kind, rng)
                if c is None:
                    continue
                c["id"] = f"{fmt}-{kind}-{made}"
                out.append(c)
                made += 1
    with open(HERE / "corpus.jsonl", "w") as f:
        for c in out:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    print(f"{len(out)} cases")


if __name__ == "__main__":
    main()
