"""An Ask on the 2026-07-28 generation: `input_required`, then the retry with the answer and the sealed state.

The client drives the rounds by hand here (`allow_input_required=True`), in process against
`build_server`, and across two `toolwire mcp serve --http` processes that share a key.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

pytest.importorskip("mcp")

import mcp.types as types
from mcp.client.client import Client
from mcp.client.context import ClientRequestContext
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

from toolwire import UsageError
from toolwire.interop.mcp_consent import APPROVAL_KEY, request_state_security
from toolwire.interop.mcp_serve import build_server

from .mcp_app import factory
from .peers import MODERN, STATE_KEY, connected, http_server, runs, server_environment, text

YES: types.InputResponses = {APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": True})}
NO: types.InputResponses = {APPROVAL_KEY: types.ElicitResult(action="accept", content={"approve": False})}
ARGUMENTS = {"path": "/tmp/x"}


async def never(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("these tests answer by hand")


@asynccontextmanager
async def client_of(security: RequestStateSecurity | None = None) -> AsyncIterator[Client]:
    """A 2026-07-28 client that declares elicitation, in process with a fresh server."""
    server = build_server(factory(), request_state=security)
    async with Client(server, mode=MODERN, elicitation_callback=never) as client:
        yield client


async def ask(client: Client, arguments: dict[str, str] = ARGUMENTS) -> types.InputRequiredResult:
    first = await client.session.call_tool("local_touch", arguments, allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    return first


async def answer(
    client: Client, state: str | None, responses: types.InputResponses, arguments: dict[str, str] = ARGUMENTS
) -> types.CallToolResult | types.InputRequiredResult:
    return await client.session.call_tool(
        "local_touch", arguments, input_responses=responses, request_state=state, allow_input_required=True
    )


async def test_the_question_is_an_elicitation_form_with_one_boolean():
    async with client_of() as client:
        first = await ask(client)
    assert first.input_requests is not None
    request = first.input_requests[APPROVAL_KEY]
    assert isinstance(request, types.ElicitRequest)
    assert isinstance(request.params, types.ElicitRequestFormParams)
    assert request.params.requested_schema["properties"]["approve"]["type"] == "boolean"
    assert "local_touch" in request.params.message


async def test_the_state_is_opaque():
    async with client_of() as client:
        first = await ask(client)
    assert first.request_state is not None
    assert "mcp_" not in first.request_state


async def test_asking_does_not_run_the_call():
    async with client_of() as client:
        before = await runs(client)
        await ask(client)
        after = await runs(client)
    assert after == before


async def test_the_retry_with_a_yes_runs_the_call():
    async with client_of() as client:
        first = await ask(client)
        result = await answer(client, first.request_state, YES)
    assert isinstance(result, types.CallToolResult)
    assert (result.is_error, text(result)) == (False, "touched /tmp/x")


async def test_the_retry_with_a_no_is_denied():
    async with client_of() as client:
        first = await ask(client)
        result = await answer(client, first.request_state, NO)
    assert isinstance(result, types.CallToolResult)
    assert result.meta is not None
    assert (result.is_error, result.meta["dev.toolwire/outcome"]) == (True, "denied")


async def test_a_state_is_answered_once():
    async with client_of() as client:
        first = await ask(client)
        await answer(client, first.request_state, YES)
        with pytest.raises(MCPError, match="answered already"):
            await answer(client, first.request_state, YES)


async def test_a_retry_without_the_answer_asks_again():
    async with client_of() as client:
        first = await ask(client)
        again = await answer(client, first.request_state, {})
    assert isinstance(again, types.InputRequiredResult)


async def test_the_state_does_not_approve_other_arguments():
    async with client_of() as client:
        first = await ask(client)
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await answer(client, first.request_state, YES, {"path": "/etc/passwd"})


async def test_an_altered_state_is_refused():
    async with client_of() as client:
        first = await ask(client)
        assert first.request_state is not None
        altered = first.request_state[:-4] + ("AAAA" if not first.request_state.endswith("AAAA") else "BBBB")
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await answer(client, altered, YES)


async def test_a_forged_state_is_refused():
    async with client_of() as client:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await answer(client, '{"call": "mcp_1", "thread": "mcp_2"}', YES)


async def test_a_state_sealed_under_another_key_is_refused():
    async with client_of(RequestStateSecurity(keys=["a" * 32])) as one:
        first = await ask(one)
    async with client_of(RequestStateSecurity(keys=["b" * 32])) as other:
        with pytest.raises(MCPError, match="Invalid or expired requestState"):
            await answer(other, first.request_state, YES)


async def test_a_server_with_the_same_key_accepts_the_state():
    async with client_of(request_state_security([STATE_KEY])) as one:
        first = await ask(one)
    async with client_of(request_state_security([STATE_KEY])) as other:
        result = await answer(other, first.request_state, YES)
    assert isinstance(result, types.CallToolResult)
    assert text(result) == "touched /tmp/x"


async def test_a_second_process_with_the_same_key_runs_the_call_the_first_asked_about():
    environment = server_environment(TOOLWIRE_MCP_STATE_KEY=STATE_KEY)
    with http_server(environment=environment) as one, http_server(environment=environment) as other:
        async with connected(one, MODERN, never) as client:
            first = await ask(client)
        async with connected(other, MODERN, never) as client:
            result = await answer(client, first.request_state, YES)
            ran = await runs(client)
    assert isinstance(result, types.CallToolResult)
    assert (text(result), ran) == ("touched /tmp/x", ["local_touch"])


def test_a_short_key_is_refused_with_how_to_make_one():
    with pytest.raises(UsageError, match="TOOLWIRE_MCP_STATE_KEY.*secrets.token_hex"):
        request_state_security(environment={"TOOLWIRE_MCP_STATE_KEY": "short"})


def test_keys_are_read_from_the_environment_first_one_sealing():
    security = request_state_security(environment={"TOOLWIRE_MCP_STATE_KEY": f"{'a' * 32}, {'b' * 32}"})
    opener = request_state_security(["b" * 32, "a" * 32])
    assert opener.codec.unseal(security.codec.seal(b"state")) == b"state"
