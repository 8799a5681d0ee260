"""The published protocol's conversation messages: errors, text, acknowledgements, the handshake.

Each body is a frozen dataclass with snake_case fields; `to_body()` gives the camelCase wire map
(optional fields only when set) and `from_body()` reads one back, raising `ProtocolError` 105
for a field of the wrong type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self, cast

from .error_codes import ProtocolError, Severity
from .wire import Fields, MessageType

__all__ = [
    "Acknowledgement",
    "AssistantMessageBody",
    "AssistantSentence",
    "Configuration",
    "ControlStop",
    "ErrorMessage",
    "StartAnswer",
    "UserMessageBody",
]

STANZA_MAX = 2**31 - 1
"""Stanza ids are int32 on the wire."""
_ACKNOWLEDGED = "acknowledgedStanzaId"


def without_none(body: dict[str, Any]) -> dict[str, Any]:
    """Drop the optional fields that are not set, keeping the order of the rest."""
    return {key: value for key, value in body.items() if value is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorMessage:
    """A protocol or system failure (type 1). Tool failures are ToolUseResults, never this."""

    type: ClassVar[MessageType] = MessageType.ERROR
    id: str
    """The error's own id."""
    code: int
    """An `ErrorCode`: 1xx format and protocol, 2xx conversation, 3xx tool, 5xx server."""
    message: str
    """What went wrong, for people; names the refused field where there is one."""
    severity: int = Severity.ERROR
    """0 info, 1 warning, 2 error, 3 critical (`Severity`)."""
    recoverable: bool = True
    """False when the sender closes the connection after this message."""
    originating_id: int | str | None = None
    """The stanza id of the frame that caused the error, when known."""

    @classmethod
    def from_error(cls, error: ProtocolError, *, id: str) -> Self:
        """Build the ErrorMessage that answers a refused frame."""
        return cls(
            id=id,
            code=error.code,
            message=error.message,
            severity=error.severity,
            recoverable=error.recoverable,
            originating_id=error.originating_id,
        )

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none(
            {
                "id": self.id,
                "code": self.code,
                "message": self.message,
                "severity": self.severity,
                "recoverable": self.recoverable,
                "originatingId": self.originating_id,
            }
        )

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body; a numeric string `code` is accepted (a dialect seen in the field)."""
        fields = Fields(body, "ErrorMessage")
        message = fields.text("message", "")
        code: Any = fields.get("code")
        if isinstance(code, str):
            # Another dialect's textual code: keep its text in the message, as its number is unknown.
            code, message = (int(code), message) if code.isdecimal() and len(code) < 6 else (0, f"{code}: {message}")
        origin = fields.get("originatingId")
        if origin is not None and (not isinstance(origin, int | str) or isinstance(origin, bool)):
            raise fields.refuse("originatingId", "an integer or a string", origin)
        return cls(
            id=fields.text("id", ""),
            code=Fields({"code": code}, "ErrorMessage").integer("code", low=0, high=65535),
            message=message,
            severity=fields.integer("severity", int(Severity.ERROR), low=0, high=3),
            recoverable=fields.flag("recoverable", True),
            originating_id=origin,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Text:
    """A whole text message: the user's (type 2) or the assistant's (type 3)."""

    type: ClassVar[MessageType]
    id: str
    """The message's id, unique in the conversation."""
    content: str
    """The text."""
    previous_id: str | None = None
    """The id of the message this one follows (a user's) or answers (the assistant's)."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"id": self.id, "content": self.content, "previousId": self.previous_id})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, cls.type.name.title().replace("_", ""))  # the wire name: "UserMessage"
        return cls(
            id=fields.text("id", non_empty=True),
            content=fields.text("content"),
            previous_id=fields.optional_text("previousId"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessageBody(_Text):
    """What the user said (type 2, client → server)."""

    type: ClassVar[MessageType] = MessageType.USER_MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessageBody(_Text):
    """A complete, non-streamed answer (type 3, server → client)."""

    type: ClassVar[MessageType] = MessageType.ASSISTANT_MESSAGE


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledgement:
    """The receiver processed every stanza of its peer up to this one (type 8, both ways)."""

    type: ClassVar[MessageType] = MessageType.ACKNOWLEDGEMENT
    acknowledged_stanza_id: int
    """The peer's stanza id (signed, as sent); cumulative. 0 acknowledges nothing."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return {"acknowledgedStanzaId": self.acknowledged_stanza_id}

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body; a dialect's `lastSeenStanzaId` is read for `acknowledgedStanzaId`.

        A body naming no stanza (empty, as a dialect sends) acknowledges nothing (0): reading it as
        "everything" could drop from the outbox frames the peer never got.
        """
        fields = Fields(body, "Acknowledgement")
        key = "lastSeenStanzaId" if fields.has("lastSeenStanzaId") and not fields.has(_ACKNOWLEDGED) else _ACKNOWLEDGED
        return cls(acknowledged_stanza_id=fields.integer(key, 0, low=-STANZA_MAX, high=STANZA_MAX))


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlStop:
    """Stop the current answer or operation (type 10, client → server)."""

    type: ClassVar[MessageType] = MessageType.CONTROL_STOP
    run_id: str | None = None
    """The run to stop; the conversation's current run when absent."""
    reason: str | None = None
    """Why, for the logs and the model."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"runId": self.run_id, "reason": self.reason})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "ControlStop")
        return cls(run_id=fields.optional_text("runId"), reason=fields.optional_text("reason"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Configuration:
    """The handshake (type 12): the client's opens a connection, the server's answers it."""

    type: ClassVar[MessageType] = MessageType.CONFIGURATION
    conversation_id: str = ""
    """Client: the conversation to resume, empty for a new one. Server: the conversation bound."""
    last_sequence_seen: int = 0
    """The absolute value of the last stanza the sender processed from its peer; the peer
    resends what follows it."""
    client_version: str | None = None
    """The client's name and version (client only)."""
    device: str | None = None
    """What the client runs on (client only)."""
    features: tuple[str, ...] = ()
    """Optional features the sender supports."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        body = without_none(
            {
                "conversationId": self.conversation_id,
                "lastSequenceSeen": self.last_sequence_seen,
                "clientVersion": self.client_version,
                "device": self.device,
            }
        )
        body["features"] = list(self.features)
        return body

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body; `features` may also be a map of feature name to true."""
        fields = Fields(body, "Configuration")
        features = fields.get("features")
        if isinstance(features, dict):
            named = cast("dict[str, Any]", features)
            chosen = tuple(name for name, on in named.items() if on is True)
        else:
            chosen = fields.texts("features")
        return cls(
            conversation_id=fields.text("conversationId", ""),
            last_sequence_seen=fields.integer("lastSequenceSeen", 0, low=0, high=STANZA_MAX),
            client_version=fields.optional_text("clientVersion"),
            device=fields.optional_text("device"),
            features=chosen,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class StartAnswer:
    """A streamed answer begins (type 13, server → client)."""

    type: ClassVar[MessageType] = MessageType.START_ANSWER
    message_id: str
    """The id of the answer; its sentences carry it."""
    previous_id: str | None = None
    """The id of the message this one answers."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none({"messageId": self.message_id, "previousId": self.previous_id})

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "StartAnswer")
        return cls(message_id=fields.text("messageId", non_empty=True), previous_id=fields.optional_text("previousId"))


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantSentence:
    """One streamed piece of an answer (type 16, server → client)."""

    type: ClassVar[MessageType] = MessageType.ASSISTANT_SENTENCE
    message_id: str
    """The id of the answer, from its StartAnswer."""
    sequence: int
    """Position of the piece in the answer, from 0."""
    text: str
    """The piece of text."""
    is_final: bool = False
    """True on the answer's last piece."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return {"messageId": self.message_id, "sequence": self.sequence, "text": self.text, "isFinal": self.is_final}

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body."""
        fields = Fields(body, "AssistantSentence")
        return cls(
            message_id=fields.text("messageId", non_empty=True),
            sequence=fields.integer("sequence", low=0),
            text=fields.text("text"),
            is_final=fields.flag("isFinal", False),
        )
