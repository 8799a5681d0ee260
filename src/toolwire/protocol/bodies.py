"""Message types, the `Envelope` every message travels in, and reading a body by its type.

```
{"stanzaId": 3, "conversationId": "c_1", "type": 2, "meta": {...}, "body": {"id": "m_1", ...}}
```

`Envelope.to_map()` gives this map for the codec. The bodies of types 1, 2, 3, 8 and 13 repeat the
envelope's `conversationId` as their second key, as the published protocol documents them;
a decoder takes it from the envelope and only checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, assert_never

from .error_codes import ErrorCode, ProtocolError
from .extensions import (
    ConsentAnswerBody,
    ConsentRequestBody,
    RegisterTools,
    RegisterToolsResult,
    RunStatus,
    ToolUseCancel,
)
from .published import (
    Acknowledgement,
    AssistantMessageBody,
    AssistantSentence,
    Configuration,
    ControlStop,
    ErrorMessage,
    StartAnswer,
    UserMessageBody,
)
from .tool_use import ToolUseRequest, ToolUseResult
from .wire import MessageType

__all__ = [
    "CONVERSATION_IN_BODY",
    "Acknowledgement",
    "AssistantMessageBody",
    "AssistantSentence",
    "Configuration",
    "ConsentAnswerBody",
    "ConsentRequestBody",
    "ControlStop",
    "Envelope",
    "ErrorMessage",
    "MessageBody",
    "MessageType",
    "RegisterTools",
    "RegisterToolsResult",
    "RunStatus",
    "StartAnswer",
    "ToolUseCancel",
    "ToolUseRequest",
    "ToolUseResult",
    "UserMessageBody",
    "parse_body",
]

MessageBody: TypeAlias = (
    ErrorMessage
    | UserMessageBody
    | AssistantMessageBody
    | ToolUseRequest
    | ToolUseResult
    | Acknowledgement
    | ControlStop
    | Configuration
    | StartAnswer
    | AssistantSentence
    | RegisterTools
    | RegisterToolsResult
    | ConsentRequestBody
    | ConsentAnswerBody
    | RunStatus
    | ToolUseCancel
)
"""Any message body; tell them apart with `match` or by `message.type`."""

CONVERSATION_IN_BODY: Final = frozenset(
    (
        MessageType.ERROR,
        MessageType.USER_MESSAGE,
        MessageType.ASSISTANT_MESSAGE,
        MessageType.ACKNOWLEDGEMENT,
        MessageType.START_ANSWER,
    )
)
"""The types whose body repeats the envelope's `conversationId`."""


def parse_body(type: int, body: Mapping[str, Any]) -> MessageBody:
    """Read the body of a message of numeric type `type`.

    Raises:
        ProtocolError: 102 for a type this version does not know, 105 for a bad field.
    """
    try:
        known = MessageType(type)
    except ValueError:
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown message type {type}; the message was skipped") from None
    match known:
        case MessageType.ERROR:
            return ErrorMessage.from_body(body)
        case MessageType.USER_MESSAGE:
            return UserMessageBody.from_body(body)
        case MessageType.ASSISTANT_MESSAGE:
            return AssistantMessageBody.from_body(body)
        case MessageType.TOOL_USE_REQUEST:
            return ToolUseRequest.from_body(body)
        case MessageType.TOOL_USE_RESULT:
            return ToolUseResult.from_body(body)
        case MessageType.ACKNOWLEDGEMENT:
            return Acknowledgement.from_body(body)
        case MessageType.CONTROL_STOP:
            return ControlStop.from_body(body)
        case MessageType.CONFIGURATION:
            return Configuration.from_body(body)
        case MessageType.START_ANSWER:
            return StartAnswer.from_body(body)
        case MessageType.ASSISTANT_SENTENCE:
            return AssistantSentence.from_body(body)
        case MessageType.REGISTER_TOOLS:
            return RegisterTools.from_body(body)
        case MessageType.REGISTER_TOOLS_RESULT:
            return RegisterToolsResult.from_body(body)
        case MessageType.CONSENT_REQUEST:
            return ConsentRequestBody.from_body(body)
        case MessageType.CONSENT_ANSWER:
            return ConsentAnswerBody.from_body(body)
        case MessageType.RUN_STATUS:
            return RunStatus.from_body(body)
        case MessageType.TOOL_USE_CANCEL:
            return ToolUseCancel.from_body(body)
        case _:
            assert_never(known)


@dataclass(frozen=True, slots=True)
class Envelope:
    """One message on the wire, with its place in the conversation."""

    stanza_id: int
    """Client messages count 1, 2, 3…, server messages -1, -2, -3…; 0 for the frames that are not
    sequenced (Configuration, Acknowledgement, a connection's own ErrorMessages)."""
    conversation_id: str
    """The conversation (thread) the message belongs to; empty on a client's first Configuration."""
    message: MessageBody
    """The body."""
    meta: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """Free metadata: `timestamp`, `clientVersion`, tracing (`messaging.trace_id`, `messaging.span_id`)."""

    @property
    def type(self) -> MessageType:
        """The message type, from the body's class."""
        return self.message.type

    def to_map(self) -> dict[str, Any]:
        """Return the wire map `{stanzaId, conversationId, type, meta?, body}` (meta only when set)."""
        body = self.message.to_body()
        if self.type in CONVERSATION_IN_BODY:
            items = list(body.items())
            body = dict([*items[:1], ("conversationId", self.conversation_id), *items[1:]])
        wire: dict[str, Any] = {
            "stanzaId": self.stanza_id,
            "conversationId": self.conversation_id,
            "type": int(self.type),
        }
        if self.meta:
            wire["meta"] = dict(self.meta)
        wire["body"] = body
        return wire
