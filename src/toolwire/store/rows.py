"""What the SQL backends (SQLite, PostgreSQL) share: how a thread key is stored and a row is read back."""

from __future__ import annotations

import json
from typing import Any, Final

from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..policy import Grant
from .records import CallState, LedgerEntry

__all__ = ["NO_THREAD", "grant_from_row", "ledger_entry_from_row", "thread_key"]

NO_THREAD: Final = ""
"""The `thread_id` column value of approvals, grants and denials outside any thread."""


def thread_key(thread_id: str | None) -> str:
    """The `thread_id` column value of approvals, grants and denials of `thread_id` (None: no thread)."""
    if thread_id == NO_THREAD:
        raise UsageError("an empty thread id is reserved for 'no thread'; pass None instead")
    return NO_THREAD if thread_id is None else thread_id


def grant_from_row(row: Any) -> Grant:
    """A grant from `(thread_id, tool, explicit, granted_at)`."""
    thread, tool, explicit, granted_at = row
    return Grant(None if thread == NO_THREAD else thread, tool, bool(explicit), granted_at)


def ledger_entry_from_row(row: Any) -> LedgerEntry:
    """A ledger entry from the ledger table's row (JSON columns as text)."""
    thread, _, request_index, state, execution, mode, deadline, call, result, request_id, answer = row
    return LedgerEntry(
        thread_id=thread,
        call=ToolCall.from_dict(json.loads(call)),
        request_index=request_index,
        state=CallState(state),
        execution=execution,
        mode=mode,
        deadline=deadline,
        request_id=request_id,
        result=None if result is None else ToolResult.from_dict(json.loads(result)),
        answer=None if answer is None else json.loads(answer),
    )
