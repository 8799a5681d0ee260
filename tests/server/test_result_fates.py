"""Every client result has one fate, told to both sides, against a real `toolwire serve` over raw frames.

A result is applied (the transcript has it, no 302) or refused (302 at once, the transcript has
what the server decided), never held without an answer; a call the server settles without the
client's result is withdrawn from the client (ToolUseCancel); a client that drops and comes back
within the reconnect grace period loses nothing.
"""

from __future__ import annotations

import sqlite3
import textwrap
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from server_support import TOKEN, Peer, peer, stored_transcript

from serving import Server, serve_app
from toolwire.envelopes import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.protocol import (
    Connection,
    ControlStop,
    ErrorMessage,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseCancel,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from toolwire.testing import validate_transcript

APP_SOURCE = textwrap.dedent(
    """
    import os
    import pathlib

    import anyio

    from toolwire import Agent, ToolCall, tool
    from toolwire.client_tools import ClientToolsConfig
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel

    @tool
    async def wait_for_latch() -> str:
        '''Runs until the test creates the file `latch` (a slow server tool).'''
        while not pathlib.Path("latch").exists():
            await anyio.sleep(0.01)
        return "released"

    def script(request):
        words = [m for m in request.messages if isinstance(m, UserMessage)][-1].content.split()
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if results:
            return " ".join(f"{m.call_id}={m.result.type.name}" for m in results)
        if words[0] == "late":  # a client call that times out while a server tool still runs
            late = ToolCall(id="c_late", name="Echo", arguments={})
            return [late, ToolCall(id="c_slow", name="wait_for_latch", arguments={})]
        count = int(words[1]) if len(words) > 1 else 1
        return [ToolCall(id=f"c{index}", name="Echo", arguments={}) for index in range(count)]

    def make_agent(store):
        config = ClientToolsConfig(
            invoke_timeout=float(os.environ.get("INVOKE_TIMEOUT", "30")),
            reconnect_grace=float(os.environ.get("RECONNECT_GRACE", "10")),
        )
        tools = [wait_for_latch]
        return Agent(FunctionModel(script), tools=tools, store=store, client_tools=config, max_concurrency=64)
    """
)
GROUP: dict[str, Any] = {
    "name": "Tools",
    "description": "Client tools",
    "startCollapsed": False,
    "tools": [{"name": "Echo", "description": "Echo", "parametersSchema": {"type": "object"}}],
}


@contextmanager
def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: float) -> Iterator[Server]:
    for name, value in env.items():
        monkeypatch.setenv(name.upper(), str(value))
    with serve_app(tmp_path, APP_SOURCE, "fatesapp", token=TOKEN) as server:
        yield server


async def start(client: Peer, prompt: str) -> None:
    await client.send(RegisterTools(groups=(GROUP,)))
    await client.until(MessageType.REGISTER_TOOLS_RESULT)
    await client.send(UserMessageBody(id="u1", content=prompt))


async def until_message(client: Peer, kind: type[Any], **fields: Any) -> Any:
    with anyio.fail_after(30):
        while True:
            message = (await client.receive()).message
            if isinstance(message, kind) and all(getattr(message, k) == v for k, v in fields.items()):
                return message


def refusals(client: Peer) -> list[ErrorMessage]:
    return [e.message for e in client.seen if isinstance(e.message, ErrorMessage) and e.message.code == 302]


def outcomes(server: Server, client: Peer) -> dict[str, ResultType]:
    transcript = stored_transcript(server.data_dir, client.connection.conversation_id or "")
    validate_transcript(transcript)
    return {m.call_id: m.result.type for m in transcript if isinstance(m, ToolResultMessage)}


def ok(request_id: str, text: str = "done") -> ToolUseResult:
    return ToolUseResult(id=request_id, success=True, result={"value": text})


async def test_late_and_repeated_results_are_refused_at_once_while_the_batch_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch, invoke_timeout=0.3) as server:
        async with peer(server.url) as client:
            await start(client, "late")
            request: ToolUseRequest = await until_message(client, ToolUseRequest, execution="client")
            notice: ToolUseCancel = await until_message(client, ToolUseCancel)  # its deadline passed
            assert (notice.id, notice.code) == (request.id, "timeout")
            for _ in range(50):  # late, then late again: the batch still runs (c_slow waits)
                await client.send(ok(request.id, "x" * 1000))
            with anyio.fail_after(30):
                while len(refusals(client)) < 50:
                    await client.receive_frame()
            (tmp_path / "latch").touch()
            finished: RunStatus = await until_message(client, RunStatus, status="finished")
    assert all(error.originating_id is not None for error in refusals(client))
    assert finished.output == "c_late=TIMEOUT c_slow=SUCCESS"
    assert outcomes(server, client) == {"c_late": ResultType.TIMEOUT, "c_slow": ResultType.SUCCESS}


async def test_a_second_result_for_an_applied_call_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(tmp_path, monkeypatch) as server:
        async with peer(server.url) as client:
            await start(client, "echo 1")
            request: ToolUseRequest = await until_message(client, ToolUseRequest, execution="client")
            await client.send(ok(request.id, "first"))
            await client.send(ok(request.id, "second"))
            await until_message(client, RunStatus, status="finished")
            with anyio.fail_after(30):
                while not refusals(client):
                    await client.receive_frame()
    [refused] = refusals(client)
    transcript = stored_transcript(server.data_dir, client.connection.conversation_id or "")
    [applied] = [m.result for m in transcript if isinstance(m, ToolResultMessage)]
    assert applied.data == "first" and "no open request" in refused.message


