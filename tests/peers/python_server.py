"""A small MCP server for Kennel's system tests, built on the official Python SDK (mcp 2.x).

Run it over stdio with the test venv:

    target/mcp-venv/bin/python tests/peers/python_server.py

Each tool covers one case the Kennel client has to handle: a dotted tool name,
a tool-level error, a tool list that changes mid-session, hostile text in a
description and a result, and a slow call. It also serves one resource and one prompt.
"""

import asyncio
import hashlib
import json
import os
import sys
from functools import partial

from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent

# The name it gives in its handshake (the hostile-text test sets one).
mcp = MCPServer(os.environ.get("KENNEL_PEER_NAME", "kennel-python-peer"), version="1.0.0")

# Plain text results: no outputSchema and no structuredContent.
tool = partial(mcp.tool, structured_output=False)


# A dot in the name, on purpose: the client must not treat it as a separator.
@tool(name="files.read", description="Pretend to read a file.")
def files_read(path: str) -> str:
    return f"contents of {path}"


# A tool-level error (isError: true), not a JSON-RPC error. Raising ToolError
# would do too, but the SDK prefixes its text with "Error executing tool fail: ".
@tool(description="Always fails, as a tool-level error.")
def fail() -> CallToolResult:
    text = TextContent(type="text", text="the peer failed on purpose")
    return CallToolResult(content=[text], is_error=True)


def late() -> str:
    return "late tool ran"


# Registers `late` and tells the client the tool list changed.
# MCPServer does not send the notification by itself, so send it on the session.
@tool(description="Register the tool `late` and announce it.")
async def add_late_tool(ctx: Context) -> str:
    mcp.add_tool(late, name="late", description="Added at run time.", structured_output=False)
    await ctx.session.send_tool_list_changed()
    return "added"


# Markup in the description and the result: the client must show it as text.
@tool(description='<img src=x onerror=alert(1)><script>alert("desc")</script>')
def hostile(x: int) -> str:
    return '<script>alert("result")</script>'


@tool(description="Sleep for the given number of seconds, then answer.")
async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


@mcp.resource("memo://greeting", name="greeting", mime_type="text/plain")
def greeting() -> str:
    return "hello from the python peer"


# A bare string comes back as one user message.
@mcp.prompt(description="Ask for a one-line summary.")
def summarise(topic: str) -> str:
    return f"Summarise {topic} in one line."


def kennel_name(server: str, name: str) -> str:
    """The TOOL part of Kennel's `mcp__SERVER__TOOL` for a name it must map (kernel/src/mcp/names.rs)."""
    room = 64 - len(f"mcp__{server}__")
    kept = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in name)[: room - 7]
    return f"{kept}_{hashlib.sha256(name.encode()).hexdigest()[:6]}"


def add_hostile_corpus() -> None:
    """With KENNEL_PEER_HOSTILE (a JSON list of strings) set: one tool named by each string,
    each described by all of them, all of them on stderr, and, after the first, a tool whose
    name is the first's mapped name, so Kennel leaves it out naming both (the hostile-text test)."""
    corpus = json.loads(os.environ.get("KENNEL_PEER_HOSTILE", "[]"))
    for name in corpus:
        mcp.add_tool(late, name=name, description=" ".join(corpus), structured_output=False)
    if corpus:
        clash = kennel_name(os.environ.get("KENNEL_PEER_SERVER", "hostile"), corpus[0])
        mcp.add_tool(late, name=clash, description="clashes", structured_output=False)
    for text in corpus:
        print(text, file=sys.stderr, flush=True)


async def main() -> None:
    add_hostile_corpus()
    # Same as mcp.run("stdio"), except that the server also advertises
    # tools.listChanged, since add_late_tool sends that notification.
    # MCPServer.run() has no option for it, hence the low-level server.
    server = mcp._lowlevel_server
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    asyncio.run(main())
