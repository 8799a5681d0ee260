"""What `Client.send()` yields while the server answers, and the errors the client raises.

```
ToolwireError
├── ClientDisconnected
│   └── ConnectionClosed   the connection ended for good: refused, or reconnecting gave up
└── RunFailed              the server refused the message, or the run it started failed
```

`RegistrationError` (from `toolwire.errors`) is raised when the server refuses a registration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from ..envelopes import ToolResult
from ..errors import ClientDisconnected, ToolwireError
from ..protocol import ConsentAnswerBody, ConsentRequestBody, ToolUseRequest, ToolUseResult

__all__ = [
    "AnswerText",
    "ClientToolCall",
    "ConnectionClosed",
    "ConsentPrompt",
    "Event",
    "RemoteRunFinished",
    "RunFailed",
    "RunQueued",
    "RunStarted",
    "ServerToolCall",
    "ServerToolResult",
]


class ConnectionClosed(ClientDisconnected):
    """The connection ended for good: the server refused it, or reconnecting gave up.

    Args:
        message: What happened and what to check.
        code: The ErrorMessage code when the server gave one (201 no such conversation, ...).
    """

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class RunFailed(ToolwireError):
    """The server refused the message (e.g. a run is in progress) or the run it started failed.

    Args:
        message: What happened.
        run_id: The run that failed; None when the message itself was refused.
        code: The ErrorMessage code of a refused message: 105 (a run is in progress), 503 (the
            server is busy: its run queue is full; send the message again later).
    """

    def __init__(self, message: str, *, run_id: str | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id
        self.code = code


@dataclass(frozen=True, slots=True, kw_only=True)
class RunQueued:
    """The server runs as many runs as it allows: this one waits for a slot (RunStatus `queued`).

    Sent when the run is queued, then when its place changes (at most about once a second), and
    again after a reconnect; `RunStarted` follows once it starts.
    """

    run_id: str
    position: int
    """The run's place in the server's queue: 1 is the next to start."""
    message_id: str | None = None
    """The id of the message the run answers (None for a run resumed after a server restart)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted:
    """The server started a run for the message."""

    run_id: str
    message_id: str | None = None
    """The id of the message the run answers (None for a run resumed after a server restart)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnswerText:
    """A piece of the streamed answer (an AssistantSentence); print them in order."""

    text: str
    message_id: str
    """The answer this piece belongs to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolCall:
    """The server runs one of its own tools; shown for transparency, never executed here."""

    id: str
    """The call's id; the `ServerToolResult` repeats it."""
    tool_name: str
    arguments: dict[str, Any]
    mode: str | None = None
    """The call's `ToolMode` value, e.g. `"read"`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerToolResult:
    """The outcome of a `ServerToolCall`."""

    id: str
    tool_name: str
    """Empty when the call itself was not seen (e.g. sent before this client connected)."""
    result: ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolCall:
    """This client answered a tool request: it ran a handler, or refused, or replayed the ledger."""

    request: ToolUseRequest
    result: ToolUseResult
    """What was sent back; `result.error_code` tells a failure's kind."""
    duration_ms: float = 0.0
    """How long the handler ran (0 when nothing ran)."""
    replayed: bool = False
    """The request id was seen before: the stored result was sent again, nothing ran."""

    @property
    def tool_name(self) -> str:
        """The tool the server asked for."""
        return self.request.tool_name


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolCanceled:
    """The server settled a call this client was sent without its result (ToolUseCancel).

    Its handler, if it still ran, was cancelled, and no result is sent for it.
    """

    request_id: str
    code: str
    """How the server settled the call: `timeout`, `canceled`, `client_disconnected`, ..."""
    reason: str | None = None
    running: bool = False
    """The handler was still running (and was cancelled)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResultRefused:
    """The server refused a result this client sent (ErrorMessage 302).

    The call was settled without it (its deadline passed, the run stopped, the client was gone
    too long) or it was answered already. The tool ran; the model was not told its result.
    """

    request_id: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsentPrompt:
    """The server asked whether a call may run, and this client answered."""

    request: ConsentRequestBody
    answer: ConsentAnswerBody


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteRunFinished:
    """The run ended; `send()` stops after this event."""

    run_id: str
    reason: str | None = None
    """`answer`, `terminal_result`, `terminate`, `limit` or `canceled`."""
    detail: str | None = None
    """Which limit, why it was canceled."""
    output: str | None = None
    """The final answer."""


Event: TypeAlias = (
    RunQueued
    | RunStarted
    | AnswerText
    | ServerToolCall
    | ServerToolResult
    | ClientToolCall
    | ClientToolCanceled
    | ResultRefused
    | ConsentPrompt
    | RemoteRunFinished
)
"""Everything `Client.send()` yields."""
