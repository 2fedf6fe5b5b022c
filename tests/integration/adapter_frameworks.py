"""Runs toolbridge's adapters inside the real frameworks' classes, in .venv-adapters (see
python/requirements-adapters.txt), against a gateway given on the command line. Each check
asserts as it goes and prints one JSON line of what it saw; test_adapters.py runs it.

    adapter_frameworks.py openai GATEWAY_URL
    adapter_frameworks.py verl GATEWAY_URL WORKDIR

verl is installed with --no-deps: its package __init__ (verl/__init__.py, verl/utils/__init__.py)
imports torch, which cannot be installed without the GPU stack. So the `verl`, `verl.utils` and
`verl.tools` packages are registered over their installed folders without running those two
__init__ files; every module the adapter meets — verl.tools.base_tool (BaseTool),
verl.tools.schemas, verl.utils.rollout_trace, verl.tools.tool_registry (the config loader) — is
verl's own, imported from the wheel. ray is not installed either: verl.utils.ray_utils (which
rollout_trace imports only for get_event_loop, used when tracing decodes tokens) is replaced by
a module holding that one function when ray is missing."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import sys
import time
import types
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))


def health(url: str) -> dict:
    with urllib.request.urlopen(url + "/healthz", timeout=5) as r:
        return json.load(r)


# ---- OpenAI ------------------------------------------------------------------------------------

def run_openai(url: str) -> dict:
    import re

    from openai.types.chat import (ChatCompletion, ChatCompletionToolMessageParam,
                                   ChatCompletionToolParam)
    from pydantic import TypeAdapter

    import toolbridge
    from toolbridge.adapters.openai import AsyncOpenAITools, OpenAITools

    with toolbridge.Client(url) as client:
        adapter = OpenAITools(client)
        tools = adapter.tools()
        # Each definition is what the SDK's `tools=` parameter takes, with an API-valid name.
        TypeAdapter(list[ChatCompletionToolParam]).validate_python(tools)
        names = [t["function"]["name"] for t in tools]
        assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for n in names), names
        by_name = {t["function"]["name"]: t["function"] for t in tools}
        # A model's answer as the SDK parses it: three calls in one message, one with bad JSON.
        completion = ChatCompletion.model_validate({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_a", "type": "function",
                     "function": {"name": "fixture__sleep", "arguments": json.dumps({"ms": 200})}},
                    {"id": "call_b", "type": "function",
                     "function": {"name": "fixture__echo", "arguments": json.dumps({"text": "hi"})}},
                    {"id": "call_c", "type": "function",
                     "function": {"name": "fixture__echo", "arguments": "{not json"}},
                    {"id": "call_d", "type": "function",
                     "function": {"name": "fixture__fail", "arguments": "{}"}},
                ]}}]})
        message = completion.choices[0].message
        started = time.monotonic()
        replies = adapter.execute(message)
        elapsed = time.monotonic() - started
        TypeAdapter(list[ChatCompletionToolMessageParam]).validate_python(replies)
        # The same with the message as a plain dict (as messages lists often hold them).
        replies_from_dict = adapter.execute(message.model_dump())

    async def with_async() -> list[dict]:
        async with toolbridge.AsyncClient(url) as c:
            a = await AsyncOpenAITools.create(c, only=["fixture__echo"])
            assert [t["function"]["name"] for t in a.tools()] == ["fixture__echo"]
            return await a.execute({"tool_calls": [{"id": "x", "type": "function", "function": {
                "name": "fixture__echo", "arguments": "{\"text\": \"async\"}"}}]})

    return {"names": names, "schemas": {n: by_name[n]["parameters"] for n in names},
            "replies": replies, "replies_from_dict": replies_from_dict, "elapsed": elapsed,
            "async": asyncio.run(with_async())}


# ---- verl --------------------------------------------------------------------------------------

def load_verl() -> None:
    spec = importlib.util.find_spec("verl")
    assert spec is not None and spec.submodule_search_locations, "verl is not installed"
    root = Path(list(spec.submodule_search_locations)[0])
    for name, folder in (("verl", root), ("verl.utils", root / "utils"), ("verl.tools", root / "tools")):
        module = types.ModuleType(name)
        module.__path__ = [str(folder)]
        module.__package__ = name
        module.__file__ = str(folder / "__init__.py")
        sys.modules[name] = module
    if importlib.util.find_spec("ray") is None:
        ray_utils = types.ModuleType("verl.utils.ray_utils")
        ray_utils.get_event_loop = asyncio.get_event_loop
        sys.modules["verl.utils.ray_utils"] = ray_utils


class Rollout:
    """What the agent loop passes as agent_data (its AgentData carries request_id)."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id


async def agent_loop_call(tool, args: dict, agent_data) -> tuple[str, float, dict]:
    # As ToolAgentLoop._call_tool: create, execute with agent_data, release, every call.
    instance_id, _ = await tool.create(create_kwargs={})
    try:
        response, reward, metrics = await tool.execute(instance_id, args, agent_data=agent_data)
    finally:
        await tool.release(instance_id)
    return response.text, reward, metrics


