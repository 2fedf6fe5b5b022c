"""A stdio MCP server written with the official Python SDK's FastMCP, for the bench's
spawn-per-call scenario: what a typical Python tool server costs to start per call."""
import asyncio
import logging

try:
    # mcp 2.x renamed FastMCP to MCPServer; same decorator API.
    from mcp.server.mcpserver import MCPServer as FastMCP
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP

app = FastMCP("bench-fastmcp", log_level="WARNING")


@app.tool()
def echo(text: str) -> str:
    """Returns its text argument."""
    return text


@app.tool()
async def sleep(ms: float) -> str:
    """Waits ms milliseconds, then answers."""
    await asyncio.sleep(ms / 1000)
    return f"slept {int(ms)} ms"


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    app.run()
