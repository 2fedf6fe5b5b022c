#!/usr/bin/env python3
"""Writes cases.jsonl: malformed tool calls of the kinds models make, each with the outcome that
is right for it, over the real tool schemas in schemas.json (listed by the reference servers
everything, filesystem, memory and time, plus the fixture's search and run_code).

Every case starts from a valid call built from the schema and applies one mistake. The expected
outcome is decided by what the model meant, not by what the gateway does: a mistake with one
reading must come back as the valid call ("arguments"), a mistake that loses information must be
refused with an error naming the parameter ("error"). Deterministic: run it again to regenerate.

    python3 tests/repair_corpus/generate.py
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent

STRINGS = {
    "path": "/tmp/notes.txt", "source": "/tmp/a.txt", "destination": "/tmp/b.txt",
    "pattern": "*.md", "content": "hello", "query": "graph databases", "timezone": "Europe/London",
    "source_timezone": "Europe/London", "target_timezone": "Asia/Tokyo", "time": "14:30",
    "message": "hi there", "prompt": "Say hi", "topic": "solar power", "code_block": "print(1)",
    "name": "Alice", "entityType": "person", "from": "Alice", "to": "Bob",
    "relationType": "knows", "entityName": "Alice", "oldText": "a", "newText": "b",
}


def value_for(name: str, schema: dict):
    if "enum" in schema:
        return schema["enum"][0]
    t = schema.get("type")
    if t == "string":
        return STRINGS.get(name, f"{name} value")
    if t == "integer":
        return 3
    if t == "number":
        return 2
    if t == "boolean":
        return True
    if t == "array":
        items = schema.get("items", {})
        if items.get("type") == "object":
            return [object_for(items)]
        return [value_for(name.rstrip("s"), items), "second"] if items.get("type") == "string" \
            else [value_for(name, items)]
    if t == "object":
        return object_for(schema) if schema.get("properties") else {}
    return f"{name} value"


def object_for(schema: dict, optional: int = 0) -> dict:
    props = schema.get("properties", {})
    required = schema.get("required", [])
    out = {n: value_for(n, props[n]) for n in props if n in required}
    for n in props:
        if optional <= 0:
            break
        if n not in out and "default" not in props[n]:
            out[n] = value_for(n, props[n])
            optional -= 1
    return out


def python_repr(v) -> str:
    """How a model writes a dict in Python: single quotes, True/False/None, a trailing comma."""
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, list):
        return "[" + ", ".join(python_repr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + "".join(f"{python_repr(k)}: {python_repr(x)}, " for k, x in v.items()) + "}"
    return json.dumps(v)


def camel(name: str) -> str:
    parts = name.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def drop_char(name: str) -> str:
    i = len(name) // 2
    return name[:i] + name[i + 1:]


def cases_for(tool: str, schema: dict, all_tools: dict) -> list[dict]:
    server, original = tool.split("__", 1)
    props = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties") is False
    valid = object_for(schema, optional=1)
    out: list[dict] = []

    def case(kind, arguments, expect_args=None, error=None, name=tool, expect_tool=tool):
        c = {"kind": kind, "tool": name, "arguments": arguments, "expect_tool": expect_tool}
        if error is not None:
            c["error"] = error
        else:
            c["expect"] = valid if expect_args is None else expect_args
        out.append(c)

    case("valid", valid)
    # Tool names. Another tool with the same bare name makes the bare name ambiguous.
    twins = [t for t in all_tools if t != tool and t.split("__", 1)[1] == original]
    if twins:
        case("name_no_prefix", valid, name=original, error=[tool] + twins)
    else:
        case("name_no_prefix", valid, name=original)
    case("name_separator", valid, name=f"{server}-{original}")
    case("name_separator_dot", valid, name=f"{server}.{original.replace('_', '-')}")
    case("name_case", valid, name=f"{server.capitalize()}__{original[:1].upper()}{original[1:]}")
    if len(original) >= 8:
        case("name_typo", valid, name=f"{server}__{drop_char(original)}")

    # Whole-argument shapes.
    case("arguments_json_string", json.dumps(valid))
    case("arguments_python", python_repr(valid))
    case("arguments_fenced", "```json\n" + json.dumps(valid, indent=2) + "\n```")
    text = json.dumps(valid)
    case("arguments_cut_after_value", text[:-1])
    last_string = [m for m in re.finditer(r'"([^"\\]{4,})"', text)]
    if last_string and last_string[-1].end() >= len(text) - 3:
        m = last_string[-1]
        cut = text[:m.start() + 1 + len(m.group(1)) // 2]
        key = [k for k, v in valid.items() if isinstance(v, str) and v == m.group(1)]
        case("arguments_cut_in_string", cut, error=[key[0] if key else "arguments"])
    case("arguments_comment", text[:1] + " // the call\n" + text[1:])

    # Parameter names.
    names = list(valid)
    if names:
        p = names[0]
        moved = dict(valid)
        v = moved.pop(p)
        if p[:1].upper() + p[1:] != p:
            case("param_case", {p[:1].upper() + p[1:]: v, **moved})
        alt = camel(p) if "_" in p else snake(p)
        if alt != p:
            case("param_style", {alt: v, **moved})
        if len(p) >= 5:
            case("param_typo", {drop_char(p): v, **moved})
    # Values.
    for p, s in props.items():
        t = s.get("type")
        if p not in valid:
            continue
        if t in ("integer", "number") and "enum" not in s:
            case("number_as_string", {**valid, p: str(valid[p])})
        if t == "boolean":
            case("boolean_as_string", {**valid, p: "true" if valid[p] else "false"})
        if t == "array" and s.get("items", {}).get("type") == "string":
            case("scalar_for_array", {**valid, p: valid[p][0]}, expect_args={**valid, p: valid[p][:1]})
            case("array_as_json_string", {**valid, p: json.dumps(valid[p])})
        if t == "array" and s.get("items", {}).get("type") == "object":
            case("array_as_json_string", {**valid, p: json.dumps(valid[p])})
            # Inside the objects of the array: a field in another naming style, a scalar for
            # an array of strings.
            item, fields = valid[p][0], s["items"].get("properties", {})
            for k, v in item.items():
                alt = camel(k) if "_" in k else snake(k)
                if alt != k:
                    moved = {(alt if key == k else key): x for key, x in item.items()}
                    case("nested_param_style", {**valid, p: [moved]})
                    break
            for k, v in item.items():
                if fields.get(k, {}).get("type") == "array" and isinstance(v, list) and v:
                    case("nested_scalar_for_array", {**valid, p: [{**item, k: v[0]}]},
                         expect_args={**valid, p: [{**item, k: v[:1]}]})
                    break
        if "enum" in s and all(isinstance(e, str) for e in s["enum"]):
            shouted = valid[p].upper()
            if shouted not in s["enum"]:
                case("enum_case", {**valid, p: shouted})
            case("number_for_string_enum", {**valid, p: 1}, error=[f"/{p}"])
        if t == "string" and "enum" not in s:
            case("object_for_string", {**valid, p: {"value": valid[p]}}, error=[f"/{p}"])
    for p, s in props.items():
        if p not in required and p not in valid and s.get("type") and "null" != s.get("type"):
            case("null_for_optional", {**valid, p: None})
            break
    for p in required:
        if "default" not in props.get(p, {}):
            rest = {k: v for k, v in valid.items() if k != p}
            case("missing_required", rest, error=[p])
            break
    extra = {**valid, "verbose": True}
    case("unknown_param", extra, expect_args=valid if closed else extra)
    return out


def main() -> None:
    schemas = json.loads((HERE / "schemas.json").read_text())
    cases = []
    for tool in sorted(schemas):
        cases.extend(cases_for(tool, schemas[tool], schemas))
    with open(HERE / "cases.jsonl", "w") as f:
        for i, c in enumerate(cases):
            f.write(json.dumps({"id": i, **c}, ensure_ascii=False) + "\n")
    kinds = sorted({c["kind"] for c in cases})
    print(f"{len(cases)} cases over {len(schemas)} schemas; kinds: {', '.join(kinds)}")


if __name__ == "__main__":
    main()