def run_verl(url: str, workdir: str) -> dict:
    load_verl()
    from verl.tools.base_tool import BaseTool
    from verl.tools.schemas import OpenAIFunctionToolSchema
    from verl.tools.tool_registry import initialize_tools_from_config

    from toolbridge.adapters.verl import ToolbridgeTool, rollout_infra_failed, write_tool_config

    config_path = Path(workdir) / "tool_config.yaml"
    doc = write_tool_config(url, str(config_path),
                            only=["fixture__counter", "fixture__echo", "fixture__fail",
                                  "memory__create_entities", "memory__read_graph"])
    # One more entry without tool_schema: built from the catalog by the tool itself.
    doc["tools"].append({"class_name": "toolbridge.adapters.verl.ToolbridgeTool",
                         "config": {"type": "native", "gateway_url": url, "tool": "fixture__add"}})
    # A tool whose calls time out: the infrastructure's fault, which a trainer masks.
    doc["tools"].append({"class_name": "toolbridge.adapters.verl.ToolbridgeTool",
                         "config": {"type": "native", "gateway_url": url, "tool": "fixture__sleep",
                                    "timeout_ms": 100}})
    config_path.write_text(json.dumps(doc))
    tools = {t.name: t for t in initialize_tools_from_config(str(config_path))}
    assert all(isinstance(t, BaseTool) and isinstance(t, ToolbridgeTool) for t in tools.values())
    # The schemas as the agent loop hands them to the chat template, and as verl's model accepts.
    schemas = [t.tool_schema.model_dump(exclude_unset=True, exclude_none=True) for t in tools.values()]
    for s in schemas:
        OpenAIFunctionToolSchema.model_validate(s)
        for prop in s["function"]["parameters"]["properties"].values():
            assert isinstance(prop["type"], str), s

    async def rollouts() -> dict:
        a, b = Rollout("req-a"), Rollout("req-b")
        counts = [(await agent_loop_call(tools["fixture__counter"], {}, a))[0] for _ in range(3)]
        counts.append((await agent_loop_call(tools["fixture__counter"], {}, b))[0])
        await agent_loop_call(tools["memory__create_entities"], {"entities": [
            {"name": "Alice", "entityType": "person", "observations": ["x"]}]}, a)
        graph_a = (await agent_loop_call(tools["memory__read_graph"], {}, a))[0]
        graph_b = (await agent_loop_call(tools["memory__read_graph"], {}, b))[0]
        echo = await agent_loop_call(tools["fixture__echo"], {"text": "verl"}, a)
        failed = await agent_loop_call(tools["fixture__fail"], {"message": "bad"}, a)
        added = await agent_loop_call(tools["fixture__add"], {"a": 2, "b": 5}, a)
        slept = await agent_loop_call(tools["fixture__sleep"], {"ms": 2000}, b)
        infra_failed = {"a": rollout_infra_failed("req-a", url), "b": rollout_infra_failed("req-b", url)}
        # Without agent_data the instance has its own trajectory, freed by release().
        alone = await agent_loop_call(tools["fixture__counter"], {}, None)
        bound_before = health(url)["servers"]["fixture"]["sessions_bound"]
        # Rollout a ends: its agent_data is freed, and with it its trajectory.
        del a
        gc.collect()
        deadline = time.monotonic() + 5
        while health(url)["servers"]["fixture"]["sessions_bound"] >= bound_before and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return {"counts": counts, "graph_a": graph_a, "graph_b": graph_b, "echo": list(echo),
                "failed": list(failed), "added": added[0], "alone": alone[0],
                "slept": list(slept), "infra_failed": infra_failed,
                "bound_before": bound_before,
                "bound_after": health(url)["servers"]["fixture"]["sessions_bound"],
                "b_alive": b.request_id}

    # The shipped example config reads with verl's loader and schema model.
    from omegaconf import OmegaConf

    example = OmegaConf.load(str(Path(__file__).resolve().parents[2] / "python/examples/verl_tool_config.yaml"))
    for entry in example.tools:
        assert entry.class_name == "toolbridge.adapters.verl.ToolbridgeTool" and entry.config.type == "native"
        if entry.get("tool_schema") is not None:
            OpenAIFunctionToolSchema.model_validate(OmegaConf.to_container(entry.tool_schema, resolve=True))

    out = asyncio.run(rollouts())
    out["tool_names"] = sorted(tools)
    out["add_schema"] = tools["fixture__add"].tool_schema.model_dump(exclude_none=True)
    return out


if __name__ == "__main__":
    kind, url = sys.argv[1], sys.argv[2]
    result = run_openai(url) if kind == "openai" else run_verl(url, sys.argv[3])
    print(json.dumps(result))
