"""`toolwire mcp serve` in a real subprocess, driven by the official MCP client over stdio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

mcp = pytest.importorskip("mcp")

import mcp.types as types  # noqa: E402
from mcp.client.context import ClientRequestContext  # noqa: E402
from mcp.client.session import ClientSession, ElicitationFnT  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUTCOME, CODE, PAYLOAD = "dev.toolwire/outcome", "dev.toolwire/code", "dev.toolwire/payload"


@asynccontextmanager
async def connected(elicitation: ElicitationFnT | None = None) -> AsyncIterator[ClientSession]:
    """A client session with `toolwire mcp serve --app mcp_app:factory`, started for this test."""
    path = os.pathsep.join([str(ROOT / "src"), str(HERE)])
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolwire", "mcp", "serve", "--app", "mcp_app:factory"],
        env={"PYTHONPATH": path},
        cwd=str(HERE),
    )
    async with (
        stdio_client(server) as (read, write),
        ClientSession(read, write, elicitation_callback=elicitation) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
    result = await session.call_tool(name, arguments or {})
    assert isinstance(result, types.CallToolResult)
    return result


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def ran(session: ClientSession) -> list[str]:
    result = await call(session, "get_runs")
    return result.structured_content["ran"]


def answering(approve: bool, asked: list[str]) -> ElicitationFnT:
    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    return elicit


async def test_every_tool_is_listed_with_its_schema_and_all_four_annotations():
    async with connected() as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    hints = {
        name: (
            tool.annotations.read_only_hint,
            tool.annotations.destructive_hint,
            tool.annotations.idempotent_hint,
            tool.annotations.open_world_hint,
        )
        for name, tool in tools.items()
        if tool.annotations is not None
    }
    assert hints == {
        "get_greeting": (True, False, True, False),
        "get_runs": (True, False, True, False),
        "get_forever": (True, False, True, False),
        "add_note": (False, False, False, False),
        "set_title": (False, False, True, False),
        "drop_table": (False, True, False, False),
        "lookup_rate": (False, False, False, True),
        "local_touch": (False, True, False, False),
    }
    assert tools["get_greeting"].input_schema["properties"]["name"]["type"] == "string"


async def test_a_string_result_is_text_content():
    async with connected() as session:
        result = await call(session, "get_greeting", {"name": "Ada"})
    assert (result.is_error, text(result)) == (False, "Hello, Ada!")


async def test_an_object_result_is_json_text_and_structured_content():
    async with connected() as session:
        result = await call(session, "add_note", {"text": "milk"})
    assert (result.is_error, result.structured_content, text(result)) == (
        False,
        {"id": 1, "text": "milk"},
        '{"id": 1, "text": "milk"}',
    )


async def test_a_denied_call_is_an_error_with_the_outcome_in_meta_and_does_not_run():
    async with connected() as session:
        result = await call(session, "drop_table", {"table": "users"})
        runs = await ran(session)
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[CODE]) == ("denied", "denied")
    assert result.meta[PAYLOAD]["denied"]["tool"] == "drop_table"
    assert "drop_table" not in runs


async def test_a_call_past_its_deadline_is_an_error_with_the_timeout_outcome():
    async with connected() as session:
        result = await call(session, "get_forever")
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[PAYLOAD]) == ("timeout", {"timeout": {"durationMs": 200}})


async def test_invalid_arguments_are_an_error_with_the_invalid_parameters_code():
    async with connected() as session:
        result = await call(session, "get_greeting", {"name": 42})
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[CODE]) == ("error", "invalid_parameters")


async def test_an_ask_answered_yes_runs_the_call_once():
    asked: list[str] = []
    async with connected(answering(True, asked)) as session:
        result = await call(session, "local_touch", {"path": "/tmp/x"})
        runs = await ran(session)
    assert (result.is_error, text(result), runs) == (False, "touched /tmp/x", ["local_touch"])
    assert len(asked) == 1 and "local_touch" in asked[0]


async def test_an_approval_is_bound_to_its_call_the_next_one_asks_again():
    asked: list[str] = []
    async with connected(answering(True, asked)) as session:
        await call(session, "local_touch", {"path": "/tmp/x"})
        await call(session, "local_touch", {"path": "/tmp/x"})
    assert len(asked) == 2


async def test_an_ask_answered_no_is_denied_and_does_not_run():
    async with connected(answering(False, [])) as session:
        result = await call(session, "local_touch", {"path": "/tmp/x"})
        runs = await ran(session)
    assert result.is_error
    assert result.meta is not None
    assert result.meta[OUTCOME] == "denied"
    assert runs == []


async def test_an_ask_the_client_cannot_answer_is_denied():
    async with connected() as session:  # no elicitation callback: the capability is not declared
        result = await call(session, "local_touch", {"path": "/tmp/x"})
        runs = await ran(session)
    assert result.is_error
    assert result.meta is not None
    assert result.meta[OUTCOME] == "denied"
    assert "no one is available to approve it" in text(result)
    assert runs == []
