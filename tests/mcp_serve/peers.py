"""Real MCP peers for tests/mcp_serve/: `toolwire mcp serve` over stdio or Streamable HTTP, and the official client."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp.client.client import Client
from mcp.client.session import ElicitationFnT
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PATH = os.pathsep.join([str(ROOT / "src"), str(HERE)])
OUTCOME, CODE, PAYLOAD = "dev.toolwire/outcome", "dev.toolwire/code", "dev.toolwire/payload"
LEGACY, MODERN = "legacy", "2026-07-28"
"""The client's modes: the handshake generation, and the stateless 2026-07-28 one."""
TOKEN = "mcp-test-token-0123456789abcdef"
"""The Bearer token of the HTTP servers these tests start (`http_server`) and present (`connected`)."""
STATE_KEY = "k" * 16 + "0123456789abcdef0123456789abcdef"
"""A `requestState` key (TOOLWIRE_MCP_STATE_KEY) shared by the processes of one test."""


def server_environment(**extra: str) -> dict[str, str]:
    """The environment of a server subprocess: the worktree's toolwire and the test app, no token."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("TOOLWIRE_")}
    return {**environment, "PYTHONPATH": PATH, "PYTHONUNBUFFERED": "1", **extra}


@contextmanager
def http_server(*arguments: str, environment: dict[str, str] | None = None) -> Iterator[str]:
    """Run `toolwire mcp serve --app mcp_app:factory --http --port 0 --token TOKEN ARGUMENTS`; yield its URL."""
    command = [sys.executable, "-m", "toolwire", "mcp", "serve", "--app", "mcp_app:factory", "--http", "--port", "0"]
    command += ["--token", TOKEN]
    process = subprocess.Popen(
        [*command, *arguments],
        cwd=HERE,
        env=environment or server_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:  # the line is printed once the server listens
        lines.append(line)
        if match := re.search(r"serving (http://\S+)", line):
            break
    else:
        process.wait(timeout=10)
        raise AssertionError("the MCP server did not start:\n" + "".join(lines))
    try:
        yield match.group(1)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()


def stdio_server() -> StdioServerParameters:
    """`toolwire mcp serve --app mcp_app:factory` as a subprocess the client starts."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolwire", "mcp", "serve", "--app", "mcp_app:factory"],
        env=server_environment(),
        cwd=str(HERE),
    )


@asynccontextmanager
async def connected(
    server: str | None, mode: str, elicitation: ElicitationFnT | None = None, *, token: str | None = TOKEN
) -> AsyncIterator[Client]:
    """The official client in `mode`, connected to the server at `server` (a URL), or over stdio when None."""
    if server is None:
        async with Client(stdio_server(), mode=mode, elicitation_callback=elicitation) as client:
            yield client
        return
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    async with create_mcp_http_client(headers=headers) as http:  # the transport leaves a given client open
        transport: Any = streamable_http_client(server, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=elicitation) as client:
            yield client


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def runs(client: Client) -> list[str]:
    """The tools that ran so far in the server's process (`get_runs`)."""
    result = await client.call_tool("get_runs", {})
    assert result.structured_content is not None
    return result.structured_content["ran"]
