"""A remote MCP server on the official Python SDK 2.3 (MCPServer over Streamable HTTP): it
answers server/discover with 2026-07-28, so the gateway speaks to it statelessly.
`interview` asks for input as a 2026-07-28 server does, with input_required results over two
rounds (elicitation, then sampling and roots) and answers with everything it was given, so a test
can see what reached it; `insist` never stops asking (the gateway's bound on rounds); `ask` asks
COUNT things at once under keys KEY_BYTES long (its bounds on a round).
Usage: stateless_server.py PORT"""
import json
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ListRootsRequest,
    SamplingMessage,
    TextContent,
)

app = MCPServer("stateless-upstream", log_level="WARNING")


@app.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@app.tool()
def echo(text: str) -> str:
    """Returns its text argument."""
    return text


@app.tool()
def interview(topic: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    """Two rounds of input_required: a name (elicitation), then a draft (sampling) and the roots."""
    state, responses = ctx.request_state, ctx.input_responses or {}
    answers = {k: v.model_dump(mode="json", by_alias=True, exclude_none=True) for k, v in responses.items()}
    if state is None:
        return InputRequiredResult(
            input_requests={"who": ElicitRequest(params=ElicitRequestFormParams(
                message=f"Who asks about {topic}?",
                requested_schema={"type": "object", "properties": {"name": {"type": "string"}},
                                  "required": ["name"]}))},
            request_state="round-1")
    if state == "round-1":
        name = answers["who"]["content"]["name"]
        return InputRequiredResult(
            input_requests={
                "draft": CreateMessageRequest(params=CreateMessageRequestParams(
                    messages=[SamplingMessage(role="user", content=TextContent(type="text", text=f"Draft for {name}"))],
                    max_tokens=50)),
                "where": ListRootsRequest(),
            },
            request_state=f"round-2:{name}")
    return CallToolResult(content=[TextContent(type="text", text=json.dumps({"state": state, "answers": answers}))])


@app.tool()
def ask(count: int, key_bytes: int) -> CallToolResult | InputRequiredResult:
    """One round asking `count` elicitations at once, under keys `key_bytes` long (the gateway's
    bounds: 16 a round, keys of at most 256 bytes)."""
    keys = [str(i).rjust(key_bytes, "k") for i in range(count)]
    return InputRequiredResult(
        input_requests={k: ElicitRequest(params=ElicitRequestFormParams(
            message="Which?", requested_schema={"type": "object", "properties": {}}))
            for k in keys},
        request_state="asked")


insisted = 0


@app.tool()
def insist(ctx: Context) -> CallToolResult | InputRequiredResult:
    """Never satisfied: answers every round with input_required (a state, no questions)."""
    global insisted
    insisted += 1
    return InputRequiredResult(request_state=f"again-{insisted}")


@app.tool()
def insisted_count() -> str:
    """How many times `insist` ran."""
    return str(insisted)


if __name__ == "__main__":
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response=True)
