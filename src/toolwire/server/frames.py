"""A connected client's frames, read and acted on (`serve_frames`), and the socket's small helpers.

`ToolwireServer.websocket` authenticates a connection, reads its Configuration and binds its
conversation; from then on `serve_frames` reads each frame, persists what it saw before that is
acknowledged (late: `Acknowledger`), and acts on each message: a prompt starts a run (or is
refused: a run in progress, 105; the admission queue full, 503), a registration runs beside the
reading, a client's tool result or consent answer goes to the call waiting for it.
"""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup
from starlette.websockets import WebSocket, WebSocketDisconnect

from ..errors import Fenced, RegistrationError, StoreUnavailable
from ..protocol import (
    ConsentAnswerBody,
    ControlStop,
    Envelope,
    ErrorCode,
    ErrorMessage,
    RegisterTools,
    RegisterToolsResult,
    ToolUseResult,
    UserMessageBody,
    encode,
)
from .admission import Admission
from .refusals import ConnectionRefusals
from .server_conversation import ServerConversation

if TYPE_CHECKING:
    from ..protocol import Connection
    from .app import ToolwireServer

__all__ = ["ACK_DELAY", "ACK_SOON", "Acknowledger", "close", "receive_bytes", "serve_frames"]

_log = logging.getLogger("toolwire.server")

ACK_DELAY = 0.2
"""Seconds the server waits before acknowledging a client's stanzas (sooner once `ACK_SOON` wait)."""
ACK_SOON = 16
"""Client stanzas waiting for an Acknowledgement that make the server write one at once (half
`Connection.ack_every`, so that `receive()` never has to, ahead of the frame it reads)."""


async def serve_frames(
    server: ToolwireServer,
    websocket: WebSocket,
    connection: Connection,
    conversation: ServerConversation,
    runs: TaskGroup,
    acks: Acknowledger,
    refusals: ConnectionRefusals,
) -> None:
    """Read the connection's frames until it closes (or the server stops), acting on each message.

    What a frame brought is persisted before it is acknowledged; the replies, refusals and
    acknowledgements go to the client as `conversation.write_raw` frames.
    """
    while (data := await receive_bytes(websocket)) is not None and not server.stopping:
        # `receive()` acknowledges by itself once `ack_every` stanzas of earlier frames wait:
        # each of those was persisted below before the next frame was read. Tool results are
        # saved before anything can acknowledge them, and handed to the calls waiting for them.
        received, refused = await conversation.receive(data)
        for reply in received.replies:
            await conversation.write_raw(reply)
        for error in received.errors:  # answered by the replies above
            refusals.refused(error.code, error.message)
        for envelope in refused:
            assert isinstance(envelope.message, ToolUseResult)
            if envelope.message.problem is not None:
                continue  # an unreadable result: its 105 (in `replies`) is its one ErrorMessage
            message = f"no open request {envelope.message.id!r:.80} in this conversation"
            await _error(conversation, envelope, message, refusals, ErrorCode.RESULT_REFUSED)
        for envelope in received.messages:
            await _act(server, envelope, conversation, runs, refusals)
        if received.messages or received.errors:  # a stanza was seen: persist it now, acknowledge it late
            # Let the tasks these messages woke (a run given its client tool result) go first:
            # if they send, the state they save covers this frame too, and `save()` skips it.
            await anyio.lowlevel.checkpoint()
            await conversation.save()  # what was seen is persisted before it is acknowledged
            # A frame the woken tasks sent may have acknowledged it already (`ackInMeta`).
            if connection.unacknowledged >= ACK_SOON:
                await conversation.acknowledge()  # after what the frame woke: off its critical path
            elif connection.unacknowledged:
                acks.later()
        # A frame that only acknowledged (or repeated) stanzas is not saved: the outbox it
        # trimmed is persisted with the next save, which precedes every frame the server writes;
        # until then a restart would only resend frames the client drops as duplicates.
        if received.close:
            await conversation.acknowledge()
            await close(websocket, 1002)
            return
        if refusals.exceeded:  # what it sent is saved; nothing more is read
            message = f"too many refused frames ({server.refusals.limit.describe()}): closing the connection"
            await conversation.write_raw(connection.refuse(ErrorCode.TOO_MANY_REFUSALS, message))
            await close(websocket, 1008)
            return


