"""Where an MCP server is and how to reach it: `Stdio` (a subprocess) or `StreamableHTTP` (a URL).

A description is plain data; `transport()` gives the transport the SDK's `mcp.Client` connects with,
new for every connection (a restart starts the subprocess again, a reconnect opens a new HTTP
session). The SDK does the speaking: its stdio client for `Stdio`, its Streamable HTTP client
for `StreamableHTTP`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit, urlunsplit

from ..._extras import import_extra
from ...errors import UsageError

if TYPE_CHECKING:
    import httpx2
    from mcp.client import Transport
    from mcp.client._transport import TransportStreams
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
else:
    httpx2 = import_extra("httpx2", "mcp")
    _stdio = import_extra("mcp.client.stdio", "mcp")
    StdioServerParameters, stdio_client = _stdio.StdioServerParameters, _stdio.stdio_client
    streamable_http_client = import_extra("mcp.client.streamable_http", "mcp").streamable_http_client

__all__ = ["MCPServerAddress", "Stdio", "StreamableHTTP"]

_CONNECT_TIMEOUT: Final = 30.0
_READ_TIMEOUT: Final = 300.0
"""The SDK's own defaults: a server may hold a response stream open (a long call, a listen stream)."""


@dataclass(frozen=True, slots=True)
class Stdio:
    """An MCP server started as a subprocess and spoken to over its stdin and stdout.

    A restart (after the server exited) runs the command again.
    """

    command: str
    """The executable (e.g. `npx`, `uvx`, `node`)."""
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """Variables over the SDK's safe defaults (PATH, HOME, ...), not the whole environment."""
    cwd: str | Path | None = None

    @property
    def label(self) -> str:
        """How messages name the server when it names itself nothing."""
        return self.command

    def transport(self) -> Transport:
        """What `mcp.Client` connects with: the SDK's stdio client, which starts the server."""
        env = dict(self.env) if self.env is not None else None
        return stdio_client(StdioServerParameters(command=self.command, args=list(self.args), env=env, cwd=self.cwd))


@dataclass(frozen=True, slots=True)
class StreamableHTTP:
    """An MCP server at a URL, spoken to over Streamable HTTP.

    A reconnect opens a new session (and probes the protocol generation again).
    """

    url: str
    """The MCP endpoint, e.g. `http://127.0.0.1:8000/mcp`."""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    """Sent with every request (e.g. `Authorization`); never shown in messages."""

    def __post_init__(self) -> None:
        if urlsplit(self.url).scheme not in ("http", "https"):
            raise UsageError(f"an MCP server's URL must start with http:// or https://, not {self.url!r}")

    @property
    def label(self) -> str:
        """How messages name the server when it names itself nothing: the URL without credentials or query."""
        parts = urlsplit(self.url)
        return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", ""))

    def transport(self) -> Transport:
        """What `mcp.Client` connects with: the SDK's Streamable HTTP client, with `headers`."""
        return _http_transport(self.url, dict(self.headers))


MCPServerAddress = Stdio | StreamableHTTP
"""How an `MCPToolset` reaches its server."""


@asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncGenerator[TransportStreams]:
    # The SDK closes only an HTTP client it made itself; this one carries the headers.
    timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=_READ_TIMEOUT)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams
