"""Nothing is lost across `kill -9`: the server dies while a client tool call is dispatched."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from server_support import IDE_GROUP, Server, peer, serve, stored_transcript

from toolwire.messages import ToolResultMessage
from toolwire.protocol import (
    Connection,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from toolwire.testing import validate_transcript


async def dispatch_then_kill(server: Server, connection: Connection) -> ToolUseRequest:
    """Chat until the server asks the client to run OpenFile, then kill -9 the server."""
    async with peer(server.url, connection=connection) as client:
        await client.send(RegisterTools(groups=(IDE_GROUP,)))
        await client.until(MessageType.REGISTER_TOOLS_RESULT)
        await client.send(UserMessageBody(id="u1", content="Open the config file"))
        request = (await client.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
        server.kill()
    assert isinstance(request, ToolUseRequest)
    return request


def resumed(connection: Connection) -> Connection:
    """The client's end for a new socket, continuing the numbering and keeping its outbox."""
    state = connection.state()
    assert state is not None
    return Connection.resume(state)


async def test_after_a_restart_a_client_that_kept_its_state_answers_the_request_it_has(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        request = await dispatch_then_kill(first, connection)
    connection = resumed(connection)  # it acknowledged the request: it has it, and runs it
    with serve(tmp_path, data_dir=first.data_dir) as second:
        async with peer(second.url, connection=connection, conversation=connection.conversation_id) as client:
            await client.send(ToolUseResult(id=request.id, success=True, result={"value": "opened config.toml"}))
            finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.output == "Done: opened config.toml"
    resent = [e for e in client.seen if isinstance(e.message, ToolUseRequest) and e.message.execution == "client"]
    assert resent == []  # not sent twice: a client without an execution ledger would run it twice
    transcript = stored_transcript(second.data_dir, connection.conversation_id or "")
    validate_transcript(transcript)
    assert [m.call_id for m in transcript if isinstance(m, ToolResultMessage)] == ["c_expand", "c_weather", "c_open"]


async def test_after_a_restart_a_client_that_lost_its_state_is_sent_the_request_again(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        request = await dispatch_then_kill(first, connection)
    conversation = connection.conversation_id
    with serve(tmp_path, data_dir=first.data_dir) as second:
        async with peer(second.url, conversation=conversation) as client:  # a new device: nothing kept
            again = (await client.until(MessageType.TOOL_USE_REQUEST, execution="client")).message
            assert isinstance(again, ToolUseRequest) and again.id == request.id  # the same request id
            await client.send(ToolUseResult(id=again.id, success=True, result={"value": "opened config.toml"}))
            finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.output == "Done: opened config.toml"


async def test_the_ledger_says_dispatched_once_the_request_is_persisted_to_be_sent(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        request = await dispatch_then_kill(first, connection)
    with closing(sqlite3.connect(first.data_dir / "toolwire.sqlite3")) as db:
        row = db.execute("SELECT state, request_id FROM ledger WHERE call_id = 'c_open'").fetchone()
    assert row == ("dispatched", request.id)  # written with the outbox that holds the request


async def test_a_result_the_client_kept_while_the_server_was_down_is_applied_once(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        request = await dispatch_then_kill(first, connection)
    # The client ran the tool while the server was down: its result waits in its outbox.
    connection = resumed(connection)
    connection.send(ToolUseResult(id=request.id, success=True, result={"value": "opened while away"}))
    with serve(tmp_path, data_dir=first.data_dir) as second:
        async with peer(second.url, connection=connection, conversation=connection.conversation_id) as client:
            finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.output == "Done: opened while away"
    refused = [e for e in client.seen if e.message.type == MessageType.ERROR]
    assert refused == []
    transcript = stored_transcript(second.data_dir, connection.conversation_id or "")
    assert len([m for m in transcript if isinstance(m, ToolResultMessage) and m.call_id == "c_open"]) == 1
