"""The reference the `parse` bench scenario compares /v1/parse with: the tool-call grammars of
src/parse/format.h parsed the way agent frameworks do it today, in Python with regular
expressions (after vLLM's and SGLang's tool parsers and MiroFlow's use_mcp_tool reader):
reasoning split off, then a regex per format, json.loads, qwen3_coder values converted by the
tool's schema. Not part of the product.

    python parse_reference.py CORPUS TOOLS [--repeat N]

prints one JSON object: cases, exact (calls extracted exactly as expected), per-kind exact
counts, and the CPU time per turn (process time, best of the repeats)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import Any

THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
HERMES = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*)", re.DOTALL)
QWEN_CALL = re.compile(r"<tool_call>(.*?)</tool_call>|<tool_call>(.*?)$", re.DOTALL)
QWEN_FUNCTION = re.compile(r"<function=(.*?)</function>|<function=(.*)$", re.DOTALL)
QWEN_PARAM = re.compile(r"<parameter=(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|$)", re.DOTALL)
MISTRAL_V11 = re.compile(r"\[TOOL_CALLS\]([a-zA-Z0-9_.-]+)(?:\[ARGS\])?(\{.*?\})(?=\[TOOL_CALLS\]|$)", re.DOTALL)
DS_V3 = re.compile(r"<｜tool▁call▁begin｜>(?P<type>.*?)<｜tool▁sep｜>(?P<name>.*?)\n```json\n(?P<args>.*?)\n```<｜tool▁call▁end｜>",
                   re.DOTALL)
DS_V31 = re.compile(r"<｜tool▁call▁begin｜>(?P<name>.*?)<｜tool▁sep｜>(?P<args>.*?)<｜tool▁call▁end｜>", re.DOTALL)
MCP = re.compile(r"<use_mcp_tool>\s*<server_name>(.*?)</server_name>\s*<tool_name>(.*?)</tool_name>\s*"
                 r"<arguments>\s*([\s\S]*?)\s*</arguments>\s*</use_mcp_tool>", re.DOTALL)


def _args(value: Any) -> dict:
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        raise ValueError("arguments are not an object")
    return value


class Parser:
    """Built once per tool list (a framework that rebuilds it per turn pays that too)."""

    def __init__(self, tools: dict) -> None:
        self.server = tools["server"]
        self.types = {f"{self.server}__{t['name']}": {k: v.get("type") for k, v in
                                                     t["inputSchema"].get("properties", {}).items()}
                      for t in tools["tools"]}

    def parse(self, fmt: str, text: str) -> list[tuple[str, dict]]:
        text = THINK.sub("", text)
        return getattr(self, fmt)(text)

    def hermes(self, text: str) -> list[tuple[str, dict]]:
        out = []
        for closed, open_end in HERMES.findall(text):
            try:
                obj = json.loads((closed or open_end).strip())
                out.append((obj["name"], _args(obj.get("arguments", obj.get("parameters", {})))))
            except (ValueError, KeyError, TypeError):
                continue  # frameworks log and skip
        return out

    def _convert(self, tool: str, param: str, value: str) -> Any:
        kind = self.types.get(tool, {}).get(param)
        if value.lower() == "null":
            return None
        try:
            if kind == "integer":
                return int(value)
            if kind == "number":
                f = float(value)
                return int(f) if f.is_integer() and "." not in value and "e" not in value.lower() else f
            if kind == "boolean":
                return value.lower() == "true"
            if kind in ("object", "array"):
                return json.loads(value)
        except ValueError:
            pass
        return value

    def qwen3_coder(self, text: str) -> list[tuple[str, dict]]:
        out = []
        for closed, open_end in QWEN_CALL.findall(text):
            body = closed or open_end
            for fclosed, fopen in QWEN_FUNCTION.findall(body):
                fn = fclosed or fopen
                name, _, rest = fn.partition(">")
                args = {}
                for p in QWEN_PARAM.findall(rest):
                    key, _, value = p.partition(">")
                    value = value[1:] if value.startswith("\n") else value
                    value = value[:-1] if value.endswith("\n") else value
                    args[key.strip()] = self._convert(name.strip(), key.strip(), value)
                out.append((name.strip(), args))
        return out

    def llama3_json(self, text: str) -> list[tuple[str, dict]]:
        text = text.strip()
        if text.startswith("<|python_tag|>"):
            text = text[len("<|python_tag|>"):]
        elif not text.startswith("{"):
            return []
        out = []
        for part in re.split(r"\}\s*;\s*\{", text):
            part = part.strip()
            part = part if part.startswith("{") else "{" + part
            part = part if part.endswith("}") else part + "}"
            try:
                obj = json.loads(part)
                out.append((obj["name"], _args(obj.get("arguments", obj.get("parameters", {})))))
            except (ValueError, KeyError, TypeError):
                continue
        return out

    def mistral(self, text: str) -> list[tuple[str, dict]]:
        if "[TOOL_CALLS]" not in text:
            return []
        rest = text.split("[TOOL_CALLS]", 1)[1].strip()
        out = []
        if rest.startswith("["):
            try:
                for obj in json.loads(rest):
                    out.append((obj["name"], _args(obj.get("arguments", {}))))
            except (ValueError, KeyError, TypeError):
                return []
            return out
        for name, args in MISTRAL_V11.findall(text):
            try:
                out.append((name, _args(args)))
            except ValueError:
                continue
        return out

    def _deepseek(self, pattern: re.Pattern, text: str) -> list[tuple[str, dict]]:
        out = []
        for m in pattern.finditer(text):
            try:
                out.append((m.group("name").strip(), _args(m.group("args"))))
            except ValueError:
                continue
        return out

    def deepseek_v3(self, text: str) -> list[tuple[str, dict]]:
        return self._deepseek(DS_V3, text)

    def deepseek_v31(self, text: str) -> list[tuple[str, dict]]:
        return self._deepseek(DS_V31, text)

    def use_mcp_tool(self, text: str) -> list[tuple[str, dict]]:
        out = []
        for server, tool, args in MCP.findall(text):
            try:
                a = {k: v for k, v in _args(args).items() if v is not None}
            except ValueError:
                continue
            out.append((f"{server.strip()}__{tool.strip()}", a))
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("tools")
    ap.add_argument("--repeat", type=int, default=5)
    opts = ap.parse_args()
    cases = [json.loads(line) for line in open(opts.corpus, encoding="utf-8") if line.strip()]
    tools = json.load(open(opts.tools, encoding="utf-8"))
    exact, by_kind, best = 0, {}, float("inf")
    for _ in range(max(1, opts.repeat)):
        started = time.process_time()
        parser = Parser(tools)
        results = [parser.parse(c["format"], c["text"]) for c in cases]
        best = min(best, time.process_time() - started)
    for c, got in zip(cases, results):
        want = [(w["name"], w["arguments"]) for w in c["calls"]]
        ok = got == want
        exact += ok
        k = by_kind.setdefault(c["kind"], [0, 0])
        k[0] += ok
        k[1] += 1
    json.dump({"cases": len(cases), "exact": exact, "by_kind": by_kind,
               "cpu_us_per_turn": best / len(cases) * 1e6}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
