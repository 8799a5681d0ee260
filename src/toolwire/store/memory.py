"""`MemoryStore`: the `Store` in process memory, the default for a single process and for tests."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..envelopes import ToolResult
from ..errors import UsageError
from ..messages import Message
from ..policy import MemoryApprovalStore
from . import CallState, LedgerEntry

__all__ = ["MemoryStore"]


class MemoryStore(MemoryApprovalStore):
    """Threads, transcripts, ledger, approvals and grants in dictionaries; gone with the process."""

    def __init__(self) -> None:
        super().__init__()
        self._principals: dict[str, str | None] = {}
        self._messages: dict[str, list[Message]] = {}
        self._ledger: dict[tuple[str, str], LedgerEntry] = {}
        self._client_states: dict[str, str] = {}

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        if thread_id in self._principals:
            return False
        self._principals[thread_id] = principal
        self._messages[thread_id] = []
        return True

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread."""
        return self._principals.get(thread_id)

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        return thread_id in self._principals

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return a copy of the thread's transcript."""
        return list(self._messages.get(thread_id, ()))

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript."""
        self._messages.setdefault(thread_id, []).extend(messages)

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run; existing ids are kept."""
        for entry in entries:
            self._ledger.setdefault((entry.thread_id, entry.call.id), entry)

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a non-terminal call forward; TERMINAL comes only with a result (`complete_call`)."""
        if state is CallState.TERMINAL:
            raise UsageError("a call becomes TERMINAL only with its result: use complete_call()")
        entry = self._ledger.get((thread_id, call_id))
        if entry is not None and entry.state is not CallState.TERMINAL:
            self._ledger[thread_id, call_id] = replace(entry, state=state)

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result."""
        entry = self._ledger.get((thread_id, call_id))
        if entry is None or entry.state is CallState.TERMINAL:
            return False
        self._ledger[thread_id, call_id] = entry.finished(result)
        return True

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call."""
        return self._ledger.get((thread_id, call_id))

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in recording order."""
        return [
            entry
            for (thread, _), entry in self._ledger.items()
            if thread == thread_id and entry.state is not CallState.TERMINAL
        ]

    async def aclose(self) -> None:
        """Nothing to release."""

    async def load_client_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's client tool state as saved (None when there is none)."""
        saved = self._client_states.get(thread_id)
        return None if saved is None else json.loads(saved)

    async def save_client_state(self, thread_id: str, state: Mapping[str, Any] | None) -> None:
        """Replace the thread's client tool state; None deletes it.

        Kept as JSON text, as a persistent store would: later changes to `state` do not leak in.
        """
        if state is None:
            self._client_states.pop(thread_id, None)
        else:
            self._client_states[thread_id] = json.dumps(state, separators=(",", ":"))
