"""A small MCP server for the toolset contract suite and the MCP tests, run over stdio.

- `lookup(key)` appends the key to the file named by TOOLWIRE_RAN_FILE (so the test sees that it
  ran) and answers "value of {key}"; with TOOLWIRE_HANG set it never answers.
- `started()` waits until a `lookup` call is running and answers its key.
- `cancelled()` waits until a `lookup` call was cancelled by the client (`notifications/cancelled`)
  and answers its key.
- `fail(reason)` raises: the server answers with `isError: true`.
- `echo.text(text)`, a name with a dot that providers refuse, answers its text.
"""

from __future__ import annotations

import math
import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("lookup-server")
_started: list[str] = []
_cancelled: list[str] = []
_events: dict[str, anyio.Event] = {}


def _event(name: str) -> anyio.Event:
    if name not in _events:
        _events[name] = anyio.Event()
    return _events[name]


@server.tool(structured_output=False)
async def lookup(key: str) -> str:
    """Look up a key."""
    async with await anyio.open_file(os.environ["TOOLWIRE_RAN_FILE"], "a", encoding="utf-8") as ran:
        await ran.write(key + "\n")
    _started.append(key)
    _event("started").set()
    if os.environ.get("TOOLWIRE_HANG"):
        try:
            await anyio.sleep(math.inf)
        finally:
            _cancelled.append(key)
            _event("cancelled").set()
    return f"value of {key}"


@server.tool(structured_output=False)
async def cancelled() -> str:
    """The key of the first `lookup` call the client cancelled (waits for one)."""
    await _event("cancelled").wait()
    return _cancelled[0]


@server.tool(structured_output=False)
async def started() -> str:
    """The key of the first `lookup` call (waits for one to start)."""
    await _event("started").wait()
    return _started[0]


@server.tool(structured_output=False)
async def fail(reason: str) -> str:
    """Fail with `reason`."""
    raise ToolError(reason)


@server.tool(name="echo.text", structured_output=False)
async def echo_text(text: str) -> str:
    """Answer `text`."""
    return text


if __name__ == "__main__":
    server.run("stdio")
