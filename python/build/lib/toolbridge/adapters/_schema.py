"""Tool names and input schemas in the forms function-calling APIs accept.

Names: OpenAI's function names are 1-64 characters of [a-zA-Z0-9_-]; MCP tool names may hold
dots, slashes or be longer. Schemas: OpenAI wants an object at the top; verl's schema model wants
every property to carry one ``type`` (no ``anyOf``, no ``["string", "null"]``, no ``$ref``).
``flatten_schema`` gives both: references inlined, ``allOf`` merged, nullable unions reduced to
their type, and a type inferred where none is written."""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any, Iterable

_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_MAX_DEPTH = 32
_DROPPED = {"$schema", "$id", "$defs", "definitions", "$comment"}


def api_name(name: str) -> str:
    """``name`` if the API accepts it, else a valid name close to it (with a hash when shortened)."""
    if _VALID_NAME.match(name):
        return name
    clean = _INVALID_CHARS.sub("_", name) or "tool"
    if len(clean) > 64 or clean != name:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        clean = f"{clean[:55]}_{digest}" if len(clean) > 64 else clean
    return clean


def api_names(names: Iterable[str]) -> dict[str, str]:
    """Exposed name -> API name, unique (a clash gets the name's hash appended)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        candidate = api_name(name)
        if candidate in taken:
            candidate = f"{candidate[:55]}_{hashlib.sha1(name.encode()).hexdigest()[:8]}"
        taken.add(candidate)
        out[name] = candidate
    return out


def _infer_type(s: dict[str, Any]) -> str:
    if "properties" in s or "additionalProperties" in s:
        return "object"
    if "items" in s:
        return "array"
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        first = enum[0]
        if isinstance(first, bool):
            return "boolean"
        if isinstance(first, int):
            return "integer"
        if isinstance(first, float):
            return "number"
    return "string"


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any] | None:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _flatten(s: Any, root: dict[str, Any], depth: int) -> dict[str, Any]:
    if not isinstance(s, dict):
        return {"type": "string"}
    if depth > _MAX_DEPTH:
        return {"type": "object"}  # a recursive schema, cut off
    s = dict(s)
    if "$ref" in s:
        target = _resolve(s.pop("$ref"), root)
        merged = {**(target or {}), **s}
        return _flatten(merged, root, depth + 1)
    if "allOf" in s:
        parts = [_flatten(p, root, depth + 1) for p in s.pop("allOf") if isinstance(p, dict)]
        for p in parts:
            if "properties" in p:
                s.setdefault("properties", {}).update(p["properties"])
            if "required" in p:
                s["required"] = list(dict.fromkeys([*s.get("required", []), *p["required"]]))
            for k, v in p.items():
                if k not in ("properties", "required"):
                    s.setdefault(k, v)
    for key in ("anyOf", "oneOf"):
        if key in s:
            options = [o for o in s.pop(key) if isinstance(o, dict)]
            non_null = [o for o in options if o.get("type") != "null"]
            chosen = _flatten(non_null[0], root, depth + 1) if non_null else {"type": "string"}
            for k, v in chosen.items():
                s.setdefault(k, v)
    t = s.get("type")
    if isinstance(t, list):
        non_null = [x for x in t if x != "null"]
        s["type"] = non_null[0] if non_null else "string"
    elif not isinstance(t, str):
        s["type"] = _infer_type(s)
    for k in _DROPPED:
        s.pop(k, None)
    s.pop("not", None)
    if isinstance(s.get("properties"), dict):
        s["properties"] = {k: _flatten(v, root, depth + 1) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        s["items"] = _flatten(s["items"], root, depth + 1)
    elif isinstance(s.get("items"), list):  # tuple form: the first item's schema
        s["items"] = _flatten(s["items"][0], root, depth + 1) if s["items"] else {"type": "string"}
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = _flatten(s["additionalProperties"], root, depth + 1)
    return s


def flatten_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """An MCP inputSchema as an object schema whose every property has a single ``type``."""
    root = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    flat = _flatten(root, root, 0)
    if flat.get("type") != "object":
        flat = {"type": "object", "properties": {}}
    props = flat.get("properties")
    flat["properties"] = props if isinstance(props, dict) else {}
    required = flat.get("required")
    flat["required"] = [r for r in required if r in flat["properties"]] if isinstance(required, list) else []
    return flat


def origin(tool: dict[str, Any], separator: str = "__") -> tuple[str, str]:
    """(server, the server's own tool name) of a catalog entry: from the gateway's _meta tags,
    else split at the separator."""
    meta = tool.get("_meta") or {}
    server, name = meta.get("toolbridge/server"), meta.get("toolbridge/name")
    if isinstance(server, str) and isinstance(name, str):
        return server, name
    exposed = tool["name"]
    server, _, name = exposed.partition(separator)
    return (server, name) if name else ("", exposed)
