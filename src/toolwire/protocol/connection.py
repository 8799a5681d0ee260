"""`Connection`: the sans-I/O state machine of one end of a conversation.

Feed it the bytes of each frame with `receive()` and act on `Received.messages`; write
`Received.replies`, and close when `Received.close` says so. Send with `send()`, which returns the
bytes to write. Nothing here reads a socket or a clock.

Rules (docs/protocol.md, "Sequencing, acknowledgements and resume"):

- Stanza ids: client messages count 1, 2, 3…, server messages -1, -2, -3…. Configuration,
  Acknowledgement and the ErrorMessages a connection writes about a frame carry 0: they concern
  this connection, are not numbered, acknowledged or replayed.
- A numbered stanza not beyond the last one seen from the peer is a duplicate and is dropped
  silently. Every numbered stanza that was delivered, or refused with an error, counts as seen.
- `ack()` returns one cumulative Acknowledgement of everything seen (`ack(upto=n)`: up to stanza
  n); call it after acting on (and persisting) what `receive()` returned, at once or later (an
  I/O layer may let `unacknowledged` stanzas wait, so that one Acknowledgement covers several).
  `receive()` also adds one by itself when `ack_every` stanzas delivered by earlier calls are
  still unacknowledged.
- An Acknowledgement of stanza n drops the frames up to |n| from the outbox; the others are
  resent, with their original stanza ids, after the peer's next handshake.
- Piggybacked acknowledgements: when both ends list the `ackInMeta` feature in their
  Configurations (a `Connection` lists it by itself), every stanza `send()` numbers carries
  `meta.acknowledgedStanzaId`, a cumulative Acknowledgement of what was seen so far, whenever there
  is something new to acknowledge. In a steady exchange (request, result, request…) no separate
  Acknowledgement is written. A peer without the feature gets Acknowledgement messages as before.
  As for `ack()`, the I/O layer sends only after acting on what `receive()` returned; a server
  persists its state before writing the frames it numbered.
- A frame naming another conversation than the connection's (its envelope's `conversationId`, or
  a dialect's body's) is refused with a recoverable 107 and not counted as seen; a frame naming
  none is taken for the connection's.
- Handshake: the client's first frame is a Configuration (`hello()`); the server surfaces it, and
  its I/O layer decides ownership and storage, then calls `accept()` (the server's Configuration,
  followed by the replay) or `refuse()`. The client replays its own outbox on the server's answer.
- A ToolUseResult refused for its body (105) whose id can be read is also delivered, as the
  `invalid_result` failure of that request (`ToolUseResult.invalid`, with `problem` set), so a
  call waiting for it ends at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ..errors import UsageError
from .bodies import CONVERSATION_IN_BODY, Envelope, MessageBody, ToolUseResult
from .codec import DEFAULT_LIMITS, Frame, Limits, encode, read_frame
from .error_codes import ErrorCode, ProtocolError
from .published import Acknowledgement, Configuration, ErrorMessage
from .sequencing import Role, Sequencer, Sequencing
from .wire import MessageType

__all__ = ["ACK_IN_META", "META_ACK", "WHOLE_ANSWERS", "Connection", "Received"]

_UNNUMBERED: Final = frozenset((MessageType.CONFIGURATION, MessageType.ACKNOWLEDGEMENT))
ACK_IN_META: Final = "ackInMeta"
"""The feature of the Configuration by which an end says it reads acknowledgements in `meta`."""
META_ACK: Final = "acknowledgedStanzaId"
"""The `meta` key of a piggybacked acknowledgement (its value as in an Acknowledgement's body)."""
WHOLE_ANSWERS: Final = "wholeAnswers"
"""The feature of a client's Configuration that asks for an answer's AssistantMessage also after
it was streamed (StartAnswer, AssistantSentence…); without it a streamed answer is sent once."""
_Phase = Literal["handshake", "accepting", "open", "closed"]


def _new_id() -> str:
    return "err_" + secrets.token_urlsafe(16)


@dataclass(frozen=True, slots=True)
class Received:
    """What one `receive()` produced."""

    messages: tuple[Envelope, ...] = ()
    """New messages from the peer to act on, in order (duplicates and acknowledgements removed)."""
    replies: tuple[bytes, ...] = ()
    """Frames to write back now, in order: ErrorMessages (one per refused frame), an
    Acknowledgement, or on the client the replay after the server's Configuration."""
    close: bool = False
    """Close the connection after writing `replies` (a non-recoverable error, either side's)."""
    errors: tuple[ProtocolError, ...] = ()
    """The refusals the ErrorMessages in `replies` describe, for logs."""


class Connection:
    """One end of a conversation on one connection; see the module docstring for the rules.

    Args:
        role: `"server"` or `"client"`.
        state: Sequencing to continue from (see `resume`).
        limits: What `receive()` accepts.
        ack_every: Acknowledge by itself once this many stanzas wait for an acknowledgement.
        max_outbox: Unacknowledged frames kept for replay; the oldest go first beyond it.
        new_id: Makes the ids of the ErrorMessages this connection writes.
        piggyback: Offer `ackInMeta` (acknowledge inside the frames `send()` numbers); it is used
            once the peer's Configuration lists it too.
    """

    def __init__(
        self,
        role: Role,
        *,
        state: Sequencing | None = None,
        limits: Limits = DEFAULT_LIMITS,
        ack_every: int = 32,
        max_outbox: int = 10_000,
        new_id: Callable[[], str] = _new_id,
        piggyback: bool = True,
    ) -> None:
        if state is not None and state.role != role:
            raise UsageError(f"a {state.role} state cannot resume a {role} connection")
        self.role: Final = role
        self.limits = limits
        self.ack_every = ack_every
        self.max_outbox = max_outbox
        self._new_id = new_id
        self._sign = 1 if role == "client" else -1
        self._phase: _Phase = "handshake"
        self._seq = Sequencer(None, max_outbox=max_outbox, state=state)
        self._requested: str | None = None
        self._hello: Configuration | None = None
        self.piggyback = piggyback
        self._piggybacking = False
        """Both ends offered `ackInMeta`: `send()` acknowledges in `meta`."""
        self.peer_seen = 0
        """Server: the last of its stanzas the client said it had seen, in its Configuration (its
        `lastSequenceSeen`; 0 for a new conversation). Set by `accept()`."""
        self.peer_features: tuple[str, ...] = ()
        """The features the peer's Configuration listed; set when the handshake completes."""

    @classmethod
    def resume(cls, state: Sequencing, **options: Any) -> Connection:
        """Continue a conversation from exported state, e.g. after a reconnect or a restart.

        The server also uses it to record messages while no client is connected: `send()` keeps
        them in the outbox (and returns b"") until a handshake replays them.
        """
        return cls(state.role, state=state, **options)

    # -- what a caller may look at ----------------------------------------------------------------

    @property
    def conversation_id(self) -> str | None:
        """The conversation this end is bound to, once known."""
        return self._seq.conversation_id

    @property
    def is_open(self) -> bool:
        """True between a completed handshake and a close."""
        return self._phase == "open"

    @property
    def piggybacking(self) -> bool:
        """True when both ends agreed to acknowledge inside numbered frames (`ackInMeta`)."""
        return self._piggybacking

    @property
    def closed(self) -> bool:
        """True after a non-recoverable error; `receive()` then ignores everything."""
        return self._phase == "closed"

    @property
    def revision(self) -> tuple[int, int, int, int] | None:
        """A value that changes whenever `state()` does, cheaper to get (None before a conversation).

        The outbox is always a run of consecutive stanzas (frames are added at the end and dropped
        from the front), so the numbering, the outbox's length and its first stanza identify it.
        """
        seq = self._seq
        if seq.conversation_id is None:
            return None
        return (seq.next, seq.last_seen, len(seq.outbox), next(iter(seq.outbox), 0))

    def state(self) -> Sequencing | None:
        """Export the sequencing state to persist (None before a conversation is bound)."""
        return self._seq.export(self.role)

    # -- handshake ------------------------------------------------------------------------------

    def hello(
        self,
        conversation_id: str | None = None,
        *,
        client_version: str | None = None,
        device: str | None = None,
        features: tuple[str, ...] = (),
    ) -> bytes:
        """Client: return the Configuration that opens the connection; write it first.

        Args:
            conversation_id: The conversation to resume; defaults to the resumed state's, else new.
            client_version: The client's name and version.
            device: What the client runs on.
            features: The optional features the client supports.
        """
        self._require("client", "hello")
        requested = conversation_id if conversation_id is not None else self._seq.conversation_id or ""
        if requested != self._seq.conversation_id:  # a new conversation, or another than the state's
            self._seq = Sequencer(requested or None, max_outbox=self.max_outbox)
        self._requested = requested
        hello = Configuration(
            conversation_id=requested,
            last_sequence_seen=self._seq.last_seen,
            client_version=client_version,
            device=device,
            features=self._offered(features),
        )
        return encode(Envelope(0, requested, hello))

    def accept(
        self, conversation_id: str, *, state: Sequencing | None = None, features: tuple[str, ...] = ()
    ) -> list[bytes]:
        """Server: bind the conversation the client's Configuration asked for, or a new one.

        Call it after `receive()` surfaced the client's Configuration and the I/O layer checked
        who owns the conversation, before feeding the next frame.

        Args:
            conversation_id: The conversation bound (the requested one, or a new id).
            state: Its persisted sequencing, when resuming.
            features: The server's features.

        Returns:
            The frames to write: the server's Configuration, then the frames the client missed
            (after its `lastSequenceSeen`), with their original stanza ids.
        """
        self._require("server", "accept")
        if self._phase != "accepting" or self._hello is None:
            raise UsageError("accept() answers a client's Configuration: call it after receive() surfaced one")
        if state is not None and state.conversation_id != conversation_id:
            raise UsageError(f"the state is for conversation {state.conversation_id!r}, not {conversation_id!r}")
        if state is not None or self._seq.conversation_id != conversation_id:
            self._seq = Sequencer(conversation_id, max_outbox=self.max_outbox, state=state)
        peer_seen = self.peer_seen = self._hello.last_sequence_seen if self._hello.conversation_id else 0
        seen = self._seq.last_seen
        answer = Configuration(
            conversation_id=conversation_id, last_sequence_seen=seen, features=self._offered(features)
        )
        self.peer_features = self._hello.features
        self._piggybacking = self.piggyback and ACK_IN_META in self.peer_features
        self._phase = "open"
        return [encode(Envelope(0, conversation_id, answer)), *self._seq.replay_after(peer_seen)]

    def refuse(self, code: int, message: str) -> bytes:
        """Return a non-recoverable ErrorMessage (e.g. 201, 202, 401) and close this connection."""
        error = ProtocolError(code, message, False)
        self._phase = "closed"
        return self._error_frame(error)

    # -- sending --------------------------------------------------------------------------------

    def send(self, message: MessageBody, meta: Mapping[str, Any] | None = None) -> bytes:
        """Number a message, keep it until acknowledged, and return the frame to write.

        Returns:
            The frame; b"" while the connection is not open (before the handshake, after a close,
            or on a state resumed only to record messages): the frame then waits in the outbox
            and goes out with the next handshake's replay.

        Raises:
            UsageError: No conversation is bound yet, or `message` is one the connection writes
                itself (Configuration, Acknowledgement).
            ProtocolError: 104 when the frame exceeds `limits.max_frame_bytes`; nothing was sent.
        """
        if message.type in _UNNUMBERED:
            raise UsageError(f"{type(message).__name__} is written by hello(), accept() and ack(), not send()")
        if self._seq.conversation_id is None:
            raise UsageError("no conversation yet: send after the handshake, or resume a state")
        seq = self._seq
        # A piggybacked acknowledgement of everything seen (see the module docstring).
        acknowledging = self._piggybacking and self._phase == "open" and seq.last_seen > seq.acked
        if acknowledging:
            meta = {**(meta or {}), META_ACK: -self._sign * seq.last_seen}
        frame = encode(Envelope(self._sign * seq.next, seq.conversation_id or "", message, meta or {}))
        if len(frame) > self.limits.max_frame_bytes:
            raise ProtocolError(ErrorCode.FRAME_TOO_LARGE, f"a frame of {len(frame)} bytes exceeds the limit")
        if acknowledging:
            seq.acked = seq.last_seen
        seq.keep(frame)
        return frame if self._phase == "open" else b""

    @property
    def unacknowledged(self) -> int:
        """How many stanzas were seen since the last Acknowledgement this end wrote."""
        return self._seq.unacknowledged()

    def ack(self, upto: int | None = None) -> bytes | None:
        """Return a cumulative Acknowledgement of every stanza seen, or None if nothing is new.

        Args:
            upto: Acknowledge only up to this stanza (absolute value), e.g. the last one whose
                effects are persisted; None for every stanza seen.
        """
        seq = self._seq
        last = seq.last_seen if upto is None else min(abs(upto), seq.last_seen)
        if self._phase != "open" or seq.conversation_id is None or last <= seq.acked:
            return None
        seq.acked = last
        body = Acknowledgement(acknowledged_stanza_id=-self._sign * last)
        return encode(Envelope(0, seq.conversation_id, body))

    # -- receiving ------------------------------------------------------------------------------

    def receive(self, data: bytes) -> Received:
        """Take one frame from the peer; never raises for anything the peer sends."""
        if self._phase == "closed":
            return Received()
        replies: list[bytes] = []
        if self._phase == "open" and self._seq.unacknowledged() >= self.ack_every:
            replies.extend(frame for frame in (self.ack(),) if frame is not None)
        try:
            frame = read_frame(data, self.limits)
            if self._phase != "open":
                return self._handshake(frame, replies)
            return self._open(frame, replies)
        except ProtocolError as error:
            if self._phase != "open":
                # A peer that cannot even open the conversation is not spoken to any further.
                error.recoverable = False
            if not error.recoverable:
                self._phase = "closed"
            return Received(replies=(*replies, self._error_frame(error)), close=not error.recoverable, errors=(error,))

    def _open(self, frame: Frame, replies: list[bytes]) -> Received:
        bound = self._seq.conversation_id
        if (named := _named_conversation(frame)) and named != bound and frame.type != MessageType.CONFIGURATION:
            # Another conversation's stanza: its number means nothing here, so it is not seen.
            message = f"this connection is bound to conversation {bound!r}, not {named[:80]!r}; open a new one"
            raise ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message, None, frame.stanza_id or None)
        numbered = frame.stanza_id != 0 and frame.type not in _UNNUMBERED
        if numbered:
            if frame.stanza_id * self._sign > 0:
                peer = "server" if self.role == "client" else "client"
                message = f"envelope.stanzaId {frame.stanza_id} has the wrong sign for a {peer} message"
                raise ProtocolError(ErrorCode.INVALID_MESSAGE, message, None, frame.stanza_id)
            if not self._seq.see(frame.stanza_id):
                return Received(replies=tuple(replies))  # a duplicate: dropped silently
            if frame.meta and (acknowledged := frame.meta.get(META_ACK)) is not None:
                self._acknowledged_in_meta(acknowledged)
        if frame.type == MessageType.CONFIGURATION:
            message = f"this connection is bound to conversation {self._seq.conversation_id!r}; open a new one"
            raise ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message)
        try:
            envelope = frame.open()
        except ProtocolError as error:
            if (answer := self._invalid_result(frame, error)) is None:
                raise
            return Received((answer,), (*replies, self._error_frame(error)), errors=(error,))
        match envelope.message:
            case Acknowledgement(acknowledged_stanza_id=acknowledged):
                self._seq.acknowledged(abs(acknowledged))
                return Received(replies=tuple(replies))
            case ErrorMessage(recoverable=False):
                self._phase = "closed"
                return Received((envelope,), tuple(replies), close=True)
            case _:
                return Received((envelope,), tuple(replies))

    @staticmethod
    def _invalid_result(frame: Frame, error: ProtocolError) -> Envelope | None:
        """A refused ToolUseResult whose id can be read, as the `invalid_result` failure it stands for.

        The peer gets its 105 all the same; the request it names is answered, so that nothing
        waits for it until a deadline.
        """
        if frame.type != MessageType.TOOL_USE_RESULT or error.code != ErrorCode.INVALID_MESSAGE:
            return None
        answer = ToolUseResult.invalid(frame.body, error.message)
        return None if answer is None else Envelope(frame.stanza_id, frame.conversation_id, answer, frame.meta)

    def _acknowledged_in_meta(self, value: object) -> None:
        """Apply a piggybacked acknowledgement (`meta.acknowledgedStanzaId`).

        As an Acknowledgement's, except that a value naming no stanza this end sent (not an int,
        the wrong sign, beyond the last) is ignored rather than refused: the message carrying it
        is still delivered.
        """
        if type(value) is int and value * self._sign > 0 and abs(value) < self._seq.next:
            self._seq.acknowledged(abs(value))

    def _handshake(self, frame: Frame, replies: list[bytes]) -> Received:
        if self._phase == "accepting":
            raise ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "wait for the server's Configuration before sending")
        if frame.type not in (MessageType.CONFIGURATION, MessageType.ERROR) or (
            frame.type == MessageType.ERROR and self.role == "server"
        ):
            raise ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration")
        envelope = frame.open()
        match envelope.message:
            case ErrorMessage(recoverable=recoverable):
                if not recoverable:
                    self._phase = "closed"
                return Received((envelope,), tuple(replies), close=not recoverable)
            case Configuration() as config if self.role == "server":
                self._hello = config
                self._phase = "accepting"
                return Received((envelope,), tuple(replies))
            case Configuration() as config:
                return Received((envelope,), (*replies, *self._answered(config)))
            case _:  # pragma: no cover (the type was checked above)
                raise ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration")

    def _answered(self, config: Configuration) -> list[bytes]:
        """Client: the server bound a conversation; resend what it has not seen."""
        if not config.conversation_id:
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, "the server's Configuration must name the conversation")
        if self._requested and config.conversation_id != self._requested:
            message = f"asked to resume {self._requested!r}, the server bound {config.conversation_id!r}"
            raise ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message, False)
        if self._seq.conversation_id != config.conversation_id:
            self._seq = Sequencer(config.conversation_id, max_outbox=self.max_outbox)
        self.peer_features = config.features
        self._piggybacking = self.piggyback and ACK_IN_META in config.features
        self._phase = "open"
        return self._seq.replay_after(config.last_sequence_seen)

    def _offered(self, features: tuple[str, ...]) -> tuple[str, ...]:
        """The features of this end's Configuration: the caller's, and `ackInMeta` if offered."""
        if self.piggyback and ACK_IN_META not in features:
            return (*features, ACK_IN_META)
        return features

    def _require(self, role: Role, method: str) -> None:
        if self.role != role:
            raise UsageError(f"{method}() is for the {role} end of a connection")

    def _error_frame(self, error: ProtocolError) -> bytes:
        body = ErrorMessage.from_error(error, id=self._new_id())
        return encode(Envelope(0, self._seq.conversation_id or "", body))


def _named_conversation(frame: Frame) -> str:
    """The conversation a frame names: its envelope's, else (a dialect's) its body's; "" for none."""
    if frame.conversation_id:
        return frame.conversation_id
    in_body = frame.body.get("conversationId") if frame.type in CONVERSATION_IN_BODY else None
    return in_body if isinstance(in_body, str) else ""
