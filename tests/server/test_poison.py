"""A run whose resume keeps taking the server down is closed, not replayed forever; operators can close one.

The app's filter ends the process (as a native crash would) whenever the client tool `Explode`
is about to run: the first run dies there, and so does every resume of it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
from server_support import TOKEN, peer, stored_transcript
from websockets.exceptions import ConnectionClosed

from serving import Server, serve_app
from toolwire.envelopes import ResultType
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

APP_SOURCE = textwrap.dedent(
    """
    import os
    from toolwire import Agent, ToolCall
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel

    async def explode(ctx, call_next):
        if ctx.tool_call.name == "Explode":
            os._exit(139)  # what a native crash (SIGSEGV) does to the process
        await call_next(ctx)

    def script(request):
        prompt = [m for m in request.messages if isinstance(m, UserMessage)][-1].content
        if isinstance(request.messages[-1], ToolResultMessage):
            return "done: " + request.messages[-1].result.type.name
        if prompt == "explode":
            return [ToolCall(id="c_boom", name="Explode", arguments={})]
        if prompt == "open":
            return [ToolCall(id="c_open", name="OpenFile", arguments={})]
        return "hello"

    def make_agent(store):
        return Agent(FunctionModel(script), store=store, filters=[explode])
    """
)
GROUP: dict[str, Any] = {
    "name": "Tools",
    "description": "Client tools",
    "startCollapsed": False,
    "tools": [
        {"name": "Explode", "description": "Crashes the server", "parametersSchema": {"type": "object"}},
        {"name": "OpenFile", "description": "Open a file", "parametersSchema": {"type": "object"}},
    ],
}


def serve(tmp_path: Path, data_dir: Path | None = None):
    return serve_app(tmp_path, APP_SOURCE, "poisonapp", token=TOKEN, data_dir=data_dir)


async def start(server: Server, connection: Connection, prompt: str) -> None:
    async with peer(server.url, connection=connection) as client:
        await client.send(RegisterTools(groups=(GROUP,)))
        await client.until(MessageType.REGISTER_TOOLS_RESULT)
        await client.send(UserMessageBody(id="u1", content=prompt))
        if prompt == "explode":
            with anyio.fail_after(30), suppress(ConnectionClosed):
                while True:  # until the server dies under the client
                    await client.receive_frame()
        else:
            await client.until(MessageType.TOOL_USE_REQUEST, execution="client")
            server.kill()  # the client has the request when the server dies (before the client leaves)


def resumed(connection: Connection) -> Connection:
    state = connection.state()
    assert state is not None
    return Connection.resume(state)


async def reconnect(server: Server, connection: Connection) -> RunStatus | None:
    """Reconnect; the run status the server ends its resume with (None if it died first)."""
    async with peer(server.url, connection=connection, conversation=connection.conversation_id) as client:
        with anyio.fail_after(30):
            while True:
                try:
                    await client.receive_frame()
                except ConnectionClosed:  # the server died under the client
                    return None
                for envelope in client.seen:
                    message = envelope.message
                    if isinstance(message, RunStatus) and message.status in ("finished", "failed"):
                        return message


async def test_a_resume_that_keeps_crashing_the_server_is_closed_after_three_attempts(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        await start(first, connection, "explode")
        assert first.process.wait(timeout=10) == 139
    data = first.data_dir
    for _ in range(3):  # each restart resumes the run, which dies at the same call
        connection = resumed(connection)
        with serve(tmp_path, data) as again:
            assert await reconnect(again, connection) is None
            assert again.process.wait(timeout=10) == 139
    connection = resumed(connection)
    with serve(tmp_path, data) as fourth:
        closed = await reconnect(fourth, connection)
        assert closed is not None and closed.reason == "canceled"
        assert closed.detail is not None and "could not be resumed (3 attempts" in closed.detail
        assert fourth.process.poll() is None  # it stays up
    transcript = stored_transcript(data, connection.conversation_id or "")
    validate_transcript(transcript)
    [boom] = [m.result for m in transcript if isinstance(m, ToolResultMessage)]
    assert (boom.type, boom.payload()["canceled"]["by"]) == (ResultType.CANCELED, "system")
    assert "could not be resumed" in boom.payload()["canceled"]["reason"]
    connection = resumed(connection)
    with serve(tmp_path, data) as fifth:  # restarts stop replaying it: a new message just runs
        async with peer(fifth.url, connection=connection, conversation=connection.conversation_id) as client:
            await client.send(UserMessageBody(id="u2", content="hi"))
            finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.output == "hello"
    started = [e for e in client.seen if isinstance(e.message, RunStatus) and e.message.status == "started"]
    assert len(started) == 1  # only the new message's run: nothing was resumed


def conversations(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "toolwire.cli", "conversations", *arguments]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)


async def test_an_operator_lists_and_cancels_an_unfinished_conversation(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        await start(first, connection, "open")
    data, conversation = first.data_dir, connection.conversation_id or ""
    listed = conversations("list", "--data-dir", str(data), cwd=tmp_path)
    assert listed.returncode == 0
    [row] = [line.split() for line in listed.stdout.splitlines() if line.startswith(conversation)]
    assert row == [conversation, "default", "2", "unfinished", "1"]  # the prompt and the call
    canceled = conversations("cancel", conversation, "--data-dir", str(data), "--reason", "Abandoned", cwd=tmp_path)
    assert canceled.returncode == 0, canceled.stderr
    assert "1 open call(s) canceled" in canceled.stdout and "c_open OpenFile: CANCELED" in canceled.stdout
    transcript = stored_transcript(data, conversation)
    validate_transcript(transcript)
    assert [m.result.payload() for m in transcript if isinstance(m, ToolResultMessage)] == [
        {"canceled": {"reason": "Abandoned", "by": "system"}}
    ]
    with serve(tmp_path, data) as second:  # nothing is resumed, nothing sent again
        async with peer(second.url, connection=resumed(connection), conversation=conversation) as client:
            await client.send(UserMessageBody(id="u2", content="hi"))
            await client.until(MessageType.RUN_STATUS, status="finished")
    assert not [e for e in client.seen if isinstance(e.message, (ToolUseRequest, ToolUseResult))]


async def test_cancel_refuses_while_a_server_uses_the_data_directory(tmp_path: Path) -> None:
    connection = Connection("client")
    with serve(tmp_path) as first:
        await start(first, connection, "open")
    with serve(tmp_path, first.data_dir) as server:
        refused = conversations(
            "cancel", connection.conversation_id or "", "--data-dir", str(server.data_dir), cwd=tmp_path
        )
        assert server.process.poll() is None
    assert refused.returncode == 2
    assert (
        refused.stderr.startswith("toolwire: another toolwire serve is using") and len(refused.stderr.splitlines()) == 1
    )


def test_cancel_of_an_unknown_conversation_fails_with_one_line(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        data = server.data_dir
    done = conversations("cancel", "conv_nope", "--data-dir", str(data), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (2, f"toolwire: no conversation 'conv_nope' in {data}\n")


def test_a_second_server_on_one_data_directory_is_refused(tmp_path: Path) -> None:
    with serve(tmp_path) as first:
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--app", "poisonapp:make_agent", "--port", "0"]
        command += ["--data-dir", str(first.data_dir), "--token", TOKEN]
        second = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert first.process.poll() is None
    assert second.returncode == 2 and "serving" not in second.stdout
    assert second.stderr.startswith("toolwire: another toolwire serve is using")
