"""What the store interfaces carry: a call's place in the ledger, a run's, a conversation's lease.

`CallState` and `LedgerEntry`, `RunRecord`, `ThreadInfo`, `Lease`.

Plain frozen data, shared by every backend; `toolwire.store` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from .._fast import quick_init
from ..envelopes import ToolCall, ToolResult

__all__ = ["CALL_STATE_ORDER", "COMES_WITH", "CallState", "Lease", "LedgerEntry", "RunRecord", "ThreadInfo"]


class CallState(StrEnum):
    """Where a call is in its life; it only moves forward."""

    PENDING = "pending"
    """Recorded, not yet started."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Waiting for a person's consent."""
    DISPATCHED = "dispatched"
    """Running (in process, or sent to the client that executes it)."""
    ANSWERED = "answered"
    """A client call whose client's answer is saved (`LedgerEntry.answer`); the result the model
    sees (after the filters) follows. A restart takes the saved answer and never asks again."""
    TERMINAL = "terminal"
    """Has its one result."""


CALL_STATE_ORDER: Final = {state: rank for rank, state in enumerate(CallState)}
"""Each state's place in a call's life; a call only moves to a later one."""
COMES_WITH: Final = {
    CallState.ANSWERED: "its answer: use save_wire_state(answered=...)",
    CallState.TERMINAL: "its result: use complete_call()",
}
"""The states `set_call_state` refuses, and what a call reaches them with."""


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    """One call in the ledger."""

    thread_id: str
    call: ToolCall
    request_index: int
    state: CallState = CallState.PENDING
    execution: str = "server"
    """`server` (run in process) or `client` (sent to a client to run)."""
    mode: str = "external"
    """The tool's `ToolMode` value when the call was recorded."""
    deadline: float | None = None
    """For a client call: its absolute wall-clock deadline (seconds since the epoch), so a re-send
    after a restart does not reset it. None for a server call (a restart closes those)."""
    request_id: str | None = None
    """For a client call: the id of its request to the client, kept so that a re-send after a
    reconnect or a restart carries the same id (the client de-duplicates by it)."""
    result: ToolResult | None = None
    """The call's one result, once TERMINAL."""
    answer: dict[str, Any] | None = None
    """For a client call, once ANSWERED: the client's answer as it arrived (its JSON object; the
    result the model sees is made from it, then passed through the filters)."""

    def finished(self, result: ToolResult) -> LedgerEntry:
        """Return this entry TERMINAL with `result`."""
        return LedgerEntry(
            thread_id=self.thread_id,
            call=self.call,
            request_index=self.request_index,
            state=CallState.TERMINAL,
            execution=self.execution,
            mode=self.mode,
            deadline=self.deadline,
            request_id=self.request_id,
            result=result,
            answer=self.answer,
        )

    def answered(self, answer: dict[str, Any]) -> LedgerEntry:
        """Return this entry ANSWERED with the client's `answer`."""
        return LedgerEntry(
            thread_id=self.thread_id,
            call=self.call,
            request_index=self.request_index,
            state=CallState.ANSWERED,
            execution=self.execution,
            mode=self.mode,
            deadline=self.deadline,
            request_id=self.request_id,
            answer=answer,
        )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """How a thread's last run stands, beyond what its transcript says."""

    closed_at: int = -1
    """The transcript's length when the run was closed without a final answer (a cancel, a
    limit, a terminal result, an operator's cancel): nothing to resume until it grows. -1: none."""
    resume_attempts: int = 0
    """How many times a restarted process began to resume the run without finishing it (a
    run whose resume keeps failing is closed instead, see `Agent(max_resume_attempts=)`)."""


@dataclass(frozen=True, slots=True)
class ThreadInfo:
    """A thread as a list of conversations shows it: whose it is, when it began and last changed."""

    thread_id: str
    principal: str | None
    created_at: float
    """When the thread was created, in seconds since the Unix epoch."""
    updated_at: float
    """Its last activity: when a user's message or an answer was last appended (its creation before that);
    a tool call's messages leave it as it was (on SQLite; the memory store counts every message)."""


@dataclass(frozen=True, slots=True)
class Lease:
    """The right of one replica (`owner`) to write a conversation, until `expires_at` unless renewed."""

    conversation: str
    """The conversation (thread id) it is the lease of."""
    owner: str
    """The replica that holds it (`toolwire serve --replica-id`)."""
    epoch: int
    """Goes up by one with each holder (1 for the first): a write under an older epoch is refused."""
    expires_at: float
    """When it expires unless renewed, in seconds since the Unix epoch, by the store's clock
    (the database server's for `PostgresStore`)."""
