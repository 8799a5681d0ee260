"""A served tool's `ToolContext.report_progress` reaches the MCP client as `notifications/progress`.

`toolwire mcp serve` in a real subprocess (stdio and Streamable HTTP), the official client in
legacy (handshake) and 2026-07-28 mode. The client hands each notification to its callback in a
task of its own, so the tests wait until the expected count arrived rather than assuming it came
with the result.
"""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip("mcp")

from .peers import connected, text

Report = tuple[float, float | None, str | None]


async def progress_of(server: str | None, mode: str, tool: str, count: int) -> list[Report]:
    """The progress the client received while calling `tool` with `count` pages, once all `count` came."""
    received: list[Report] = []
    complete = anyio.Event()

    async def collect(progress: float, total: float | None, message: str | None) -> None:
        received.append((progress, total, message))
        if len(received) == count:
            complete.set()

    async with connected(server, mode) as client:
        result = await client.call_tool(tool, {"count": count}, progress_callback=collect)
        assert (result.is_error, text(result)) == (False, str(count))
        with anyio.fail_after(10):
            await complete.wait()
    return received


async def test_a_tools_progress_reaches_the_client_in_order(server: str | None, mode: str):
    received = await progress_of(server, mode, "get_pages", 3)
    assert received == [(1, 3, "page 1"), (2, 3, "page 2"), (3, 3, "page 3")]


async def test_a_thread_tools_progress_reaches_the_client_in_order(server: str | None, mode: str):
    received = await progress_of(server, mode, "get_pages_in_thread", 3)
    assert received == [(1, 3, "page 1"), (2, 3, "page 2"), (3, 3, "page 3")]


async def test_a_call_without_a_progress_token_gets_its_result(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("get_pages", {"count": 2})
    assert (result.is_error, text(result)) == (False, "2")