async def test_results_racing_their_deadline_are_either_applied_or_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    count = 40
    with serve(tmp_path, monkeypatch, invoke_timeout=0.4) as server:
        async with peer(server.url) as client:
            await start(client, f"echo {count}")
            answered: dict[str, str] = {}  # request id -> call id
            stanzas: dict[int, str] = {}  # the result's stanza -> request id

            async def answer(request: ToolUseRequest, delay: float) -> None:
                await anyio.sleep(delay)  # the tool's own work: some finish before the deadline, some after
                answered[request.id] = request.call_id or ""
                await client.send(ok(request.id))
                state = client.connection.state()
                assert state is not None
                stanzas[state.next_stanza - 1] = request.id

            async with anyio.create_task_group() as tools:
                with anyio.fail_after(60):
                    while True:
                        envelope = await client.receive()
                        message = envelope.message
                        if isinstance(message, ToolUseRequest) and message.execution == "client":
                            index = int((message.call_id or "c0")[1:])
                            tools.start_soon(answer, message, 0.30 + 0.005 * index)  # around 0.4 s
                        elif isinstance(message, RunStatus) and message.status == "finished":
                            break
            results = outcomes(server, client)
            late = [request_id for request_id, call_id in answered.items() if results[call_id] is ResultType.TIMEOUT]
            with anyio.move_on_after(30):  # every result the deadline beat gets its 302
                while len(refusals(client)) < len(late):
                    await client.receive_frame()
    refused = {stanzas[error.originating_id] for error in refusals(client) if isinstance(error.originating_id, int)}
    unanswered = sorted(answered[request_id] for request_id in set(late) - refused)
    assert unanswered == []  # a late result is refused, or it was applied: never neither
    withdrawn = {e.message.id for e in client.seen if isinstance(e.message, ToolUseCancel)}
    assert len(results) == count and len(answered) == count
    for request_id, call_id in answered.items():
        if results[call_id] is ResultType.SUCCESS:  # applied: never withdrawn, never refused
            assert request_id not in withdrawn
        else:  # the deadline won: withdrawn, and its result refused
            assert results[call_id] is ResultType.TIMEOUT and request_id in withdrawn
    assert refused == set(late)  # and only late results are refused


async def test_a_stopped_run_withdraws_the_call_the_client_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve(tmp_path, monkeypatch) as server:
        async with peer(server.url) as client:
            await start(client, "echo 1")
            request: ToolUseRequest = await until_message(client, ToolUseRequest, execution="client")
            await client.send(ControlStop(reason="the user pressed stop"))
            notice: ToolUseCancel = await until_message(client, ToolUseCancel)
            await until_message(client, RunStatus, status="finished")
    assert (notice.id, notice.code) == (request.id, "canceled")
    assert outcomes(server, client) == {"c0": ResultType.CANCELED}


async def test_a_client_back_within_the_grace_period_delivers_its_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = Connection("client")
    with serve(tmp_path, monkeypatch) as server:  # the default strategy, FallbackMessage
        async with peer(server.url, connection=connection) as client:
            await start(client, "echo 1")
            request: ToolUseRequest = await until_message(client, ToolUseRequest, execution="client")
        # The connection dropped; the tool finishes meanwhile; the client is back a moment later.
        state = connection.state()
        assert state is not None
        connection = Connection.resume(state)
        async with peer(server.url, connection=connection, conversation=connection.conversation_id) as client:
            await client.send(ok(request.id, "opened"))
            finished: RunStatus = await until_message(client, RunStatus, status="finished")
    assert finished.output == "c0=SUCCESS" and refusals(client) == []


async def test_past_the_grace_period_the_strategy_settles_the_call_and_withdraws_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    connection = Connection("client")
    with serve(tmp_path, monkeypatch, reconnect_grace=0.2) as server:
        async with peer(server.url, connection=connection) as client:
            await start(client, "echo 1")
            request: ToolUseRequest = await until_message(client, ToolUseRequest, execution="client")
        with anyio.fail_after(30):
            # The state is in another process: polled. The server settles the call after the grace period.
            while call_state(server, "c0") != "terminal":  # noqa: ASYNC110
                await anyio.sleep(0.05)
        state = connection.state()
        assert state is not None
        connection = Connection.resume(state)
        async with peer(server.url, connection=connection, conversation=connection.conversation_id) as client:
            notice: ToolUseCancel = await until_message(client, ToolUseCancel)  # kept in the outbox for it
            await client.send(ok(request.id, "too late"))
            refused: ErrorMessage = await until_message(client, ErrorMessage, code=302)
    assert (notice.id, notice.code) == (request.id, "client_disconnected")
    assert refused.originating_id is not None
    assert outcomes(server, client) == {"c0": ResultType.ERROR}


def call_state(server: Server, call_id: str) -> str | None:
    with closing(sqlite3.connect(server.data_dir / "toolwire.sqlite3")) as db:
        row = db.execute("SELECT state FROM ledger WHERE call_id = ?", (call_id,)).fetchone()
    return None if row is None else row[0]
