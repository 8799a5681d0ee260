"""The MCP server of bench/mcp_bench.py: an official-SDK `MCPServer` over stdio.

    python bench/mcp_echo_server.py [--tools N]

It serves `echo(text)`, which answers its text as one text block, and N - 1 filler tools
(`tool_0001` … ), each with three typed parameters and annotations, so that the tool-list memory
scenario has a list of the size of a large real server's (N = 500) with realistic definitions.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("bench-echo")


@server.tool(structured_output=False)
async def echo(text: str) -> str:
    """Answer `text`."""
    return text


def _filler(index: int) -> Callable[..., str]:
    def fill(query: str, limit: int = 10, exact: bool = False) -> str:
        return f"{index}: {query} {limit} {exact}"

    return fill


def add_fillers(count: int) -> None:
    """Register `count` filler tools: three parameters, a description and annotations each."""
    for index in range(1, count + 1):
        server.add_tool(
            _filler(index),
            name=f"tool_{index:04d}",
            description=f"Filler tool number {index}: looks `query` up, at most `limit` results.",
            annotations=ToolAnnotations(read_only_hint=index % 2 == 0, open_world_hint=False),
            structured_output=False,
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The echo MCP server of bench/mcp_bench.py (stdio).")
    parser.add_argument("--tools", type=int, default=1, help="tools listed in all, echo included")
    add_fillers(parser.parse_args(argv).tools - 1)
    server.run("stdio")


if __name__ == "__main__":
    main()
