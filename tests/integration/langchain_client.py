"""Drives the gateway through LangChain's MCP adapters exactly as a LangChain agent does:
MultiServerMCPClient.get_tools(), then each tool invoked on its own (the adapters open a new MCP
session for every call). Runs in .venv-frameworks (the adapters pin mcp<2, .venv has mcp 2).

usage: langchain_client.py JSON   where JSON is
  {"url": ..., "transport": "streamable_http"|"sse", "headers": {...} | null,
   "calls": [[tool_name, {arguments}], ...]}
prints {"tools": [names], "results": [text of each call, or {"error": message}]} as JSON.
"""

import asyncio
import json
import sys

from langchain_mcp_adapters.client import MultiServerMCPClient


def text_of(output) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, tuple):  # (content, artifact)
        output = output[0]
    if isinstance(output, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in output)
    return str(output)


async def main(spec: dict) -> dict:
    connection = {"url": spec["url"], "transport": spec.get("transport", "streamable_http")}
    if spec.get("headers"):
        connection["headers"] = spec["headers"]
    client = MultiServerMCPClient({"gateway": connection})
    tools = {t.name: t for t in await client.get_tools()}
    results = []
    for name, arguments in spec["calls"]:
        try:
            results.append(text_of(await tools[name].ainvoke(arguments)))
        except Exception as exc:  # a tool error the adapters raise: reported, not fatal
            results.append({"error": f"{type(exc).__name__}: {exc}"})
    return {"tools": sorted(tools), "results": results}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
