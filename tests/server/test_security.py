"""Results and conversations are bound to their principal: foreign, replayed and stolen input is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import IDE_GROUP, OTHER_TOKEN, TOKEN, Peer, Server, peer, serve

from toolwire.protocol import (
    ErrorMessage,
    MessageType,
    RegisterTools,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob {OTHER_TOKEN}\n")
    with serve(tmp_path, "--tokens", str(tokens)) as running:
        yield running


async def pending_request(client: Peer) -> ToolUseRequest:
    await client.send(RegisterTools(groups=(IDE_GROUP,)))
    await client.until(MessageType.REGISTER_TOOLS_RESULT)
    await client.send(UserMessageBody(id="u1", content="Open the config file"))
    request = (await client.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
    assert isinstance(request, ToolUseRequest)
    return request


async def test_a_result_for_another_principals_request_is_refused_and_not_applied(server: Server) -> None:
    async with peer(server.url) as alice:
        request = await pending_request(alice)
        async with peer(server.url, token=OTHER_TOKEN) as bob:
            await bob.send(ToolUseResult(id=request.id, success=True, result={"value": "forged"}))
            refused = (await bob.until(MessageType.ERROR)).message
        assert isinstance(refused, ErrorMessage) and refused.code == 302
        await alice.send(ToolUseResult(id=request.id, success=True, result={"value": "opened"}))
        finished = (await alice.until(MessageType.RUN_STATUS, status="finished")).message
    assert finished.output == "Done: opened"  # type: ignore[union-attr]


async def test_a_replayed_result_is_refused_once_the_call_has_its_result(server: Server) -> None:
    async with peer(server.url) as alice:
        request = await pending_request(alice)
        answer = ToolUseResult(id=request.id, success=True, result={"value": "opened"})
        await alice.send(answer)
        await alice.until(MessageType.RUN_STATUS, status="finished")
        await alice.send(answer)  # a new stanza carrying the same result
        refused = (await alice.until(MessageType.ERROR)).message
    assert isinstance(refused, ErrorMessage) and refused.code == 302


async def test_a_conversation_of_another_principal_cannot_be_resumed(server: Server) -> None:
    async with peer(server.url) as alice:
        conversation = alice.connection.conversation_id
    with pytest.raises(AssertionError, match="202"):
        async with peer(server.url, token=OTHER_TOKEN, conversation=conversation):
            pass


async def test_an_unknown_conversation_cannot_be_resumed(server: Server) -> None:
    with pytest.raises(AssertionError, match="201"):
        async with peer(server.url, conversation="conv_" + "0" * 32):
            pass


async def test_a_malformed_frame_gets_one_error_and_the_connection_stays_usable(server: Server) -> None:
    async with peer(server.url) as alice:
        await alice.socket.send(b"\xc1 not msgpack")
        refused = (await alice.until(MessageType.ERROR)).message
        assert isinstance(refused, ErrorMessage) and (refused.code, refused.recoverable) == (101, True)
        await alice.send(RegisterTools(groups=(IDE_GROUP,)))
        registered = (await alice.until(MessageType.REGISTER_TOOLS_RESULT)).message
    assert registered.ok  # type: ignore[union-attr]
