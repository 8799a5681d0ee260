"""`ServerConversation`: one conversation (a thread) on the server, across its connections.

It owns the server end of the protocol (`Connection`, whose numbering and unacknowledged frames
are saved in the store before each frame is written), the live socket if a client is connected,
the agent run in progress, and the client's side of the thread's client tools (`ClientChannel`):

```
agent run ──► events ──► StartAnswer, AssistantSentence…, ToolUseRequest/Result (server tools,
              mirrored for transparency), AssistantMessage (an answer not streamed, or asked for
              with `wholeAnswers`), RunStatus
client tool call ──► ToolUseRequest(execution="client") ──► client ──► ToolUseResult ──► saved, hub.settle
                     settled without it (deadline, stop, client gone) ──► ToolUseCancel
consent ──► ConsentRequest ──► client ──► ConsentAnswer
```
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..client_tools.channel import Claim
from ..client_tools.definitions import ClientToolRequest
from ..errors import ClientDisconnected, Fenced, ProviderError, RegistrationError, StoreUnavailable
from ..ledger import run_is_open
from ..loop import Agent
from ..messages import AssistantMessage, UserMessage
from ..policy import ConsentAnswer, ConsentRequest
from ..protocol import (
    RUN_QUEUE,
    WHOLE_ANSWERS,
    AssistantMessageBody,
    Connection,
    ConsentAnswerBody,
    ConsentRequestBody,
    Envelope,
    ErrorCode,
    MessageBody,
    Received,
    RunStatus,
    Sequencing,
    ToolUseRequest,
    ToolUseResult,
    decode,
    encode,
)
from ..protocol.results import answer_json
from ..store import CallState, LedgerEntry
from ..telemetry.propagation import trace_meta
from ..tools import Cancellation
from .admission import Admission, Ticket
from .relay import Relay
from .wire_state import WireForm

__all__ = ["ServerConversation"]

_log = logging.getLogger("toolwire.server")

RUN_ENDED = "runEnded"
"""The key of `ServerConversation.run_ended` in the saved protocol state."""


def run_ended_of(saved: Mapping[str, Any] | None) -> int | None:
    """`run_ended` as a saved protocol state holds it: 0 with no state yet, None for one older than the key."""
    ended = 0 if saved is None else saved.get(RUN_ENDED)
    return ended if type(ended) is int else None


UNANNOUNCED = "the server stopped as the run ended, before it said how: its transcript shows how it ended"

Writer = Callable[[bytes], Awaitable[None]]
"""Writes one frame to the live socket; raises when the socket is gone."""


class ServerConversation:
    """A conversation's server side: protocol state, live socket, run, client channel."""

    def __init__(
        self,
        agent: Agent,
        thread_id: str,
        principal: str,
        state: Sequencing | None,
        *,
        sent: Mapping[str, str] | None = None,
        answered: Iterable[str] = (),
        run_ended: int | None = 0,
        admission: Admission | None = None,
    ) -> None:
        self.agent = agent
        self.admission = admission if admission is not None else Admission(None)
        """The server's run slots and queue, which every run of this conversation goes through."""
        self.thread_id = thread_id
        self.principal = principal
        self.connection = (
            Connection.resume(state)
            if state is not None
            else Connection.resume(Sequencing(role="server", conversation_id=thread_id))
        )
        self._writer: Writer | None = None
        self._saved: tuple[int, int, int, int] | None = None
        self._wire = WireForm()
        """The protocol state in the form the store keeps (each frame encoded once)."""
        """The `Connection.revision` the last save wrote (its [1] is the last stanza seen)."""
        self._lock = anyio.Lock()
        """Held to save the protocol state and to write frames, so that neither happens while a
        received frame's answers are being saved (`receive`): what acknowledges them waits."""
        self._unwritten: list[bytes] = []
        self._prompt: UserMessage | None = None
        """The user's message a run was started for, until a save stored it with the state that has seen its
        frame: a prompt the server acknowledged is in the transcript, and one a stopped process had not saved
        yet is sent again by the client (its frame was not seen, as far as the store knows)."""
        self._run: Cancellation | None = None
        self._scope: anyio.CancelScope | None = None
        self._ended = anyio.Event()
        """Set when the run in progress ends (replaced when the next one starts)."""
        self._ticket: Ticket | None = None
        """The run's place in `admission` (queued, or holding a slot) while a run is in progress."""
        self._queued: RunStatus | None = None
        """The run's RunStatus `queued` (without its position) while it waits for a slot."""
        self._consents: dict[str, tuple[anyio.Event, list[ConsentAnswerBody]]] = {}
        self.registering = False
        """A RegisterTools is being applied (one at a time per conversation)."""
        self.dispatched: dict[str, str] = dict(sent or {})
        """Open client calls whose requests went to the client: call id → request id (sent by
        this process, or, given as `sent`, by the one before a restart)."""
        self.answered: set[str] = set(answered)
        """Those of `dispatched` whose client's answer was taken: a call settled without one is
        withdrawn from the client (ToolUseCancel)."""
        self.run_ended = run_ended
        """The transcript's length when the last run whose end the client was sent ended, saved with the
        protocol state (`runEnded`) in the save that holds that RunStatus: a run that ended in the
        transcript but not on the wire (the process stopped in between) is announced again (`needs_run`).
        None for a state saved before toolwire recorded it."""
        self._lost = False
        """The connected client came back without what it had received (see `attach`)."""
        self.channel = _Channel(self)
        """What the agent's `ClientHub` sends this conversation's client tool calls and consents to."""
        self.fenced = False
        """Another replica owns the conversation now (`fence_out`): this object writes nothing more."""
        self.kicked = False
        """True once the live socket must close (the conversation was fenced out, handed over, or deleted)."""
        self._on_kick: Callable[[], object] | None = None
        self.close_code = 1012
        """The close code of the live socket once `kicked`: 1012 (come back, to the new owner), or
        1008 once the conversation was deleted (`retire`)."""

    # -- the socket ----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while a client is connected."""
        return self._writer is not None

    @property
    def whole_answers(self) -> bool:
        """The client (connected, or the last one) asked for whole answers also after streamed ones."""
        return WHOLE_ANSWERS in self.connection.peer_features

    @property
    def busy(self) -> bool:
        """True while a run is in progress."""
        return self._run is not None

    async def attach(self, connection: Connection, writer: Writer) -> None:
        """A client connected (the handshake is done): it gets what is sent from now on.

        A client that resumes with its protocol state has every frame it acknowledged, and the
        handshake replayed the rest; one that says it has seen less than it acknowledged lost
        its state (a new device, cleared storage) and must be sent again what it lost.
        """
        state = connection.state()
        if state is not None:
            acknowledged = state.outbox[0][0] - 1 if state.outbox else state.next_stanza - 1
            self._lost = connection.peer_seen < acknowledged
        self.connection, self._writer = connection, writer
        await self.save()
        self.agent.clients.attach(self.thread_id, self.channel)
        if self._ticket is not None and (position := self.admission.position(self._ticket)) is not None:
            await self._tell_position(position)  # the run waits: where, now

    def detach(self, writer: Writer) -> None:
        """The client behind `writer` left; what is sent meanwhile waits in the outbox."""
        if self._writer is writer:
            self._writer = None
            self.agent.clients.detach(self.thread_id, self.channel)

    def fence_out(self, *, handed_over: bool = False, failed: StoreUnavailable | None = None) -> None:
        """Another replica owns the conversation now: stop the run where it stands and close the socket.

        Called when a write was refused (`Fenced`), the lease was lost, (`handed_over`) after the
        conversation was handed over, or (`failed`) when the store could not be reached. Like
        `park()`, no call is settled here: the next owner (perhaps this server, reloading it once
        the store answers) resumes the run from the store. Nothing more is written.
        """
        if self.fenced or handed_over:
            pass
        elif failed is not None:
            _log.warning(
                "conversation %s: the store failed (%s); its run stops here and resumes from the store",
                self.thread_id,
                failed,
            )
        else:
            _log.warning("conversation %s: another replica owns it now; its run here stops", self.thread_id)
        self.fenced = True
        self.park()
        self._kick()

    async def retire(self) -> None:
        """The conversation is being deleted: tell the connected client, close its socket, write nothing more.

        Call it once no run is in progress (`wait_idle`). The client gets ErrorMessage 201 (no
        such conversation: it does not come back) and close code 1008.
        """
        await self.write_raw(self.connection.refuse(ErrorCode.CONVERSATION_NOT_FOUND, "this conversation was deleted"))
        self.fenced = True  # nothing of it is saved again: its rows are going
        self.close_code = 1008
        self._kick()

    def on_kick(self, callback: Callable[[], object] | None) -> None:
        """Have `callback` called once the live socket must close (at once if it must already); None: no more.

        The endpoint closes its socket then (a callback, not a task waiting per connection: an idle
        connection's memory).
        """
        self._on_kick = callback
        if callback is not None and self.kicked:
            self._kick()

    def _kick(self) -> None:
        self.kicked = True
        if (callback := self._on_kick) is not None:
            self._on_kick = None
            callback()

    async def save(self) -> None:
        """Persist the protocol state (numbering, unacknowledged frames), unless it is saved already.

        Raises:
            Fenced: Another replica owns the conversation now (the run is stopped, the socket closes).
        """
        await self._acquire()
        try:
            await self._save()
        finally:
            self._lock.release()

    async def _save(
        self, dispatched: Sequence[str] = (), answered: Mapping[str, Mapping[str, Any]] | None = None
    ) -> frozenset[str]:
        """`save()` with the lock held; `dispatched` and `answered` as in `WireStateStore.save_wire_state`."""
        key = self.connection.revision
        prompt = self._prompt
        if key is not None and key == self._saved and not dispatched and not answered and prompt is None:
            return frozenset()
        if self.fenced:
            raise Fenced(self.thread_id, 0)
        wire = self._wire.of(self.connection.state())
        if wire is not None and self.run_ended is not None:
            wire[RUN_ENDED] = self.run_ended
        try:
            saved = await self.agent.store.save_wire_state(
                self.thread_id,
                wire,
                dispatched=dispatched,
                answered=answered,
                appended=() if prompt is None else (prompt,),
            )
        except Fenced:
            self.fence_out()
            raise
        except StoreUnavailable as exc:
            self.fence_out(failed=exc)
            raise
        self._saved = key
        if prompt is self._prompt:
            self._prompt = None
        return saved

    async def receive(self, data: bytes) -> tuple[Received, list[Envelope]]:
        """Take one frame from the client, saving the tool results it brings before anything else.

        A client's result is saved (its call ANSWERED, with the state that has seen its stanza)
        before any frame or save can acknowledge it, so an acknowledged result is never asked for
        again, even after kill -9. It then goes to the call waiting for it.

        Returns:
            What `Connection.receive` returned, and the ToolUseResults refused (unknown, foreign,
            already answered, or for a call no longer waiting): answer each with ErrorMessage 302.
        """
        await self._acquire()
        try:
            received = self.connection.receive(data)
            results = [envelope for envelope in received.messages if isinstance(envelope.message, ToolUseResult)]
            refused = await self._take(results) if results else []
        finally:
            self._lock.release()
        return received, refused

    async def _take(self, results: list[Envelope]) -> list[Envelope]:
        """Claim, save and hand over client results (the lock held); return the refused ones."""
        hub = self.agent.clients
        taken: list[tuple[Claim, str, ToolUseResult, Envelope]] = []
        refused: list[Envelope] = []
        waiting: dict[str | None, LedgerEntry] | None = None
        for envelope in results:
            result = envelope.message
            assert isinstance(result, ToolUseResult)
            claim = hub.claim(self.thread_id, result.id)
            if claim is None:
                refused.append(envelope)
                continue
            if claim.request is not None:
                call_id = claim.request.call_id
            else:  # no call of this process waits for it (yet): after a restart, the ledger knows
                if waiting is None:
                    waiting = {entry.request_id: entry for entry in await self.agent.store.open_calls(self.thread_id)}
                entry = waiting.get(result.id)
                if entry is None or entry.state is not CallState.DISPATCHED:
                    hub.settle(claim, None)
                    refused.append(envelope)
                    continue
                call_id = entry.call.id
            taken.append((claim, call_id, result, envelope))
        if not taken:
            return refused
        saved: frozenset[str] = frozenset()
        try:
            saved = await self._save(answered={call_id: answer_json(result) for _, call_id, result, _ in taken})
        finally:  # every claim ends, also when the save failed (the calls keep waiting, nothing was taken)
            for claim, call_id, result, envelope in taken:
                if call_id in saved:
                    self.answered.add(call_id)
                    hub.settle(claim, result)
                else:
                    hub.settle(claim, None)
                    refused.append(envelope)
        return refused

    async def acknowledge(self) -> None:
        """Acknowledge what the client sent, as far as it is persisted (saved first if needed).

        Nothing is acknowledged once another replica owns the conversation.
        """
        await self._acquire()
        try:
            await self._save()
            if self._saved is not None:
                await self._write(self.connection.ack(upto=self._saved[1]) or b"")
        except (Fenced, StoreUnavailable):
            pass  # (fenced out: the socket closes; the client sends it again to the next owner)
        finally:
            self._lock.release()

    def post(self, message: MessageBody, meta: Mapping[str, Any] | None = None) -> None:
        """Number a message now; `flush()` persists and writes it (in numbering order)."""
        self._unwritten.append(self.connection.send(message, meta))

    async def flush(self, dispatched: Sequence[str] = ()) -> None:
        """Persist the protocol state, then write the frames posted so far, in order.

        `dispatched`: client calls whose requests were posted (see `WireStateStore.save_wire_state`); they
        are marked even when another task's flush wrote their requests first.

        Raises:
            Fenced: Another replica owns the conversation now: nothing was written (the run stops).
        """
        await self._acquire()
        try:
            frames, self._unwritten = self._unwritten, []
            if frames or dispatched:
                await self._save(dispatched)  # nothing reaches the client that a restart would forget
            for frame in frames:
                await self._write(frame)
        finally:
            self._lock.release()

    async def flush_soon(self) -> None:
        """`flush()` in a task of its own: fenced out (or the store failed), it writes nothing and ends quietly."""
        try:
            await self.flush()
        except (Fenced, StoreUnavailable):
            pass

    async def send(self, message: MessageBody, meta: Mapping[str, Any] | None = None) -> None:
        """Number, persist, then write a message (it waits in the outbox without a client)."""
        self.post(message, meta)
        await self.flush()

    async def write_raw(self, frame: bytes | None) -> None:
        """Write an unnumbered frame (an acknowledgement, an error) to the live socket, if any."""
        if frame:
            await self._acquire()
            try:
                await self._write(frame)
            finally:
                self._lock.release()

    async def _acquire(self) -> None:
        """Take the lock; without a detour through the event loop when it is free.

        (`async with` an anyio lock yields to the loop even when nobody holds it: one more loop
        iteration, with its `epoll_wait`, per frame written.)
        """
        try:
            self._lock.acquire_nowait()
        except anyio.WouldBlock:
            await self._lock.acquire()

    async def _write(self, frame: bytes) -> None:
        writer = self._writer
        if not frame or writer is None or self.fenced:
            return
        try:
            await writer(frame)
        except Exception as exc:  # the socket died under us: the frame stays in the outbox
            _log.info("conversation %s: a write failed (%s); the client will get it on resume", self.thread_id, exc)
            self.detach(writer)

    # -- the thread's client tools and consent prompts ---------------------------------------

    async def send_request(self, request: ClientToolRequest) -> None:
        """Send a client tool request; raise `ClientDisconnected` when no client is connected.

        A request sent before (a resume after a restart, a retry after a reconnect) is sent
        again only to a client that lost it: a client that kept its state has it, or gets it
        from the handshake's replay, and a client without an execution ledger would run a
        second copy a second time.
        """
        if self._writer is None:
            raise ClientDisconnected(f"no client is connected to conversation {self.thread_id}")
        sent_before = self.dispatched.get(request.call_id) == request.request_id
        if sent_before and (not self._lost or self._in_outbox(request.request_id)):
            return
        # The client's own deadline comes a little earlier than the server's, so that a client
        # whose tool runs too long can still answer `timeout` before the server gives up.
        invoke_ms = self.agent.client_tools.invoke_timeout * 1000
        timeout_ms = max(1, round(invoke_ms - min(1000.0, invoke_ms * 0.1)))
        self.post(
            ToolUseRequest(
                id=request.request_id,
                tool_name=request.tool_name,
                arguments=dict(request.arguments),
                execution="client",
                timeout_ms=timeout_ms,
                call_id=request.call_id,
                description=request.description,
                mode=request.mode,
            ),
            trace_meta() or None,  # the call's span: the client's execution is its child
        )
        self.dispatched[request.call_id] = request.request_id
        # The ledger's DISPATCHED goes with the outbox that holds the request (see `_Channel`).
        await self.flush(dispatched=(request.call_id,))

    def _in_outbox(self, request_id: str) -> bool:
        """True when an unacknowledged frame holds this request (a handshake replays it)."""
        state = self.connection.state()
        for _, frame in state.outbox if state is not None else ():
            message = decode(frame).message
            if isinstance(message, ToolUseRequest) and message.id == request_id:
                return True
        return False

    async def consent(self, request: ConsentRequest) -> bool | ConsentAnswer:
        """Ask the connected person (ConsentRequest) and wait for the ConsentAnswer."""
        if self._writer is None:
            return ConsentAnswer(False, "no client is connected to answer")
        consent_id = "consent_" + secrets.token_hex(16)
        event, answers = self._consents[consent_id] = (anyio.Event(), [])
        try:
            await self.send(
                ConsentRequestBody(
                    id=consent_id,
                    call_id=request.call.id,
                    tool_name=request.tool,
                    mode=str(request.mode),
                    reason=request.reason,
                    arguments=dict(request.call.arguments),
                    description=request.description,
                    allow_always=request.allow_always,
                ),
                trace_meta() or None,
            )
            await event.wait()
        finally:
            del self._consents[consent_id]
        answer = answers[0]
        return ConsentAnswer(answer.allow, answer.reason, scope=answer.scope)

    def consent_answered(self, answer: ConsentAnswerBody) -> bool:
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
        self._withdraw()
        return True

    def cancel(self, reason: str) -> bool:
        """Cancel the run in progress for the server (its open calls end Canceled by `system`); False when none."""
        if self._run is None:
            return False
        self._run.cancel(reason, by="system")
        self._withdraw()
        return True

    async def needs_run(self) -> bool:
        """True when a run must start with no prompt (`start(group, None)`).

        To resume the thread's last run, which stopped before it ended; or to tell the client how it
        ended, when the process stopped after it ended in the transcript and before the RunStatus
        saying so was saved.
        """
        store = self.agent.store
        history = await store.load_messages(self.thread_id)
        return run_is_open(history, await store.load_run(self.thread_id)) or self._unannounced(len(history))

    def _unannounced(self, length: int) -> bool:
        return self.run_ended is not None and self.run_ended != length

    def _withdraw(self) -> None:
        """A canceled run that waits for a slot leaves the queue: it ends at once, running no turn."""
        if self._ticket is not None:
            self.admission.withdraw(self._ticket)

    def start(self, group: TaskGroup, prompt: str | None, message_id: str | None = None) -> bool:
        """Start a run for `prompt` (None: resume an unfinished one); False while one is running.

        `message_id` is the UserMessage's id: the run's RunStatus, StartAnswer and AssistantMessage
        name it, so a client can tell its answer from a replayed earlier one.

        The run goes through `admission`: it starts at once when a slot is free, else it waits in
        the queue (its client told its place). Check `admission.full` first to refuse a prompt.
        """
        if self._run is not None or self.fenced:
            return False
        if prompt is not None:  # stored with the next save: the one that records its frame as seen
            self._prompt = UserMessage(prompt)
        self._run, self._scope, self._ended = Cancellation(), anyio.CancelScope(), anyio.Event()
        self._ticket = ticket = self.admission.enter()
        relay = Relay(self, "run_" + secrets.token_hex(8), group, message_id)
        group.start_soon(self._drive, prompt is not None, self._run, self._scope, relay, ticket)
        return True

    async def wait_idle(self) -> None:
        """Wait until no run is in progress."""
        while self._run is not None:
            await self._ended.wait()

    def park(self) -> None:
        """Stop the run in progress where it stands, writing nothing more (the server stops).

        Unlike `stop()`, no call is settled: the ledger keeps every open call as it is, exactly as
        after kill -9, and the next process resumes the run (a client call's result is taken
        then, a consent prompt is asked again).
        """
        if self._scope is not None:
            self._scope.cancel()

    async def register(self, groups: list[dict[str, Any]], expanded: tuple[str, ...], reset: bool) -> None:
        """Register the client's tool groups (raises `RegistrationError`, nothing applied)."""
        await self.agent.register_client_tools(
            self.thread_id, groups, expanded_containers=expanded, reset_client_state=reset
        )

    async def _drive(
        self, prompted: bool, cancellation: Cancellation, scope: anyio.CancelScope, relay: Relay, ticket: Ticket
    ) -> None:
        try:
            with scope:
                if not ticket.admitted.is_set():
                    await self._wait_turn(ticket, relay)
                await self._run_once(prompted, cancellation, relay)
        except Fenced:
            self.fence_out()  # the new owner resumes it
        except StoreUnavailable as exc:
            self.fence_out(failed=exc)  # resumed from the store once it answers
        finally:
            self.admission.leave(ticket)
            self._run = self._scope = self._ticket = None
            self._ended.set()
        if scope.cancelled_caught:
            _log.info("conversation %s: the run was parked; the next start resumes it", self.thread_id)

    async def _wait_turn(self, ticket: Ticket, relay: Relay) -> None:
        """Wait in the server's queue for a slot, telling the client its place as it changes."""
        self._queued = relay.status("queued")
        try:
            await self.admission.wait(ticket, self._tell_position)
        finally:
            self._queued = None

    async def _tell_position(self, position: int) -> None:
        """Tell a connected client that asked for it (`runQueue`) where its run waits: unnumbered, never replayed."""
        queued = self._queued
        if queued is None or self._writer is None or RUN_QUEUE not in self.connection.peer_features:
            return
        status = replace(queued, position=position)
        await self.write_raw(encode(Envelope(0, self.thread_id, status)))

    async def _run_once(self, prompted: bool, cancellation: Cancellation, relay: Relay) -> None:
        status = relay.status
        try:
            await self.send(status("started"))  # (its save stored the prompt, if no save before did)
            # Events are numbered as they happen, in the run's own task, so the client sees them
            # in the order they happened, interleaved rightly with its client tool requests.
            if not prompted:
                result = await self.agent.resume(self.thread_id, cancellation=cancellation, on_event=relay.event)
                if result is None:
                    await self._announce(relay)
            else:
                await self.agent.answer(self.thread_id, cancellation=cancellation, on_event=relay.event)
            await self.flush()
        except (Fenced, StoreUnavailable):
            raise
        except (ProviderError, ClientDisconnected, RegistrationError) as exc:
            await self.send(status("failed", detail=str(exc)))
        except Exception:
            _log.exception("conversation %s: the run failed", self.thread_id)
            await self.send(status("failed", detail="the server failed; see its logs"))

    async def _announce(self, relay: Relay) -> None:
        """Post the end of the thread's last run, which ended (nothing to resume) but was perhaps never announced."""
        history = await self.agent.store.load_messages(self.thread_id)
        status = relay.status
        if not self._unannounced(len(history)):
            self.post(status("finished", reason="answer", detail="nothing to resume"))
            return
        last = history[-1] if history else None
        if isinstance(last, AssistantMessage) and not last.tool_calls and last.text:
            # Whole: whether its streamed sentences reached the client is not known (shown twice, at worst).
            self.post(AssistantMessageBody(id="msg_" + secrets.token_hex(8), content=last.text))
            self.post(status("finished", reason="answer", output=last.text))
        else:  # closed without an answer (stopped, a limit, a terminal result): the transcript tells which
            self.post(status("finished", reason="canceled", detail=UNANNOUNCED))
        self.run_ended = len(history)


class _Channel:
    """The conversation as the agent's `ClientHub` sees it (`ClientChannel`, `ConsentChannel`, `DurableChannel`)."""

    records_dispatch = True
    """A request sent here is durably in the outbox (replayed until acknowledged), and its call
    is marked DISPATCHED in the transaction that saved it: `ClientSession` need not write it again."""

    def __init__(self, conversation: ServerConversation) -> None:
        self._conversation = conversation

    async def send(self, request: ClientToolRequest) -> None:
        """Send a client tool request to the connected client."""
        await self._conversation.send_request(request)

    async def consent(self, request: ConsentRequest) -> bool | ConsentAnswer:
        """Ask the connected person for consent."""
        return await self._conversation.consent(request)