async def _act(
    server: ToolwireServer,
    envelope: Envelope,
    conversation: ServerConversation,
    runs: TaskGroup,
    refusals: ConnectionRefusals,
) -> None:
    match envelope.message:
        case UserMessageBody(id=message_id, content=content):
            if not conversation.busy and server.admission.full:  # refused before its prompt is stored
                await _error(conversation, envelope, _busy(server.admission), refusals, ErrorCode.SERVER_BUSY)
            elif not conversation.start(runs, content, message_id):
                message = "a run is in progress: wait for it, or send ControlStop"
                await _error(conversation, envelope, message, refusals)
        case RegisterTools() as registration:
            # In the background: it waits for the thread's run to end, and reading must go on.
            if conversation.registering:
                message = "a registration is in progress: wait for its result"
                await _error(conversation, envelope, message, refusals)
            else:
                conversation.registering = True
                runs.start_soon(_register, conversation, registration)
        case ToolUseResult():
            pass  # taken (or refused) by `conversation.receive`
        case ConsentAnswerBody() as answer:
            if not conversation.consent_answered(answer):
                await _error(conversation, envelope, f"no open consent request {answer.id!r:.80}", refusals)
        case ControlStop():
            conversation.stop()
        case ErrorMessage(code=code, message=message):
            _log.info("conversation %s: the client reported error %s: %.200s", conversation.thread_id, code, message)
        case other:
            await _error(conversation, envelope, f"a client does not send {type(other).__name__}", refusals)


def _busy(admission: Admission) -> str:
    """ErrorMessage 503's text (logged with the principal's other refusals, not a line each)."""
    return (
        f"server busy: {admission.running} runs in progress and {admission.waiting} waiting,"
        " the most it allows: send the message again later"
    )


async def _register(conversation: ServerConversation, registration: RegisterTools) -> None:
    groups, expanded = list(registration.groups), registration.expanded_containers
    try:
        try:
            await conversation.register(groups, expanded, registration.reset_client_state)
        except RegistrationError as exc:
            conversation.registering = False
            answer = RegisterToolsResult(ok=False, error=exc.problem, group=exc.group, tool=exc.tool)
        else:
            conversation.registering = False
            answer = RegisterToolsResult(ok=True)
        await conversation.send(answer)
    except Fenced:
        conversation.fence_out()  # (the client registers again with the next owner)
    except StoreUnavailable as exc:
        conversation.fence_out(failed=exc)


async def _error(
    conversation: ServerConversation,
    envelope: Envelope,
    message: str,
    refusals: ConnectionRefusals,
    code: int = ErrorCode.INVALID_MESSAGE,
) -> None:
    """Refuse a client's message: a recoverable ErrorMessage, counted against its principal.

    Like the protocol's own refusals, it is about one frame of this connection: not numbered,
    so it is not kept, persisted or replayed (a flood of refusals grows no outbox).
    """
    refusals.refused(code, message)
    error = ErrorMessage(
        id="err_" + secrets.token_hex(8),
        code=code,
        message=message,
        severity=1,
        recoverable=True,
        originating_id=envelope.stanza_id,
    )
    await conversation.write_raw(encode(Envelope(0, conversation.thread_id, error)))


class Acknowledger:
    """Acknowledges a connection's stanzas late: `ACK_DELAY` after the first unacknowledged one.

    An Acknowledgement is one more frame each way (a `send` and a `recv`, the dearest part of a
    round trip); deferred, one covers every stanza of a busy stretch, and `serve_frames` writes one at
    once when `ACK_SOON` stanzas wait, which bounds the client's outbox. Acknowledging late never
    loses anything: the client keeps what is not acknowledged, and a resume replays only what
    the server has not seen (its persisted `lastSequenceSeen`). The timer is a task of `group`
    that lives only while an Acknowledgement is due: an idle connection holds none.
    (`toolwire.client.link.AckTimer` is the client's.)
    """

    def __init__(self, conversation: ServerConversation, group: TaskGroup) -> None:
        self._conversation = conversation
        self._group = group
        self._timer: anyio.CancelScope | None = None
        self._stopped = False

    def later(self) -> None:
        """A stanza was persisted: acknowledge it (with whatever follows) within `ACK_DELAY`."""
        if self._timer is None and not self._stopped:
            self._timer = anyio.CancelScope()
            self._group.start_soon(self._acknowledge_after_delay, self._timer)

    def stop(self) -> None:
        """The connection is gone: acknowledge nothing more."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()

    async def _acknowledge_after_delay(self, timer: anyio.CancelScope) -> None:
        with timer:
            await anyio.sleep(ACK_DELAY)
            self._timer = None  # what arrives from now on starts the next delay
            await self._conversation.acknowledge()


async def close(websocket: WebSocket, code: int) -> None:
    """Close the socket with `code` (nothing if the peer closed it already)."""
    try:
        await websocket.close(code=code)
    except (RuntimeError, OSError, WebSocketDisconnect):  # already closed by the peer
        pass


async def receive_bytes(websocket: WebSocket) -> bytes | None:
    """The next binary frame; None once the peer disconnected.

    A text frame is passed on as bytes, so the protocol answers it like any other bad frame.
    """
    try:
        message = await websocket.receive()
    except WebSocketDisconnect:
        return None
    if message["type"] == "websocket.disconnect":
        return None
    data = message.get("bytes")
    if data is None:
        return str(message.get("text", "")).encode()
    return data
