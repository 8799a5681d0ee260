"""The `Store` interface: threads, transcripts, the call ledger, approvals and grants.

The loop writes through a `Store` so that a thread can continue in another process and nothing is
lost in a crash:

- the transcript of each thread (append-only);
- the call ledger: every call is recorded PENDING *before* it runs (write-ahead) and ends
  TERMINAL with its result; the first terminal result written wins, later ones are refused;
  a client call is DISPATCHED once its request is durably on its way, and ANSWERED once the
  client's answer is saved (before it is acknowledged to the client);
- how each thread's last run stands (`RunRecord`): closed, or open and how often it was resumed;
- approvals, "always" grants and remembered denials (the `ApprovalStore` part).

Implementations: `MemoryStore` (one process, the default), `SqliteStore` (one file, WAL).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final, Protocol

from .._fast import quick_init
from ..envelopes import ToolCall, ToolResult
from ..messages import Message, ToolResultMessage
from ..policy import ApprovalStore

if TYPE_CHECKING:  # the protocol package loads msgpack; a store takes its states without importing it
    from ..protocol.sequencing import Sequencing

__all__ = ["CALL_STATE_ORDER", "COMES_WITH", "CallState", "LedgerEntry", "RunRecord", "Store"]


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


class Store(ApprovalStore, Protocol):
    """Persistent state of threads. Every method is safe to call from the event loop."""

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        ...

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread (None for none or an unknown thread)."""
        ...

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        ...

    async def count_threads(self, principal: str) -> int:
        """Return how many threads `principal` owns (a server caps new conversations with it)."""
        ...

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return the thread's transcript, oldest first (empty for a new thread)."""
        ...

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript, atomically."""
        ...

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run (write-ahead); existing ids are kept."""
        ...

    async def record_batch(self, thread_id: str, message: Message, entries: Sequence[LedgerEntry]) -> None:
        """Append the message that asks for a batch of calls and write the calls to the ledger, atomically.

        `append_messages(thread_id, [message])` and `record_calls(entries)` in one transaction:
        the loop's write-ahead before a batch runs.
        """
        ...

    async def complete_batch(
        self, thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[ToolResultMessage]:
        """Record each call's result and append one `ToolResultMessage` per call, atomically.

        For each call in order: `complete_call` with its result (the first terminal result wins);
        the message carries the result that won in the ledger (this one, or an earlier writer's;
        this one when the call was never recorded).

        Returns:
            The messages appended, in the calls' order.
        """
        ...

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a call forward (e.g. to DISPATCHED); a call never moves back, nor out of TERMINAL.

        Raises:
            UsageError: `state` is ANSWERED or TERMINAL: those come with the answer (by
                `save_wire_state`) or the result (by `complete_call`).
        """
        ...

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result (it wins)."""
        ...

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call."""
        ...

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in the order they were recorded."""
        ...

    async def load_client_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's client tool state as saved (None when there is none)."""
        ...

    async def save_client_state(self, thread_id: str, state: Mapping[str, Any] | None) -> None:
        """Replace the thread's client tool state (a JSON object); None deletes it."""
        ...

    async def load_wire_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the server's protocol state of the conversation (numbering, unacknowledged frames)."""
        ...

    async def save_wire_state(
        self,
        thread_id: str,
        state: Sequencing | Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> frozenset[str]:
        """Replace the conversation's protocol state (a `Sequencing` or its `to_dict()`); None deletes it.

        The server saves it before it writes a frame, so nothing it sent is lost with the process,
        and before it acknowledges what it received. A store may write only what changed since its
        last save of the thread (the outbox gains frames at its end and loses them at its start).

        Args:
            thread_id: The conversation.
            state: The state to keep.
            dispatched: Calls whose requests `state`'s outbox holds: moved to DISPATCHED (as
                `set_call_state`) in the same transaction.
            answered: Call id → the client's answer (a JSON object), for answers among what `state` has seen:
                each DISPATCHED call moves to ANSWERED with its answer, in the same transaction
                (a call in any other state keeps it: not dispatched yet, answered or settled already).

        Returns:
            The calls of `answered` whose answers were saved.
        """
        ...

    async def load_run(self, thread_id: str) -> RunRecord:
        """Return how the thread's last run stands (`RunRecord()` when nothing was saved)."""
        ...

    async def save_run(self, thread_id: str, record: RunRecord) -> None:
        """Replace how the thread's last run stands."""
        ...

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...
