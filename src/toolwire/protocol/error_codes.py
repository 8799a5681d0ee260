"""`ProtocolError` and the table of ErrorMessage codes.

A bad frame never raises out of `Connection.receive()`: the connection answers it with an
ErrorMessage built from the `ProtocolError` that `decode()` raised. The codes keep the ranges of
the published protocol (100–199 format and protocol, 200–299 conversation, 300–399 tool,
500–599 server) and add 401 / 403 for authentication:

| code | name | recoverable | when |
|---|---|---|---|
| 101 | `MALFORMED_FRAME` | yes | not MessagePack, extension types, non-string or repeated keys, trailing bytes |
| 102 | `UNKNOWN_TYPE` | yes | a message type this version does not know (the frame is skipped) |
| 103 | `HANDSHAKE_REQUIRED` | no | a message before the Configuration handshake |
| 104 | `FRAME_TOO_LARGE` | yes | the frame is longer than `Limits.max_frame_bytes` |
| 105 | `INVALID_MESSAGE` | yes | the envelope or a body field is missing or has the wrong type or value |
| 106 | `LIMIT_EXCEEDED` | yes | a string, binary, array or map too long, too many (or too big) containers, too deep |
| 107 | `CONVERSATION_SWITCH_REFUSED` | yes | a second Configuration, or a frame of another conversation |
| 108 | `TOO_MANY_REFUSALS` | no | the connection had more frames refused than the server allows |
| 201 | `CONVERSATION_NOT_FOUND` | no | the conversation to resume does not exist |
| 202 | `CONVERSATION_FORBIDDEN` | no | the conversation belongs to another principal |
| 203 | `CONVERSATION_LIMIT` | no | the principal has as many conversations as the server allows |
| 301 | `TOOL_NOT_FOUND` | yes | a request names a tool the receiver does not know |
| 302 | `RESULT_REFUSED` | yes | a ToolUseResult for an unknown, foreign or already answered request id |
| 304 | `TOOL_TIMEOUT` | yes | a tool did not answer in time |
| 401 | `UNAUTHENTICATED` | no | no valid credentials |
| 403 | `FORBIDDEN` | no | the credentials do not allow this |
| 501 | `INTERNAL` | yes | the server failed; the message says nothing more |
| 503 | `SERVER_BUSY` | yes | a UserMessage found the server's run queue full: nothing was started or stored |
"""

from __future__ import annotations

from enum import IntEnum
from typing import Final

from ..errors import ToolwireError

__all__ = ["ErrorCode", "ProtocolError", "Severity", "default_recoverable"]


class ErrorCode(IntEnum):
    """The `code` of an ErrorMessage (type 1)."""

    MALFORMED_FRAME = 101
    """Not MessagePack, or outside the subset toolwire accepts (no extension types, string keys)."""
    UNKNOWN_TYPE = 102
    """A message type this version does not know; the frame was skipped."""
    HANDSHAKE_REQUIRED = 103
    """The first message of a connection must be a Configuration."""
    FRAME_TOO_LARGE = 104
    """The frame exceeds `Limits.max_frame_bytes`."""
    INVALID_MESSAGE = 105
    """An envelope or body field is missing or has the wrong type or value; the message names it."""
    LIMIT_EXCEEDED = 106
    """A length, count or depth limit of `Limits` was exceeded."""
    CONVERSATION_SWITCH_REFUSED = 107
    """A live connection stays on its conversation (a frame naming another is dropped); open a new
    connection for another one."""
    TOO_MANY_REFUSALS = 108
    """The server refused more of the connection's frames than it allows, and closes it."""
    CONVERSATION_NOT_FOUND = 201
    """The conversation to resume does not exist (any more)."""
    CONVERSATION_FORBIDDEN = 202
    """The conversation belongs to another principal."""
    CONVERSATION_LIMIT = 203
    """The principal owns as many conversations as the server allows; resume one of them instead."""
    TOOL_NOT_FOUND = 301
    """The named tool is not registered."""
    RESULT_REFUSED = 302
    """A ToolUseResult names an unknown, foreign or already answered request id."""
    TOOL_TIMEOUT = 304
    """A tool did not answer within its deadline."""
    UNAUTHENTICATED = 401
    """No valid credentials were presented."""
    FORBIDDEN = 403
    """The credentials do not allow this operation."""
    INTERNAL = 501
    """The server failed; details stay in its logs."""
    SERVER_BUSY = 503
    """The server runs as many runs as it allows and its queue is full: the UserMessage was refused
    (not stored, no run started); send it again later."""


class Severity(IntEnum):
    """The `severity` of an ErrorMessage."""

    INFO = 0
    WARNING = 1
    ERROR = 2
    CRITICAL = 3


_NOT_RECOVERABLE: Final = frozenset(
    (
        ErrorCode.HANDSHAKE_REQUIRED,
        ErrorCode.TOO_MANY_REFUSALS,
        ErrorCode.CONVERSATION_NOT_FOUND,
        ErrorCode.CONVERSATION_FORBIDDEN,
        ErrorCode.CONVERSATION_LIMIT,
        ErrorCode.UNAUTHENTICATED,
        ErrorCode.FORBIDDEN,
    )
)


def default_recoverable(code: int) -> bool:
    """Tell whether a connection survives an error of this code unless said otherwise."""
    return code not in _NOT_RECOVERABLE


class ProtocolError(ToolwireError):
    """A frame or message was refused; the connection answers it with an ErrorMessage.

    Args:
        code: An `ErrorCode` (any int in the documented ranges is accepted).
        message: What was wrong, naming the field; sent to the peer, so no internal details.
        recoverable: Whether the connection continues; defaults by code (see the table above).
        originating_id: The stanza id of the refused frame, when it could be read.
    """

    def __init__(
        self,
        code: int,
        message: str,
        recoverable: bool | None = None,
        originating_id: int | str | None = None,
    ) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.recoverable = default_recoverable(code) if recoverable is None else recoverable
        self.originating_id = originating_id

    @property
    def severity(self) -> Severity:
        """WARNING for an unknown type, ERROR for what a connection survives, CRITICAL otherwise."""
        if self.code == ErrorCode.UNKNOWN_TYPE:
            return Severity.WARNING
        return Severity.ERROR if self.recoverable else Severity.CRITICAL
