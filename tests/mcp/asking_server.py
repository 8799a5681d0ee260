"""A Python MCP server whose tools ask the client a question mid-call (elicitation), run over stdio.

- `delete(path)` asks "Delete {path}?" with an empty schema (a plain yes/no) and answers the
  action the client took (`accept`, `decline` or `cancel`).
- `sign()` asks "Agree to the terms?" with one boolean field and answers the action, and on
  accept the field's value (`accept agree=True`).
- `register()` asks for a name (a string field: a form toolwire does not fill) and answers the action.
- `generation()` answers the protocol version the connection negotiated.

With `--legacy` the server speaks only the handshake era (it refuses `server/discover`), so the
SDK's client falls back to the 2025-11-25 handshake and the questions travel as
`elicitation/create` requests; without it the 2026-07-28 generation carries them as
`input_required` rounds of the call.
"""

from __future__ import annotations

import sys
from typing import Annotated

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from pydantic import BaseModel

server = MCPServer("asking-server")


class Nothing(BaseModel):
    """No fields: the question is a plain yes or no."""


class Agreement(BaseModel):
    """One boolean field."""

    agree: bool


class Name(BaseModel):
    """A string field."""

    name: str


def _ask_delete(path: str) -> Elicit[Nothing]:
    return Elicit(f"Delete {path}?", Nothing)


def _ask_terms() -> Elicit[Agreement]:
    return Elicit("Agree to the terms?", Agreement)


def _ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool(structured_output=False)
async def delete(path: str, answer: Annotated[ElicitationResult[Nothing], Resolve(_ask_delete)]) -> str:
    """Delete a file, once the user said yes."""
    return answer.action


@server.tool(structured_output=False)
async def sign(answer: Annotated[ElicitationResult[Agreement], Resolve(_ask_terms)]) -> str:
    """Sign the terms, once the user agreed."""
    if answer.action == "accept":
        return f"accept agree={answer.data.agree}"
    return answer.action


@server.tool(structured_output=False)
async def register(answer: Annotated[ElicitationResult[Name], Resolve(_ask_name)]) -> str:
    """Register the user under the name they give."""
    return answer.action


@server.tool(structured_output=False)
async def generation(ctx: Context) -> str:
    """The protocol version of this connection."""
    return ctx.protocol_version or ""


async def _serve_legacy() -> None:
    """Serve the handshake era only (the SDK's loop for it), over stdio."""
    lowlevel = server._lowlevel_server
    async with stdio_server() as (read, write), lowlevel.lifespan(lowlevel) as state:
        await serve_loop(
            lowlevel, read, write, lifespan_state=state, init_options=lowlevel.create_initialization_options()
        )


if __name__ == "__main__":
    if "--legacy" in sys.argv:
        anyio.run(_serve_legacy)
    else:
        server.run("stdio")
