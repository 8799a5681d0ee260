"""The reference server of the conformance suite's server scenarios: the official SDK's `MCPServer`.

    python tests/mcp/conformance_server.py      # prints http://127.0.0.1:PORT/mcp once it listens

It shows that the harness works: an `MCPServer` with the tools the suite's tool scenarios call
(`test_simple_text`, ...), written for these tests, over Streamable HTTP on an ephemeral loopback
port; it runs until it is terminated. toolwire's own server in the same scenarios is the real
`toolwire mcp serve --http` (tests/mcp/test_conformance.py starts it on conformance_app.py).
"""

from __future__ import annotations

import base64
import socket
import sys
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import AudioContent, EmbeddedResource, ImageContent, TextContent, TextResourceContents
from starlette.types import ASGIApp

# A 1×1 PNG and a 1-sample WAV: the smallest valid media the image and audio scenarios ask for.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
        "0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    bytes.fromhex("524946462600000057415645666d74201000000001000100401f0000401f00000100080064617461020000008080")
).decode()

reference = MCPServer("conformance-reference")


@reference.tool(description="Returns a simple text response.", structured_output=False)
async def test_simple_text() -> str:
    return "This is a simple text response for testing."


@reference.tool(description="Returns a 1x1 PNG image.", structured_output=False)
async def test_image_content() -> list[ImageContent]:
    return [ImageContent(type="image", data=PNG, mime_type="image/png")]


@reference.tool(description="Returns a short WAV sound.", structured_output=False)
async def test_audio_content() -> list[AudioContent]:
    return [AudioContent(type="audio", data=WAV, mime_type="audio/wav")]


def _resource(uri: str, mime_type: str, text: str) -> EmbeddedResource:
    return EmbeddedResource(type="resource", resource=TextResourceContents(uri=uri, mime_type=mime_type, text=text))


@reference.tool(description="Returns an embedded text resource.", structured_output=False)
async def test_embedded_resource() -> list[EmbeddedResource]:
    return [_resource("test://embedded-resource", "text/plain", "This is an embedded resource content.")]


@reference.tool(description="Returns text, an image and a resource.", structured_output=False)
async def test_multiple_content_types() -> list[Any]:
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG, mime_type="image/png"),
        _resource("test://mixed-content-resource", "application/json", '{"test":"data","value":123}'),
    ]


@reference.tool(description="Always fails.", structured_output=False)
async def test_error_handling() -> str:
    raise ToolError("This tool intentionally returns an error for testing")


@reference.tool(description="Reports progress 0, 50 and 100 of 100.", structured_output=False)
async def test_tool_with_progress(ctx: Context) -> str:
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100)
        await anyio.sleep(0.05 if step < 100 else 0)
    return "Progress reported."


@reference.tool(description="Sends three info log messages.", structured_output=False)
async def test_tool_with_logging(ctx: Context) -> str:
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.info(line)
        await anyio.sleep(0.05 if line != "Tool execution completed" else 0)
    return "Logging done."


def serve(app: ASGIApp) -> None:
    """Serve `app` on a fresh loopback port; print its URL once the socket listens.

    Connections made before uvicorn has started wait in the socket's backlog, and uvicorn runs
    the app's lifespan (the SDK's session manager) before it accepts the first one.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


def main() -> None:
    serve(reference.streamable_http_app())


if __name__ == "__main__":
    sys.exit(main())
