"""What a front end brings to a thread besides a prompt: `Answer` (a front-end tool's result), `Approval`."""

from __future__ import annotations

from dataclasses import dataclass

from ...client_tools.definitions import ClientToolResponse
from ...envelopes import ToolResult
from ...errors import ToolwireError
from ...policy import ConsentAnswer
from ...protocol.results import tool_result

__all__ = ["Answer", "Approval", "HistoryConflict", "Reconciled"]


class HistoryConflict(ToolwireError):
    """The client's `messages` do not fit the stored transcript; nothing was run or stored."""

    def __init__(self, message: str, *, status: int = 400, code: str = "history_mismatch") -> None:
        super().__init__(message)
        self.status = status
        """The HTTP status of the refusal: 400 (history the thread does not have), 409 (a call's second result)."""
        self.code = code
        """A machine-readable reason (`RUN_ERROR.code`, the JSON body's `code`)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A front end's result for one of the thread's waiting front-end tool calls (a `tool` message)."""

    call_id: str
    content: str
    error: str | None = None
    """Set when the front end says the tool failed (`ToolMessage.error`)."""

    def response(self, request_id: str) -> ClientToolResponse:
        """The client tool response this answer stands for (text content, or a failure)."""
        if self.error is not None:
            return ClientToolResponse(request_id=request_id, success=False, error_message=self.error)
        return ClientToolResponse.from_dict(
            {"requestId": request_id, "content": [{"type": "text", "text": self.content}]}
        )

    def result(self, tool: str) -> ToolResult:
        """The `ToolResult` the call gets from this answer (as the client tools would make it)."""
        return tool_result(self.response(self.call_id).to_message(), call_id=self.call_id, tool=tool)


@dataclass(frozen=True, slots=True)
class Approval:
    """A front end's answer to the consent question about one call (AG-UI: a `resume` entry)."""

    call_id: str
    answer: ConsentAnswer


@dataclass(frozen=True, slots=True)
class Reconciled:
    """What a request adds to its thread."""

    prompt: str | None
    """The new user message(s), joined; None when there are none."""
    answers: tuple[Answer, ...]
    """Results for waiting front-end calls, in the client's order."""
    approvals: tuple[Approval, ...] = ()
    """Answers to consent questions (approvals), for calls the thread made; checked by the endpoint."""
    resumed: bool = False
    """The request answers the run's open questions (AG-UI: it has `resume` entries): all must be answered."""
