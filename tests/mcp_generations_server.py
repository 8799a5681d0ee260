"""A Python MCP server (the official SDK's `MCPServer`) for `MCPToolset`'s tests of both generations.

Run as a script, it serves over stdio; `build()` gives the server, which the tests also serve over
Streamable HTTP in process (`streamable_http_app()`). It serves the 2026-07-28 generation (the
client probes it first) and 2025-11-25; with TOOLWIRE_GENERATION=2025-11-25 it serves only the
handshake generation (the probe is refused, so the client falls back to the handshake).

- `echo(text)` (read-only, closed world) answers its text.
- `fail(reason)` raises: the server answers with `isError: true`.
- `hang()` never answers (a deadline ends it).
- `grow(tool)` adds a tool called `tool` that answers its name, and says the tool list changed
  (`notifications/tools/list_changed` on 2025-11-25, to `subscriptions/listen` on 2026-07-28).
- `crash()` appends "crash" to the file named by TOOLWIRE_RAN_FILE, then the process exits
  before answering (over stdio).
"""

from __future__ import annotations

import math
import os

import anyio
import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server

READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)


def build() -> MCPServer:
    """The server, not yet serving."""
    server = MCPServer("generations")

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def echo(text: str) -> str:
        """Answer `text`."""
        return text

    @server.tool(structured_output=False)
    async def fail(reason: str) -> str:
        """Fail with `reason`."""
        raise ToolError(reason)

    @server.tool(structured_output=False)
    async def hang() -> str:
        """Never answer."""
        await anyio.sleep(math.inf)
        return "never"

    @server.tool(structured_output=False)
    async def grow(tool: str, ctx: Context) -> str:
        """Add a tool called `tool`."""

        async def added() -> str:
            return tool

        server.add_tool(added, name=tool, description=f"Answer {tool!r}.", structured_output=False)
        await ctx.notify_tools_changed()  # 2026-07-28: to the client's subscriptions/listen stream
        await ctx.session.send_tool_list_changed()  # 2025-11-25 (dropped on 2026-07-28)
        return f"added {tool}"

    @server.tool(structured_output=False)
    def crash() -> str:
        """Exit the server's process before answering."""
        with open(os.environ["TOOLWIRE_RAN_FILE"], "a", encoding="utf-8") as ran:
            ran.write("crash\n")
        os._exit(1)

    return server


async def serve_2025_only(server: MCPServer) -> None:
    """Serve over stdio in the handshake-only loop (the SDK's `serve_loop`): the probe is refused."""
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        options = lowlevel.create_initialization_options()
        await serve_loop(lowlevel, read_stream, write_stream, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    if os.environ.get("TOOLWIRE_GENERATION") == "2025-11-25":
        anyio.run(serve_2025_only, build())
    else:
        build().run("stdio")
