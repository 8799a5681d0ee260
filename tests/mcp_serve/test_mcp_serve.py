"""`toolwire mcp serve` in a real subprocess, driven by the official MCP client.

Every test runs over stdio and over Streamable HTTP (one server process per module, on a free
loopback port), with the client in legacy mode (the handshake generation) and in 2026-07-28 mode.
An Ask reaches the client's elicitation callback either way: as an elicitation request in legacy
mode, as an `input_required` result that the client answers and retries in 2026-07-28 mode.
"""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp.client.context import ClientRequestContext
from mcp.client.session import ElicitationFnT

from .peers import CODE, LEGACY, MODERN, OUTCOME, PAYLOAD, connected, runs, text


def answering(approve: bool, asked: list[str]) -> ElicitationFnT:
    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": approve})

    return elicit


async def test_every_tool_is_listed_with_its_schema_and_all_four_annotations(server: str | None, mode: str):
    async with connected(server, mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
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
        "get_pages": (True, False, True, False),
        "get_pages_in_thread": (True, False, True, False),
        "get_confirmed": (True, False, True, False),
        "add_note": (False, False, False, False),
        "set_title": (False, False, True, False),
        "drop_table": (False, True, False, False),
        "lookup_rate": (False, False, False, True),
        "local_touch": (False, True, False, False),
    }
    assert tools["get_greeting"].input_schema["properties"]["name"]["type"] == "string"


async def test_a_string_result_is_text_content(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("get_greeting", {"name": "Ada"})
    assert (result.is_error, text(result)) == (False, "Hello, Ada!")


async def test_an_object_result_is_json_text_and_structured_content(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("add_note", {"text": "milk"})
    assert (result.is_error, result.structured_content, text(result)) == (
        False,
        {"id": 1, "text": "milk"},
        '{"id": 1, "text": "milk"}',
    )


async def test_a_denied_call_is_an_error_with_the_outcome_in_meta_and_does_not_run(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("drop_table", {"table": "users"})
        ran = await runs(client)
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[CODE]) == ("denied", "denied")
    assert result.meta[PAYLOAD]["denied"]["tool"] == "drop_table"
    assert "drop_table" not in ran


async def test_a_call_past_its_deadline_is_an_error_with_the_timeout_outcome(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("get_forever", {})
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[PAYLOAD]) == ("timeout", {"timeout": {"durationMs": 200}})


async def test_invalid_arguments_are_an_error_with_the_invalid_parameters_code(server: str | None, mode: str):
    async with connected(server, mode) as client:
        result = await client.call_tool("get_greeting", {"name": 42})
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], result.meta[CODE]) == ("error", "invalid_parameters")


async def test_an_ask_answered_yes_runs_the_call_once(server: str | None, mode: str):
    asked: list[str] = []
    async with connected(server, mode, answering(True, asked)) as client:
        before = (await runs(client)).count("local_touch")
        result = await client.call_tool("local_touch", {"path": "/tmp/x"})
        after = (await runs(client)).count("local_touch")
    assert (result.is_error, text(result), after - before) == (False, "touched /tmp/x", 1)
    assert len(asked) == 1 and "local_touch" in asked[0]


async def test_an_approval_is_bound_to_its_call_the_next_one_asks_again(server: str | None, mode: str):
    asked: list[str] = []
    async with connected(server, mode, answering(True, asked)) as client:
        await client.call_tool("local_touch", {"path": "/tmp/x"})
        await client.call_tool("local_touch", {"path": "/tmp/x"})
    assert len(asked) == 2


async def test_an_ask_answered_no_is_denied_and_does_not_run(server: str | None, mode: str):
    async with connected(server, mode, answering(False, [])) as client:
        before = (await runs(client)).count("local_touch")
        result = await client.call_tool("local_touch", {"path": "/tmp/x"})
        after = (await runs(client)).count("local_touch")
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], after - before) == ("denied", 0)


async def test_an_ask_the_client_cannot_answer_is_denied(server: str | None, mode: str):
    async with connected(server, mode) as client:  # no elicitation callback: the capability is not declared
        before = (await runs(client)).count("local_touch")
        result = await client.call_tool("local_touch", {"path": "/tmp/x"})
        after = (await runs(client)).count("local_touch")
    assert result.is_error
    assert result.meta is not None
    assert (result.meta[OUTCOME], after - before) == ("denied", 0)
    assert "no one is available to approve it" in text(result)


async def test_a_question_while_the_call_runs_reaches_a_handshake_client(server: str | None):
    asked: list[str] = []
    async with connected(server, LEGACY, answering(True, asked)) as client:
        result = await client.call_tool("get_confirmed", {"item": "the report"})
    assert (text(result), len(asked)) == ("went on", 1)


async def test_a_question_while_the_call_runs_is_no_on_2026_and_the_call_runs_once(server: str | None):
    asked: list[str] = []
    async with connected(server, MODERN, answering(True, asked)) as client:
        before = (await runs(client)).count("get_confirmed")
        result = await client.call_tool("get_confirmed", {"item": "the report"})
        after = (await runs(client)).count("get_confirmed")
    assert (text(result), asked, after - before) == (
        "stopped: a 2026-07-28 MCP client can be asked only before a call runs",
        [],
        1,
    )
