"""The loop's side of the call ledger: each call's write-ahead entry, and recovery after a stop.

A batch's calls are written to the ledger (PENDING) before any of them runs, and each result
makes its call TERMINAL, the first result written winning. A process that stops in the middle of
a batch leaves calls without a result; the thread's next run gives each one (`recover_calls`), so
that its transcript stays valid.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .client_tools.channel import new_request_id
from .envelopes import ToolCall, ToolResult
from .messages import AssistantMessage, Message, ToolResultMessage
from .store import LedgerEntry, Store
from .tools import Toolbox

if TYPE_CHECKING:  # loaded on the first run that uses client tools (pydantic models, jsonschema-rs)
    from .client_tools.session import ClientSession

__all__ = ["new_ledger_entry", "record_result", "recover_calls"]


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


async def record_result(store: Store, thread_id: str, result: ToolResult) -> ToolResult:
    """Write a call's result to the ledger; return the result that won there (first writer wins)."""
    call_id = result.call_id or ""
    if await store.complete_call(thread_id, call_id, result):
        return result
    # Another writer's result won in the ledger: the transcript must say the same.
    won = await store.get_call(thread_id, call_id)
    return won.result if won is not None and won.result is not None else result


async def recover_calls(
    store: Store, toolbox: Toolbox, thread_id: str, history: list[Message], session: ClientSession | None
) -> list[ToolResultMessage]:
    """Give a result to each call a stopped process left without one.

    A client call sent before the stop is asked for again, with the same request id, until
    its stored deadline; any other call is closed as Canceled by `system` (never re-run).

    Args:
        store: The thread's store; the results go to its ledger and transcript.
        toolbox: The server's tools (the mode of a call that was never recorded).
        thread_id: The thread to recover.
        history: The thread's transcript, as loaded.
        session: The thread's client tools, which re-send client calls; None without them.

    Returns:
        The result messages added to the transcript (none when no call was left without one).
    """
    last = next(
        (index for index in range(len(history) - 1, -1, -1) if isinstance(history[index], AssistantMessage)), None
    )
    if last is None:
        return []
    assistant = history[last]
    assert isinstance(assistant, AssistantMessage)
    answered = {message.call_id for message in history[last + 1 :] if isinstance(message, ToolResultMessage)}
    missing = [call for call in assistant.tool_calls if call.id not in answered]
    if not missing:
        return []
    recovered = list[ToolResultMessage]()
    for call in missing:
        entry = await store.get_call(thread_id, call.id)
        if entry is None:
            await store.record_calls([new_ledger_entry(thread_id, -1, call, toolbox)])  # never recorded
        result = entry.result if entry is not None else None
        if result is None and entry is not None and entry.request_id is not None and session is not None:
            result = await record_result(store, thread_id, await session.redispatch(entry))
        if result is None:
            reason = "The call was interrupted when the process stopped; it may not have run"
            result = await record_result(store, thread_id, ToolResult.canceled(call.id, reason, "system"))
        recovered.append(ToolResultMessage(call.name, result))
    await store.append_messages(thread_id, recovered)
    return recovered
