"""The loop's side of the call ledger: each call's write-ahead entry, and what a stopped process left.

A batch's calls are written to the ledger (PENDING) before any of them runs, and each call's
result is written the moment it is decided (TERMINAL, the first result written winning), so a
denial or a refusal stays what it was across a crash. A process that stops in the middle of a
batch leaves calls without a result; the thread's next run finds them (`unfinished_batch`):

```
TERMINAL in the ledger            ──► that result
a client call, thread has clients ──► run again through the pipeline:
                                        never sent (PENDING)  the policy is asked again (a new prompt)
                                        sent (DISPATCHED)     not asked again; same request id, stored deadline
                                        answered (ANSWERED)   the saved answer, nothing sent
anything else (a server tool)     ──► Canceled by `system` (a server tool is never run twice)
```
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from .client_tools.channel import new_request_id
from .envelopes import ToolCall, ToolResult
from .messages import AssistantMessage, Message, ToolResultMessage
from .protocol import tool_result
from .protocol.results import answer_from_json
from .store import CallState, LedgerEntry, RunRecord, ThreadStore
from .tools import Toolbox

__all__ = ["Unfinished", "close_run", "new_ledger_entry", "record_result", "run_is_open", "unfinished_batch"]

INTERRUPTED = "The call was interrupted when the process stopped; it may not have run"


def new_ledger_entry(thread_id: str, request_index: int, call: ToolCall, toolbox: Toolbox) -> LedgerEntry:
    """The ledger entry of a call about to run; a client call's has its request id and deadline."""
    tool = toolbox.get(call.name)
    if tool is None or not tool.is_client:
        mode = tool.mode.value if tool is not None else "external"
        return LedgerEntry(thread_id=thread_id, call=call, request_index=request_index, mode=mode)
    return LedgerEntry(
        thread_id=thread_id,
        call=call,
        request_index=request_index,
        execution="client",
        mode=tool.mode.value,
        deadline=time.time() + tool.timeout,  # what a re-send after a restart keeps to
        request_id=new_request_id(),
    )


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
    """Those whose result is known now (the ledger's, or Canceled by `system`), by call id."""
    again: tuple[LedgerEntry, ...]
    """The client calls to run again through the pipeline (see the module docstring)."""


async def unfinished_batch(
    store: ThreadStore, toolbox: Toolbox, thread_id: str, history: Sequence[Message], *, clients: bool
) -> Unfinished | None:
    """Find the calls of the thread's last batch that have no result in its transcript.

    Args:
        store: The thread's store.
        toolbox: The server's tools (the mode of a call that was never recorded).
        thread_id: The thread.
        history: Its transcript, as loaded.
        clients: The thread has client tools now (its client calls can run again).

    Returns:
        None when every call has its result (the common case).
    """
    missing = _missing(history)
    if not missing:
        return None
    settled: dict[str, ToolResult] = {}
    again: list[LedgerEntry] = []
    request_index = -1
    for call in missing:
        entry = await store.get_call(thread_id, call.id)
        if entry is None:  # never recorded (a file older than the write-ahead batch)
            await store.record_calls([new_ledger_entry(thread_id, -1, call, toolbox)])
        else:
            request_index = entry.request_index
        if entry is not None and entry.result is not None:
            settled[call.id] = entry.result
        elif entry is not None and entry.execution == "client" and clients:
            again.append(entry)
        else:
            settled[call.id] = ToolResult.canceled(call.id, INTERRUPTED, "system")
    return Unfinished(request_index, tuple(missing), settled, tuple(again))


async def close_run(
    store: ThreadStore, thread_id: str, reason: str, *, invoke_timeout: float = 30.0
) -> list[ToolResultMessage]:
    """Close the thread's run without running anything: its open calls end Canceled by `system`.

    A call whose result is in the ledger keeps it, and a client call whose answer was saved
    (ANSWERED) gets the result of that answer; the run is then marked closed, so that nothing
    resumes it. For a run that cannot be resumed (see `Agent(max_resume_attempts=)`) or an
    operator's cancel (`toolwire conversations cancel`).

    Args:
        store: The thread's store.
        thread_id: The thread.
        reason: The reason the Canceled results give.
        invoke_timeout: The agent's client tool timeout (the duration of a client's `timeout` answer).

    Returns:
        The result messages added to the transcript.
    """
    history = await store.load_messages(thread_id)
    results: list[ToolResult] = []
    missing = _missing(history)
    for call in missing:
        entry = await store.get_call(thread_id, call.id)
        if entry is not None and entry.state is CallState.ANSWERED and entry.answer is not None:
            results.append(_answer_result(entry, invoke_timeout))
        else:
            results.append(ToolResult.canceled(call.id, reason, "system"))
    messages = await store.complete_batch(thread_id, missing, results) if missing else []
    await store.save_run(thread_id, RunRecord(closed_at=len(history) + len(messages)))
    return messages


def _answer_result(entry: LedgerEntry, invoke_timeout: float) -> ToolResult:
    """The result of a client's saved answer (without the filters: the run is not going on)."""
    assert entry.answer is not None
    message = answer_from_json(entry.answer)
    deadline_ms = round(invoke_timeout * 1000)
    return tool_result(message, call_id=entry.call.id, tool=entry.call.name, deadline_ms=deadline_ms)


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
