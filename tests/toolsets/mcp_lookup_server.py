"""A one-tool MCP server for the toolset contract suite, run over stdio: `python mcp_lookup_server.py`.

`lookup(key)` appends the key to the file named by TOOLWIRE_RAN_FILE (so the test sees that it
ran) and answers "value of {key}"; with TOOLWIRE_HANG set it never answers.
"""

from __future__ import annotations

import math
import os

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("lookup-server")


@server.tool(structured_output=False)
async def lookup(key: str) -> str:
    """Look up a key."""
    async with await anyio.open_file(os.environ["TOOLWIRE_RAN_FILE"], "a", encoding="utf-8") as ran:
        await ran.write(key + "\n")
    if os.environ.get("TOOLWIRE_HANG"):
        await anyio.sleep(math.inf)
    return f"value of {key}"


if __name__ == "__main__":
    server.run("stdio")
