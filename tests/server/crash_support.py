"""A client that keeps no execution ledger, and the agent it talks to, for the kill -9 and stop tests.

The client runs every client tool request it is sent (it cannot tell a re-sent request from a new
one), so a call that the server asks for twice runs twice: what invariants I5 and I7 forbid.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import anyio
from server_support import TOKEN, Peer, peer

from toolwire.protocol import (
    Connection,
    ConsentAnswerBody,
    ConsentRequestBody,
    Envelope,
    MessageType,
    RegisterTools,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)

# The model asks for the batch its first user message names, then answers with what came back.
APP_SOURCE = textwrap.dedent(
    """
    import os

    import anyio

    from toolwire import Agent, ToolCall
    from toolwire.client_tools import ClientToolsConfig
    from toolwire.messages import AssistantMessage, ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel

    BATCHES = {
        "delete": [ToolCall(id="c_delete", name="DeleteFile", arguments={"path": "old.txt"})],
        "mixed": [
            ToolCall(id="c_delete", name="DeleteFile", arguments={"path": "old.txt"}),
            ToolCall(id="c_bad", name="OpenFile", arguments={}),
            ToolCall(id="c_open", name="OpenFile", arguments={"path": "a.txt"}),
        ],
        "two": [
            ToolCall(id="c_open", name="OpenFile", arguments={"path": "a.txt"}),
            ToolCall(id="c_slow", name="OpenFile", arguments={"path": "slow.txt"}),
        ],
        "one": [ToolCall(id="c_open", name="OpenFile", arguments={"path": "a.txt"})],
    }

    def script(request):
        prompt = next(m.content for m in request.messages if isinstance(m, UserMessage))
        results = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if not results:
            return BATCHES[prompt]
        return "; ".join(f"{m.call_id}={m.result.type.name}" for m in results)

    def make_agent(store):
        crash_at(store, os.environ.get("CRASH_AT"))
        return Agent(FunctionModel(script), store=store, client_tools=ClientToolsConfig(invoke_timeout=60))

    def crash_at(store, point):
        # End the process (as kill -9 would) at a named point of a call's life.
        if point == "after the write-ahead":  # the batch is in the ledger; nothing of it has run
            record_batch = store.record_batch

            async def recorded(*args, **kwargs):
                await record_batch(*args, **kwargs)
                os._exit(137)

            store.record_batch = recorded
        elif point == "as the answer arrives":  # read from the socket, not saved yet
            save_wire_state = store.save_wire_state

            async def saving(thread_id, state, *, dispatched=(), answered=None, appended=()):
                if answered:
                    os._exit(137)
                return await save_wire_state(
                    thread_id, state, dispatched=dispatched, answered=answered, appended=appended
                )

            store.save_wire_state = saving
        elif point in ("as the run begins", "held as the run begins"):
            # The prompt's frame was seen and saved; the run has not read its transcript yet.
            # (The first load_run is the connection's check for an unfinished run; the second, the run's.)
            load_run, loads = store.load_run, []

            async def loading(thread_id):
                loads.append(thread_id)
                if len(loads) == 2:
                    if point == "as the run begins":
                        os._exit(137)
                    await anyio.sleep_forever()  # until a graceful stop parks the run
                return await load_run(thread_id)

            store.load_run = loading
        elif point in ("as the run ends", "held as the run ends"):
            # The answer is in the transcript; the RunStatus that says so is not saved yet.
            append_messages = store.append_messages

            async def appending(thread_id, messages):
                await append_messages(thread_id, messages)
                if any(isinstance(m, AssistantMessage) and not m.tool_calls for m in messages):
                    if point == "as the run ends":
                        os._exit(137)
                    open(os.environ["CRASH_MARK"], "w").close()  # (the test waits for it)
                    await anyio.sleep_forever()  # until a graceful stop parks the run

            store.append_messages = appending
    """
)

FILES_GROUP: dict[str, Any] = {
    "name": "Files",
    "description": "The user's files",
    "startCollapsed": False,
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file",
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
        {
            "name": "DeleteFile",
            "description": "Delete a file",
            "requiresPermission": True,
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    ],
}


@dataclass
class LedgerlessClient:
    """The client's side across server restarts: its protocol state and what it ran."""

    connection: Connection = field(default_factory=lambda: Connection("client"))
    executions: Counter[str] = field(default_factory=Counter[str])
    """Per call id, how many times the client ran it."""
    requests: list[ToolUseRequest] = field(default_factory=list[ToolUseRequest])
    consents: list[ConsentRequestBody] = field(default_factory=list[ConsentRequestBody])
    ran_after_consent: dict[str, int] = field(default_factory=dict[str, int])
    """Per call id, how many consent prompts for it had been allowed when it ran."""
    allowed: Counter[str] = field(default_factory=Counter[str])
    running: dict[str, ToolUseRequest] = field(default_factory=dict[str, ToolUseRequest])
    """Requests received and still running (held), by call id: they finish in a later `converse`."""

    def resumed(self) -> LedgerlessClient:
        """The same client on a new socket: its numbering and unacknowledged frames kept."""
        state = self.connection.state()
        assert state is not None
        self.connection = Connection.resume(state)
        return self

    def connect(self, url: str) -> AbstractAsyncContextManager[Peer]:
        return peer(url, token=TOKEN, connection=self.connection, conversation=self.connection.conversation_id)

    async def start(self, client: Peer, prompt: str) -> None:
        """Register the Files group, then send `prompt` (a batch name of the app)."""
        await client.send(RegisterTools(groups=(FILES_GROUP,)))
        await client.until(MessageType.REGISTER_TOOLS_RESULT)
        await client.send(UserMessageBody(id="u1", content=prompt))

    async def converse(
        self,
        client: Peer,
        *,
        until: Callable[[Envelope], bool],
        consent: Callable[[ConsentRequestBody], bool] = lambda request: True,
        hold: Collection[str] = (),
    ) -> Envelope:
        """Answer requests and consent prompts until a message matches `until`; return it.

        Calls in `hold` keep running (a slow tool): they are answered by a later `converse`
        without them in `hold`, which first finishes what is running. A message that matches
        `until` is returned before it is acted on, except that a request starts running.
        """
        for call_id in [call_id for call_id in self.running if call_id not in hold]:
            await self.finish(client, self.running.pop(call_id))
        with anyio.fail_after(30):
            while True:
                envelope = await client.receive()
                if until(envelope):
                    if isinstance(request := envelope.message, ToolUseRequest) and request.execution == "client":
                        self.requests.append(request)
                        self.running[request.call_id or ""] = request
                    return envelope
                match envelope.message:
                    case ToolUseRequest(execution="client", call_id=call_id) as request if call_id not in hold:
                        self.requests.append(request)
                        await self.finish(client, request)
                    case ToolUseRequest(execution="client", call_id=call_id) as request:
                        self.requests.append(request)
                        self.running[call_id or ""] = request
                    case ConsentRequestBody() as request:
                        self.consents.append(request)
                        allow = consent(request)
                        if allow:
                            self.allowed[request.call_id] += 1
                        await client.send(ConsentAnswerBody(id=request.id, allow=allow))
                    case _:
                        pass

    async def finish(self, client: Peer, request: ToolUseRequest) -> None:
        """Run a request's tool and send its result."""
        call_id = request.call_id or ""
        self.executions[call_id] += 1
        self.ran_after_consent[call_id] = self.allowed[call_id]
        await client.send(ToolUseResult(id=request.id, success=True, result={"value": f"ran {call_id}"}))

    async def wait_acknowledged(self, client: Peer) -> None:
        """Read frames until the server has acknowledged everything this client sent."""
        with anyio.fail_after(30):
            while self.outbox():
                await client.receive_frame()

    def outbox(self) -> list[int]:
        state = self.connection.state()
        assert state is not None
        return [stanza for stanza, _ in state.outbox]
