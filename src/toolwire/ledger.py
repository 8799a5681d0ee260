"""The loop's side of the call ledger: each call's write-ahead entry, and what a stopped process left.

A batch's calls are written to the ledger (PENDING) before any of them runs, and each call's
result is written the moment it is decided (TERMINAL, the first result written winning), so a
denial or a refusal stays what it was across a crash. A process that stops in the middle of a
batch leaves calls without a result; the thread's next run finds them (`unfinished_batch`):

```
TERMINAL in the ledger               ──► that result
a call a toolset takes (`resume`)    ──► run again through the pipeline (the client toolset's calls):
                                           never sent (PENDING)  the policy is asked again (a new prompt)
                                           sent (DISPATCHED)     not asked again; same request id, stored deadline
                                           answered (ANSWERED)   the saved answer, nothing sent
waiting for consent (AWAITING_APPROVAL) ──► run again through the pipeline: it never started, the person is asked again
anything else (a function tool)      ──► Canceled by `system` (a function tool is never run twice)
```

The ledger entry of a call about to run is written by the loop (`toolwire.toolsets.surface.ledger_entry`):
a remote call's entry carries the request id and deadline its toolset gave.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from .envelopes import ToolCall, ToolResult
from .messages import AssistantMessage, Message, ToolResultMessage
from .store import CallState, LedgerEntry, RunRecord, ThreadStore

__all__ = ["Unfinished", "close_run", "record_result", "run_is_open", "unfinished_batch"]

INTERRUPTED = "The call was interrupted when the process stopped; it may not have run"


async def record_result(store: ThreadStore, thread_id: str, result: ToolResult) -> ToolResult:
    """Write a call's result to the ledger; return the result that won there (first writer wins)."""
    call_id = result.call_id or ""
    if await store.complete_call(thread_id, call_id, result):
        return result
    # Another writer's result won in the ledger: the transcript must say the same.
    won = await store.get_call(thread_id, call_id)
    return won.result if won is not None and won.result is not None else result


@dataclass(frozen=True, slots=True)
class Unfinished:
    """The last batch of a thread, as a stopped process left it: calls without a result."""

    request_index: int
    """The model request whose reply asked for the batch."""
    calls: tuple[ToolCall, ...]
    """The calls without a result in the transcript, in the model's order."""
    settled: dict[str, ToolResult]
    """Those whose result is in the ledger, by call id."""
    open: tuple[LedgerEntry, ...]
    """Those recorded without a result: a toolset may take them to run again (`resume`)."""

    def again(self, taken: Collection[str]) -> tuple[LedgerEntry, ...]:
        """The open calls to run again: those a toolset took, and those that waited for consent.

        The others end Canceled by `system`: they may have run.
        """
        again = tuple(
            entry for entry in self.open if entry.call.id in taken or entry.state is CallState.AWAITING_APPROVAL
        )
        for entry in self.open:
            if entry not in again:
                self.settled[entry.call.id] = ToolResult.canceled(entry.call.id, INTERRUPTED, "system")
        return again


async def unfinished_batch(
    store: ThreadStore, thread_id: str, history: Sequence[Message], *, entry_of: Callable[[ToolCall], LedgerEntry]
) -> Unfinished | None:
    """Find the calls of the thread's last batch that have no result in its transcript.

    Args:
        store: The thread's store.
        thread_id: The thread.
        history: Its transcript, as loaded.
        entry_of: The ledger entry of a call that was never recorded (a file older than the
            write-ahead batch); it is recorded, and ends Canceled by `system`.

    Returns:
        None when every call has its result (the common case).
    """
    missing = _missing(history)
    if not missing:
        return None
    settled: dict[str, ToolResult] = {}
    open_entries: list[LedgerEntry] = []
    request_index = -1
    for call in missing:
        entry = await store.get_call(thread_id, call.id)
        if entry is None:
            await store.record_calls([entry_of(call)])
            settled[call.id] = ToolResult.canceled(call.id, INTERRUPTED, "system")
            continue
        request_index = entry.request_index
        if entry.result is not None:
            settled[call.id] = entry.result
        else:
            open_entries.append(entry)
    return Unfinished(request_index, tuple(missing), settled, tuple(open_entries))


async def close_run(
    store: ThreadStore,
    thread_id: str,
    reason: str,
    *,
    answered: Callable[[LedgerEntry], ToolResult | None] | None = None,
) -> list[ToolResultMessage]:
    """Close the thread's run without running anything: its open calls end Canceled by `system`.

    A call whose result is in the ledger keeps it, and a remote call whose answer was saved
    (ANSWERED) gets the result of that answer (`answered`); the run is then marked closed, so that nothing
    resumes it. For a run that cannot be resumed (see `Agent(max_resume_attempts=)`) or an
    operator's cancel (`toolwire conversations cancel`).

    Args:
        store: The thread's store.
        thread_id: The thread.
        reason: The reason the Canceled results give.
        answered: The result of a saved answer (the client toolset's `answered`); without it
            such a call ends Canceled too.

    Returns:
        The result messages added to the transcript.
    """
    history = await store.load_messages(thread_id)
    results: list[ToolResult] = []
    missing = _missing(history)
    for call in missing:
        entry = await store.get_call(thread_id, call.id)
        result = None
        if entry is not None and entry.state is CallState.ANSWERED and answered is not None:
            result = answered(entry)
        results.append(result or ToolResult.canceled(call.id, reason, "system"))
    messages = await store.complete_batch(thread_id, missing, results) if missing else []
    await store.save_run(thread_id, RunRecord(closed_at=len(history) + len(messages)))
    return messages


def run_is_open(history: Sequence[Message], run: RunRecord) -> bool:
    """True when a thread's last run neither answered nor was closed: a stopped process left it."""
    if not history or run.closed_at == len(history):
        return False
    last = history[-1]
    return not (isinstance(last, AssistantMessage) and not last.tool_calls)


def _missing(history: Sequence[Message]) -> list[ToolCall]:
    """The calls of the transcript's last assistant message that have no result after it."""
    last = next(
        (index for index in range(len(history) - 1, -1, -1) if isinstance(history[index], AssistantMessage)), None
    )
    if last is None:
        return []
    assistant = history[last]
    assert isinstance(assistant, AssistantMessage)
    answered = {message.call_id for message in history[last + 1 :] if isinstance(message, ToolResultMessage)}
    return [call for call in assistant.tool_calls if call.id not in answered]
