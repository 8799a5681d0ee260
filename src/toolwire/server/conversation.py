"""`ServerConversation`: one conversation (a thread) on the server, across its connections.

It owns the server end of the protocol (`Connection`, whose numbering and unacknowledged frames
are saved in the store before each frame is written), the live socket if a client is connected,
the agent run in progress, and the client's side of the thread's client tools (`ClientChannel`):

```
agent run ──► events ──► StartAnswer, AssistantSentence…, ToolUseRequest/Result (server tools,
              mirrored for transparency), AssistantMessage, RunStatus
client tool call ──► ToolUseRequest(execution="client") ──► client ──► ToolUseResult ──► hub.deliver
consent ──► ConsentRequest ──► client ──► ConsentAnswer
```
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..client_tools.definitions import ClientToolRequest
from ..errors import ClientDisconnected, ProviderError, RegistrationError
from ..events import RunEvent, RunFinished
from ..loop import Agent
from ..models import TextDelta
from ..pipeline import ToolCallFinished, ToolCallStarted
from ..policy import ConsentAnswer as PolicyConsentAnswer
from ..policy import ConsentRequest as PolicyConsentRequest
from ..protocol import (
    AssistantMessage,
    AssistantSentence,
    Connection,
    ConsentAnswer,
    ConsentRequest,
    Message,
    RunState,
    RunStatus,
    Sequencing,
    StartAnswer,
    ToolUseRequest,
    ToolUseResult,
)
from ..tools import Cancellation

__all__ = ["ServerConversation"]

_log = logging.getLogger("toolwire.server")

Writer = Callable[[bytes], Awaitable[None]]
"""Writes one frame to the live socket; raises when the socket is gone."""


class ServerConversation:
    """A conversation's server side: protocol state, live socket, run, client channel."""

    def __init__(self, agent: Agent, thread_id: str, principal: str, state: Sequencing | None) -> None:
        self.agent = agent
        self.thread_id = thread_id
        self.principal = principal
        self.connection = (
            Connection.resume(state)
            if state is not None
            else Connection.resume(Sequencing(role="server", conversation_id=thread_id))
        )
        self._writer: Writer | None = None
        self._saved: tuple[int, int, int, int] | None = None
        """The `Connection.revision` the last `save()` wrote (its [1] is the last stanza seen)."""
        self._saving: _Save | None = None
        """The latest save in progress."""
        self._send_lock = anyio.Lock()
        self._unwritten: list[bytes] = []
        self._run: Cancellation | None = None
        self._consents: dict[str, tuple[anyio.Event, list[ConsentAnswer]]] = {}
        self.registering = False
        """A RegisterTools is being applied (one at a time per conversation)."""
        self.dispatched: set[str] = set()
        """Client calls of the current run whose requests went to the client (by call id)."""
        self.channel = _Channel(self)
        """What the agent's `ClientHub` sends this conversation's client tool calls and consents to."""

    # -- the socket ----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a client is connected."""
        return self._writer is not None

    @property
    def busy(self) -> bool:
        """True while a run is in progress."""
        return self._run is not None

    async def attach(self, connection: Connection, writer: Writer) -> None:
        """A client connected (the handshake is done): it gets what is sent from now on."""
        self.connection, self._writer = connection, writer
        await self.save()
        self.agent.clients.attach(self.thread_id, self.channel)

    def detach(self, writer: Writer) -> None:
        """The client behind `writer` left; what is sent meanwhile waits in the outbox."""
        if self._writer is writer:
            self._writer = None
            self.agent.clients.detach(self.thread_id, self.channel)

    async def save(self, dispatched: Sequence[str] = ()) -> None:
        """Persist the protocol state (numbering, unacknowledged frames), unless it is saved already.

        `dispatched`: client calls whose requests the outbox holds, marked DISPATCHED in the ledger
        by the same transaction.
        """
        key = self.connection.revision
        if key is not None and not dispatched:
            if key == self._saved:
                return
            if (saving := self._saving) is not None and saving.key == key:
                await saving.done.wait()  # another task is writing this very state: its commit serves
                if saving.ok:
                    return
        saving = self._saving = _Save(key)
        try:
            await self.agent.store.save_wire_state(self.thread_id, self.connection.state(), dispatched=dispatched)
            self._saved, saving.ok = key, True
        finally:
            saving.done.set()
            if self._saving is saving:
                self._saving = None

    async def acknowledge(self) -> None:
        """Acknowledge what the client sent, as far as it is persisted (saved first if needed)."""
        await self.save()
        saved = self._saved
        if saved is not None:
            await self.write_raw(self.connection.ack(upto=saved[1]))

    def post(self, message: Message) -> None:
        """Number a message now; `flush()` persists and writes it (in numbering order)."""
        self._unwritten.append(self.connection.send(message))

    async def flush(self, dispatched: Sequence[str] = ()) -> None:
        """Persist the protocol state, then write the frames posted so far, in order.

        `dispatched`: client calls whose requests were posted (see `save`); they are marked even
        when another task's flush wrote their requests first.
        """
        await self._lock()
        try:
            frames, self._unwritten = self._unwritten, []
            if frames or dispatched:
                await self.save(dispatched)  # nothing reaches the client that a restart would forget
            for frame in frames:
                await self._write(frame)
        finally:
            self._send_lock.release()

    async def send(self, message: Message) -> None:
        """Number, persist, then write a message (it waits in the outbox without a client)."""
        self.post(message)
        await self.flush()

    async def write_raw(self, frame: bytes | None) -> None:
        """Write an unnumbered frame (an acknowledgement, an error) to the live socket, if any."""
        if frame:
            await self._lock()
            try:
                await self._write(frame)
            finally:
                self._send_lock.release()

    async def _lock(self) -> None:
        """Take the send lock; without a detour through the event loop when it is free.

        (`async with` an anyio lock yields to the loop even when nobody holds it: one more loop
        iteration, with its `epoll_wait`, per frame written.)
        """
        try:
            self._send_lock.acquire_nowait()
        except anyio.WouldBlock:
            await self._send_lock.acquire()

    async def _write(self, frame: bytes) -> None:
        writer = self._writer
        if not frame or writer is None:
            return
        try:
            await writer(frame)
        except Exception as exc:  # the socket died under us: the frame stays in the outbox
            _log.info("conversation %s: a write failed (%s); the client will get it on resume", self.thread_id, exc)
            self.detach(writer)

    # -- the thread's client tools and consent prompts ---------------------------------------

    async def send_request(self, request: ClientToolRequest) -> None:
        """Send a client tool request; raise `ClientDisconnected` when no client is connected."""
        if self._writer is None:
            raise ClientDisconnected(f"no client is connected to conversation {self.thread_id}")
        # The client's own deadline comes a little earlier than the server's, so that a client
        # whose tool runs too long can still answer `timeout` before the server gives up.
        invoke_ms = self.agent.client_tools.invoke_timeout * 1000
        timeout_ms = max(1, round(invoke_ms - min(1000.0, invoke_ms * 0.1)))
        self.post(
            ToolUseRequest(
                id=request.request_id,
                tool_name=request.tool_name,
                parameters=dict(request.arguments),
                execution="client",
                timeout_ms=timeout_ms,
                call_id=request.call_id,
                description=request.description,
                mode=request.mode,
            )
        )
        self.dispatched.add(request.call_id)
        # The ledger's DISPATCHED goes with the outbox that holds the request (see `_Channel`).
        await self.flush(dispatched=(request.call_id,))

    async def consent(self, request: PolicyConsentRequest) -> bool | PolicyConsentAnswer:
        """Ask the connected person (ConsentRequest) and wait for the ConsentAnswer."""
        if self._writer is None:
            return PolicyConsentAnswer(False, "no client is connected to answer")
        consent_id = "consent_" + secrets.token_hex(16)
        event, answers = self._consents[consent_id] = (anyio.Event(), [])
        try:
            await self.send(
                ConsentRequest(
                    id=consent_id,
                    call_id=request.call.id,
                    tool_name=request.tool,
                    mode=str(request.mode),
                    reason=request.reason,
                    arguments=dict(request.call.arguments),
                    description=request.description,
                    allow_always=request.allow_always,
                )
            )
            await event.wait()
        finally:
            del self._consents[consent_id]
        answer = answers[0]
        return PolicyConsentAnswer(answer.allow, answer.reason, scope=answer.scope)

    def consent_answered(self, answer: ConsentAnswer) -> bool:
        """Hand a ConsentAnswer to the prompt waiting for it; False for an unknown id."""
        waiting = self._consents.get(answer.id)
        if waiting is None or waiting[1]:
            return False
        waiting[1].append(answer)
        waiting[0].set()
        return True

    # -- runs ----------------------------------------------------------------------------------

    def stop(self) -> bool:
        """Cancel the run in progress (ControlStop); False when there is none."""
        if self._run is None:
            return False
        self._run.cancel("Stopped by the client")
        return True

    def start(self, group: TaskGroup, prompt: str | None, message_id: str | None = None) -> bool:
        """Start a run for `prompt` (None: resume an unfinished one); False while one is running.

        `message_id` is the UserMessage's id: the run's RunStatus, StartAnswer and AssistantMessage
        name it, so a client can tell its answer from a replayed earlier one.
        """
        if self._run is not None:
            return False
        self._run = Cancellation()
        group.start_soon(self._drive, prompt, self._run, _Relay(self, "run_" + secrets.token_hex(8), group, message_id))
        return True

    async def register(self, groups: list[dict[str, Any]], expanded: tuple[str, ...], reset: bool) -> None:
        """Register the client's tool groups (raises `RegistrationError`, nothing applied)."""
        await self.agent.register_client_tools(
            self.thread_id, groups, expanded_containers=expanded, reset_client_state=reset
        )

    async def _drive(self, prompt: str | None, cancellation: Cancellation, relay: _Relay) -> None:
        status = relay.status
        try:
            await self.send(status("started"))
            # Events are numbered as they happen, in the run's own task, so the client sees them
            # in the order they happened, interleaved rightly with its client tool requests.
            if prompt is None:
                result = await self.agent.resume(self.thread_id, cancellation=cancellation, on_event=relay.event)
                if result is None:
                    self.post(status("finished", reason="answer", detail="nothing to resume"))
            else:
                await self.agent.run(prompt, thread=self.thread_id, cancellation=cancellation, on_event=relay.event)
            await self.flush()
        except (ProviderError, ClientDisconnected, RegistrationError) as exc:
            await self.send(status("failed", detail=str(exc)))
        except Exception:
            _log.exception("conversation %s: the run failed", self.thread_id)
            await self.send(status("failed", detail="the server failed; see its logs"))
        finally:
            self._run = None


