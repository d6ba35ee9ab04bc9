"""An MCP client on the official Python SDK (mcp 2.x), for Kennel's MCP server tests.

    python python_client.py http URL TOKEN GRANTED_TOOL ARGS_JSON REFUSED_TOOL
    python python_client.py stdio KENNEL HOME AGENT GRANTED_TOOL ARGS_JSON REFUSED_TOOL

Connects (streamable HTTP with a bearer token, or `kennel mcp --agent AGENT` over stdio),
initializes, lists the tools, calls GRANTED_TOOL with ARGS_JSON and REFUSED_TOOL with no
arguments, and prints one JSON object: the server's name, the tool names, and both results.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import Implementation


def text_of(result) -> dict:
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text"),
        "structured": result.structured_content,
    }


async def session_run(read, write, granted: str, args: dict, refused: str) -> dict:
    async with ClientSession(read, write, client_info=Implementation(name="python-sdk-test", version="1.0")) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        ok = await session.call_tool(granted, args)
        no = await session.call_tool(refused, {})
        return {
            "server": init.server_info.name,
            "tools": sorted(t.name for t in tools.tools),
            "granted": text_of(ok),
            "refused": text_of(no),
        }


async def main() -> None:
    mode = sys.argv[1]
    if mode == "http":
        url, token, granted, args, refused = sys.argv[2:7]
        client: httpx2.AsyncClient = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            out = await session_run(read, write, granted, json.loads(args), refused)
    else:
        kennel, home, agent, granted, args, refused = sys.argv[2:8]
        params = StdioServerParameters(command=kennel, args=["--home", home, "mcp", "--agent", agent])
        async with stdio_client(params) as (read, write):
            out = await session_run(read, write, granted, json.loads(args), refused)
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
