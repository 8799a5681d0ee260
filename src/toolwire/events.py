"""What a run reports: `RunResult` when it ends, and the events `Agent.stream()` yields on the way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._fast import quick_init
from .invocation import ConsentRequested, ToolCallFinished, ToolCallStarted, ToolProgress
from .messages import Message, Usage
from .models import TextDelta

__all__ = ["EndReason", "ModelRequestStarted", "RunEvent", "RunFinished", "RunResult"]

EndReason = Literal["answer", "terminal_result", "terminate", "limit", "canceled"]
"""Why a run ended: the model answered; a result was terminal; a filter set `terminate`; a limit
was reached (see `RunResult.detail`); the caller canceled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """How a run ended, what it answered, and the thread's whole transcript."""

    output: str
    """The final answer (or a terminal result's `message`); empty when the run ended otherwise."""
    reason: EndReason
    detail: str = ""
    """Which limit was reached, or why the run was canceled."""
    thread_id: str
    transcript: list[Message]
    """Every message of the thread, this run's included; valid for OpenAI and Anthropic."""
    new_messages: list[Message]
    """The messages this run added."""
    usage: Usage


@quick_init
@dataclass(frozen=True, slots=True)
class ModelRequestStarted:
    """The loop is asking the model (again)."""

    request_index: int


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended; the last event of a stream."""

    result: RunResult


RunEvent = (
    ModelRequestStarted | TextDelta | ToolCallStarted | ConsentRequested | ToolProgress | ToolCallFinished | RunFinished
)
"""What `Agent.stream()` yields, in the order it happens."""
