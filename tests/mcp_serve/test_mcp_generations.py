"""`build_server` in process: an Ask on each generation of the protocol, an unknown tool."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp.client.client import Client
from mcp.client.context import ClientRequestContext

from toolwire.interop.mcp_serve import build_server

from .mcp_app import factory


async def yes(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"approve": True})


async def test_the_handshake_generation_asks_with_an_elicitation():
    async with Client(build_server(factory()), mode="legacy", elicitation_callback=yes) as client:
        result = await client.call_tool("local_touch", {"path": "/tmp/x"})
    assert (result.is_error, result.content[0].model_dump()["text"]) == (False, "touched /tmp/x")


async def test_the_2026_generation_asks_with_an_input_required_result():
    async with Client(build_server(factory()), mode="2026-07-28", elicitation_callback=yes) as client:
        first = await client.session.call_tool("local_touch", {"path": "/tmp/x"}, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    assert first.result_type == "input_required"


async def test_the_2026_generation_runs_the_call_the_answer_approves():
    async with Client(build_server(factory()), mode="2026-07-28", elicitation_callback=yes) as client:
        result = await client.call_tool("local_touch", {"path": "/tmp/x"})
    assert (result.is_error, result.content[0].model_dump()["text"]) == (False, "touched /tmp/x")


async def test_an_unknown_tool_is_an_error_result_not_a_protocol_error():
    async with Client(build_server(factory()), mode="legacy") as client:
        result = await client.call_tool("get_weather", {})
    assert result.is_error
    assert result.meta is not None
    assert (result.meta["dev.toolwire/outcome"], result.meta["dev.toolwire/code"]) == ("error", "unknown_tool")
