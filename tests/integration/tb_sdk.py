"""The official Python MCP SDK as a downstream client of the gateway."""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager

import anyio
import mcp.types as types
from mcp import ClientSession

try:  # SDK 2.x
    from mcp.client.streamable_http import streamable_http_client as _http_client

    _HTTP_KW = {"max_sse_event_size": 64 << 20}
except ImportError:  # SDK 1.x
    from mcp.client.streamable_http import streamablehttp_client as _http_client

    _HTTP_KW = {}



@asynccontextmanager
async def sdk_session(url: str, **callbacks):
    async with AsyncExitStack() as stack:
        streams = await stack.enter_async_context(_http_client(url, **_HTTP_KW))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1], **callbacks))
        init = await session.initialize()
        session.test_init_result = init
        yield session


def run(coro_fn, *args):
    return anyio.run(coro_fn, *args)


def only_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1, f"expected one content item, got {result.content!r}"[:2000]
    item = result.content[0]
    assert isinstance(item, types.TextContent), f"expected text content, got {type(item).__name__}"
    return item.text
