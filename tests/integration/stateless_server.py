"""A remote MCP server on the official Python SDK 2.3 (MCPServer over Streamable HTTP): it
answers server/discover with 2026-07-28, so the gateway speaks to it statelessly.
Usage: stateless_server.py PORT"""
import sys

from mcp.server.mcpserver import MCPServer

app = MCPServer("stateless-upstream", log_level="WARNING")


@app.tool()
def add(a: int, b: int) -> str:
    """Adds two integers."""
    return str(a + b)


@app.tool()
def echo(text: str) -> str:
    """Returns its text argument."""
    return text


if __name__ == "__main__":
    app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), json_response=True)
