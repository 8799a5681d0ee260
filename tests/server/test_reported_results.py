"""The model sees what the client reported: a live `toolwire serve`, answered over raw frames."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import msgpack
import pytest
from server_support import IDE_GROUP, TOKEN, Peer, peer

from serving import Server, serve_app
from toolwire.protocol import (
    ErrorCode,
    ErrorMessage,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)

# The model calls the client's OpenFile (or, asked to "query", the server's query tool, which
# fails), then answers with what it was given, as JSON.
APP = """
import json
from toolwire import Agent, ToolCall, tool
from toolwire.client_tools import ClientToolsConfig
from toolwire.messages import UserMessage
from toolwire.testing import FunctionModel

@tool
async def query() -> str:
    \"\"\"Query the database.\"\"\"
    raise RuntimeError("database password=hunter2 exploded")

def script(request):
    last = request.messages[-1]
    if isinstance(last, UserMessage) and last.content == "query":
        return [ToolCall(id="c_query", name="query", arguments={})]
    if isinstance(last, UserMessage):
        return [ToolCall(id="c_open", name="OpenFile", arguments={"path": "a.txt"})]
    result = last.result
    return json.dumps({"type": result.type.name, "payload": result.payload(), "code": result.wire_code})

def make_agent(store):
    config = ClientToolsConfig(collapse_client_tools=False, invoke_timeout=20)
    return Agent(FunctionModel(script), tools=[query], store=store, client_tools=config)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with serve_app(tmp_path_factory.mktemp("reported"), APP, "reportedapp", token=TOKEN) as running:
        yield running