class _Save:
    """A save of the protocol state in progress: the revision it writes, and when it is over."""

    __slots__ = ("done", "key", "ok")

    def __init__(self, key: tuple[int, int, int, int] | None) -> None:
        self.key = key
        self.done = anyio.Event()
        self.ok = False


class _Channel:
    """The conversation as the agent's `ClientHub` sees it (`ClientChannel`, `ConsentChannel`)."""

    records_dispatch = True
    """A request sent here is durably in the outbox (replayed until acknowledged), and its call
    is marked DISPATCHED in the transaction that saved it: `ClientSession` need not write it again."""

    def __init__(self, conversation: ServerConversation) -> None:
        self._conversation = conversation

    async def send(self, request: ClientToolRequest) -> None:
        """Send a client tool request to the connected client."""
        await self._conversation.send_request(request)

    async def consent(self, request: PolicyConsentRequest) -> bool | PolicyConsentAnswer:
        """Ask the connected person for consent."""
        return await self._conversation.consent(request)


class _Relay:
    """Turns one run's events into messages for the client."""

    def __init__(self, conversation: ServerConversation, run_id: str, group: TaskGroup, message_id: str | None) -> None:
        self.conversation = conversation
        self.run_id = run_id
        self.group = group
        self.message_id = message_id
        self.answer_id: str | None = None
        self.sentence = 0

    def status(self, status: RunState, **fields: str | None) -> RunStatus:
        """This run's RunStatus message."""
        return RunStatus(run_id=self.run_id, status=status, message_id=self.message_id, **fields)

    def event(self, event: RunEvent) -> None:
        """Post the messages an event stands for, and have them written soon."""
        if self._post(event):
            self.group.start_soon(self.conversation.flush)

    def _post(self, event: RunEvent) -> bool:
        send, server_tools = self.conversation.post, self.conversation.agent.toolbox
        match event:
            case TextDelta(text=text) if text:
                if self.answer_id is None:
                    self.answer_id = "msg_" + secrets.token_hex(8)
                    send(StartAnswer(message_id=self.answer_id, previous_id=self.message_id))
                send(AssistantSentence(message_id=self.answer_id, sequence=self.sentence, text=text))
                self.sentence += 1
            case ToolCallStarted(call=call, mode=mode) if call.name in server_tools:
                mirrored = ToolUseRequest(
                    id=call.id,
                    tool_name=call.name,
                    parameters=dict(call.arguments),
                    execution="server",
                    call_id=call.id,
                    description=server_tools[call.name].description,
                    mode=None if mode is None else mode.value,
                )
                send(mirrored)
            case ToolCallStarted():
                return False
            case ToolCallFinished(call=call, result=result) if call.name in server_tools:
                send(ToolUseResult.from_result(result, call.id))
            case ToolCallFinished(call=call, result=result):
                # A client call the server settled without asking the client (the policy denied it,
                # its arguments were invalid, the tool is unknown, the run stopped first) is shown
                # to the client as a server call with its outcome, so its timeline misses no call.
                # Successes without a request are the runtime's own (a group expanded): not shown.
                dispatched = self.conversation.dispatched
                if call.id in dispatched:
                    dispatched.discard(call.id)
                    return False
                if result.success:
                    return False
                send(
                    ToolUseRequest(
                        id=call.id,
                        tool_name=call.name,
                        parameters=dict(call.arguments),
                        execution="server",
                        call_id=call.id,
                    )
                )
                send(ToolUseResult.from_result(result, call.id))
            case RunFinished(result=result):
                if self.answer_id is not None:
                    send(AssistantSentence(message_id=self.answer_id, sequence=self.sentence, text="", is_final=True))
                if result.output:
                    send(
                        AssistantMessage(
                            id="msg_" + secrets.token_hex(8), content=result.output, previous_id=self.message_id
                        )
                    )
                send(
                    self.status(
                        "finished", reason=result.reason, detail=result.detail or None, output=result.output or None
                    )
                )
            case _:
                return False
        return True