async def open_request(client: Peer) -> ToolUseRequest:
    """Register the IDE tools and ask: the model calls OpenFile, which the server sends here."""
    await client.send(RegisterTools(groups=(IDE_GROUP,)))
    await client.until(MessageType.REGISTER_TOOLS_RESULT)
    await client.send(UserMessageBody(id="u1", content="Open a.txt"))
    request = (await client.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
    assert isinstance(request, ToolUseRequest)
    return request


async def what_the_model_saw(client: Peer) -> dict[str, Any]:
    finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.output is not None
    return json.loads(finished.output)


async def answer(server: Server, **fields: Any) -> dict[str, Any]:
    async with peer(server.url) as client:
        request = await open_request(client)
        await client.send(ToolUseResult(id=request.id, **fields))
        return await what_the_model_saw(client)


async def test_a_denial_the_client_reports_under_its_own_code_reaches_the_model_as_denied(server: Server) -> None:
    seen = await answer(server, success=False, error_code="policy_x", error_message="blocked by X", result_type=4)
    assert seen == {
        "type": "DENIED",
        "payload": {"denied": {"tool": "OpenFile", "reason": "blocked by X"}},
        "code": "policy_x",
    }


async def test_a_client_timeout_reaches_the_model_with_the_clients_duration(server: Server) -> None:
    message = "Tool execution exceeded timeout of 5000ms"  # seed 001's example
    seen = await answer(server, success=False, error_code="timeout", error_message=message)
    assert seen["payload"] == {"timeout": {"durationMs": 5000}}


async def test_a_client_timeout_takes_a_structured_duration(server: Server) -> None:
    payload = {"timeout": {"durationMs": 1500}}
    seen = await answer(server, success=False, error_code="timeout", error_message="too slow", result=payload)
    assert seen["payload"] == {"timeout": {"durationMs": 1500}}


async def test_a_client_timeout_is_effect_unknown_when_the_client_says_so(server: Server) -> None:
    payload = {"timeout": {"durationMs": 1500, "effectUnknown": True}}
    seen = await answer(server, success=False, error_code="timeout", error_message="too slow", result=payload)
    assert seen["payload"] == payload


# -- a result the server cannot read ---------------------------------------------------------------


def raw_result(client: Peer, body: dict[str, Any]) -> bytes:
    """A ToolUseResult frame numbered as the peer's next stanza, with `body` exactly as given."""
    frame = msgpack.unpackb(client.connection.send(ToolUseResult(id="placeholder", success=True)))
    packed = msgpack.packb({**frame, "body": body})
    assert isinstance(packed, bytes)
    return packed


UNREADABLE = [
    {"success": False, "errorCode": "policy_x", "resultType": 9},
    {"success": True, "result": "opened a.txt"},
]
UNREADABLE_IDS = ["result-type-out-of-range", "result-not-a-map"]


@pytest.mark.parametrize("fields", UNREADABLE, ids=UNREADABLE_IDS)
async def test_an_unreadable_result_ends_the_call_at_once_as_invalid_result(
    server: Server, fields: dict[str, Any]
) -> None:
    async with peer(server.url) as client:
        request = await open_request(client)
        with anyio.fail_after(10):  # the call's own deadline is 20 s away
            await client.socket.send(raw_result(client, {"id": request.id, **fields}))
            seen = await what_the_model_saw(client)
    assert (seen["type"], seen["code"]) == ("ERROR", "invalid_result")


@pytest.mark.parametrize(
    ("fields", "why"),
    list(zip(UNREADABLE, ["ToolUseResult.resultType must be", "ToolUseResult.result must be a map"], strict=True)),
    ids=UNREADABLE_IDS,
)
async def test_the_client_is_told_why_its_result_was_refused(server: Server, fields: dict[str, Any], why: str) -> None:
    async with peer(server.url) as client:
        request = await open_request(client)
        await client.socket.send(raw_result(client, {"id": request.id, **fields}))
        refusal = (await client.until(MessageType.ERROR)).message
    assert isinstance(refusal, ErrorMessage) and refusal.code == ErrorCode.INVALID_MESSAGE
    assert refusal.message.startswith(why)


async def test_an_unreadable_result_for_no_open_request_gets_one_error_message(server: Server) -> None:
    async with peer(server.url) as client:
        await client.socket.send(raw_result(client, {"id": "req_nobody", "success": True, "result": "x"}))
        await client.send(ToolUseResult(id="req_marker", success=True))  # refused with 302, after the first
        errors: list[ErrorMessage] = []
        while not errors or "req_marker" not in errors[-1].message:
            error = (await client.until(MessageType.ERROR)).message
            assert isinstance(error, ErrorMessage)
            errors.append(error)
    assert [error.code for error in errors] == [ErrorCode.INVALID_MESSAGE, ErrorCode.RESULT_REFUSED]


# -- errors do not leak ------------------------------------------------------------------------------


async def test_an_unexpected_exceptions_text_reaches_neither_the_client_nor_the_model(server: Server) -> None:
    async with peer(server.url) as client:
        await client.send(UserMessageBody(id="u1", content="query"))
        seen = await what_the_model_saw(client)
    [mirrored] = [envelope.message for envelope in client.seen if isinstance(envelope.message, ToolUseResult)]
    assert "hunter2" not in f"{mirrored.error_message} {seen}"
    assert re.fullmatch(r"RuntimeError \(error id e_[0-9a-f]{8}\)", mirrored.error_message or "")


# -- the value and the augmentation of a success -------------------------------------------------------


async def test_content_items_alone_are_the_value_the_model_sees(server: Server) -> None:
    seen = await answer(server, success=True, content=({"type": "json", "value": {"lines": 120}},))
    assert seen == {"type": "SUCCESS", "payload": {"lines": 120}, "code": None}


async def test_an_augmentation_that_fails_the_registration_checks_is_dropped_not_the_result(server: Server) -> None:
    bad = {"injectToolGroups": [{"name": "", "functions": "none"}]}
    seen = await answer(server, success=True, result={"value": "opened"}, augmentation=bad)
    assert seen == {"type": "SUCCESS", "payload": "opened", "code": None}
