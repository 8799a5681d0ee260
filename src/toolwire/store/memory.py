"""`MemoryStore`: every store interface in process memory, the default for a single process and for tests.

It keeps the latest `max_threads` threads (1,000 by default), and drops the least recently used
*finished* ones beyond that (`toolwire.store.retention`): a process that runs for weeks does not
grow with every run it answered.
"""

from __future__ import annotations

import json
import marshal
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._fast import maker
from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..ledger import run_is_open
from ..messages import Message, ToolResultMessage
from ..policy import Grant, MemoryApprovalStore
from .local_leases import LocalLeases
from .records import CALL_STATE_ORDER, COMES_WITH, CallState, LedgerEntry, RunRecord, ThreadInfo
from .retention import DEFAULT_MAX_THREADS, Retention

__all__ = ["DEFAULT_MAX_THREADS", "MemoryStore"]

_NO_RUN = RunRecord()
_result_message = maker(ToolResultMessage, "tool_name", "result")  # `ToolResultMessage(...)`, faster: one per call
_TERMINAL = CallState.TERMINAL  # (read once per call: a module constant is faster than an enum member)
_GONE = object()


class MemoryStore(MemoryApprovalStore, LocalLeases):
    """Threads, transcripts, ledger, approvals and grants in dictionaries; gone with the process.

    A store of bounded size by default: past `max_threads` threads, each new thread makes the least
    recently used *finished* threads go, with everything kept of them (as `delete_thread`: their
    transcript, ledger, run record, approvals, grants, remembered denials, client tool state and
    protocol state). A thread is used when it is created, read (`load_messages`) or written.

    A thread is finished when it has messages, its last run ended (`toolwire.ledger.run_is_open`
    is False: the transcript ends with the model's answer, or the run was closed), none of its
    calls is open in the ledger, no server holds its protocol state (saved or loaded, and not
    released since: `release_wire_state`) and no lease on it is live. Any other thread is kept,
    however many there are: while more than `max_threads` are in use, the store holds more.
    A thread continued after it was dropped starts afresh, with an empty transcript.

    Args:
        max_threads: Threads kept at most (the least recently used finished ones beyond it are
            dropped); None keeps every thread as long as the process lives.
        max_idle: Seconds after its last use a finished thread is dropped, when the next new
            thread comes in; None (the default) drops by count only.

    Raises:
        UsageError: `max_threads` below 1 or `max_idle` below 0.
    """

    def __init__(self, *, max_threads: int | None = DEFAULT_MAX_THREADS, max_idle: float | None = None) -> None:
        super().__init__()
        self.retention = Retention(max_threads=max_threads, max_idle=max_idle, finished=self._finished, drop=self._drop)
        """Which threads the store keeps (`max_threads`, `max_idle`), least recently used first."""
        self._held: set[str] = set()
        """Conversations whose protocol state a server holds (saved or loaded, not released)."""
        self._approved: set[str | None] = set()
        """Threads with one-time approvals, grants or remembered denials (few: each is looked up to drop)."""
        self._principals: dict[str, str | None] = {}
        self._messages: dict[str, list[Message]] = {}
        # The ledger by thread, then call id (recording order); a call's result is kept beside
        # its entry rather than in a second, TERMINAL entry: the loop completes every call.
        self._ledger: dict[str, dict[str, LedgerEntry]] = {}
        self._results: dict[str, dict[str, ToolResult]] = {}
        self._client_states: dict[str, str] = {}
        self._wire_states: dict[str, bytes] = {}
        self._runs: dict[str, RunRecord] = {}
        self._times: dict[str, tuple[float, float]] = {}
        """Per thread: when it was created, and its last activity."""

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        self.retention.use(thread_id)
        if thread_id in self._principals:
            return False
        self._principals[thread_id] = principal
        self._messages.setdefault(thread_id, [])
        now = time.time()
        self._times[thread_id] = (now, now)
        return True

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread."""
        return self._principals.get(thread_id)

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        return thread_id in self._principals

    async def count_threads(self, principal: str) -> int:
        """Return how many threads `principal` owns."""
        return sum(1 for owner in self._principals.values() if owner == principal)

    async def list_threads(self, principal: str, *, limit: int | None = None) -> list[ThreadInfo]:
        """Return the threads `principal` owns, the latest activity first, at most `limit` (None: all)."""
        infos = [self._info(thread_id) for thread_id, owner in self._principals.items() if owner == principal]
        return sorted(infos, key=lambda info: (-info.updated_at, info.thread_id))[:limit]

    async def thread_info(self, thread_id: str) -> ThreadInfo | None:
        """Return the thread's owner and times (None for an unknown thread)."""
        return self._info(thread_id) if thread_id in self._principals else None

    def _info(self, thread_id: str) -> ThreadInfo:
        created, updated = self._times[thread_id]
        return ThreadInfo(thread_id, self._principals[thread_id], created, updated)

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and everything kept of it; True if it existed.

        A finished thread is dropped this way when it is past the store's bounds (`max_threads`,
        `max_idle`); call it to free a thread's memory sooner.
        """
        return self._drop(thread_id)

    def _drop(self, thread_id: str) -> bool:
        existed = self._principals.pop(thread_id, _GONE) is not _GONE
        for kept in (self._messages, self._ledger, self._results, self._client_states, self._wire_states):
            kept.pop(thread_id, None)
        self._runs.pop(thread_id, None)
        self._times.pop(thread_id, None)
        self._held.discard(thread_id)
        self.retention.forget(thread_id)
        if thread_id in self._approved:
            self._approved.discard(thread_id)
            self._forget_approvals(thread_id)
        return existed

    def _finished(self, thread_id: str) -> bool:
        """Whether the thread may be dropped: it ran, and nothing of it is open or in use (see the class)."""
        history = self._messages.get(thread_id)
        if not history or thread_id in self._held or run_is_open(history, self._runs.get(thread_id, _NO_RUN)):
            return False
        leases = self._local_leases
        if leases is not None and (lease := leases.get(thread_id)) is not None and lease.expires_at > time.time():
            return False
        calls = self._ledger.get(thread_id)
        if not calls:
            return True
        results = self._results.get(thread_id, {})
        return len(results) == len(calls) or not any(
            entry.state is not CallState.TERMINAL and call_id not in results for call_id, entry in calls.items()
        )

    async def approve_once(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> None:
        """Record a one-time approval for exactly this call."""
        self._approved.add(thread_id)
        await super().approve_once(thread_id, call_id, tool, args_hash)

    async def grant(self, thread_id: str | None, tool: str, *, explicit: bool = True) -> Grant:
        """Allow `tool` for the rest of the thread."""
        self._approved.add(thread_id)
        return await super().grant(thread_id, tool, explicit=explicit)

    async def remember_denial(self, thread_id: str | None, tool: str, args_hash: str, reason: str) -> None:
        """Remember that this tool with these arguments was refused in the thread."""
        self._approved.add(thread_id)
        await super().remember_denial(thread_id, tool, args_hash, reason)

    def _forget_approvals(self, thread_id: str) -> None:
        """Drop the thread's one-time approvals, grants and remembered denials."""
        self._once = {key for key in self._once if key[0] != thread_id}
        self._grants = {key: grant for key, grant in self._grants.items() if key[0] != thread_id}
        self._denials = {key: reason for key, reason in self._denials.items() if key[0] != thread_id}

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return a copy of the thread's transcript."""
        if thread_id in self.retention:
            self.retention.use(thread_id)
        return list(self._messages.get(thread_id, ()))

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript."""
        self._append(thread_id, messages)

    def _append(self, thread_id: str, messages: Sequence[Message]) -> None:
        self.retention.use(thread_id)
        transcript = self._messages.get(thread_id)
        if transcript is None:
            transcript = self._messages[thread_id] = []
        transcript.extend(messages)
        if (times := self._times.get(thread_id)) is not None:
            self._times[thread_id] = (times[0], time.time())

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run; existing ids are kept."""
        self._record(entries)

    def _record(self, entries: Sequence[LedgerEntry]) -> None:
        for entry in entries:
            calls = self._ledger.get(entry.thread_id)
            if calls is None:
                self.retention.use(entry.thread_id)
                calls = self._ledger[entry.thread_id] = {}
            calls.setdefault(entry.call.id, entry)

    async def record_batch(self, thread_id: str, message: Message, entries: Sequence[LedgerEntry]) -> None:
        """Append the message that asks for a batch of calls and write the calls to the ledger."""
        self._append(thread_id, (message,))
        self._record(entries)

    async def complete_batch(
        self, thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[ToolResultMessage]:
        """Record each call's result and append one `ToolResultMessage` per call (with the result that won)."""
        messages: list[ToolResultMessage] = []
        recorded = self._results.get(thread_id) or {}
        for call, result in zip(calls, results, strict=True):
            if (won := recorded.get(call.id)) is not None:  # recorded the moment it was decided (the usual)
                result = won
            elif not self._complete(thread_id, call.id, result):
                result = self._winner(thread_id, call.id) or result
            messages.append(_result_message(call.name, result))
        self._append(thread_id, messages)
        return messages

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a call forward; ANSWERED and TERMINAL come only with the answer or the result."""
        if state in COMES_WITH:
            raise UsageError(f"a call becomes {state.name} only with {COMES_WITH[state]}")
        self._move(thread_id, call_id, state)

    def _move(self, thread_id: str, call_id: str, state: CallState, answer: Mapping[str, Any] | None = None) -> bool:
        """Move an open call to a later state; True if it moved."""
        calls = self._ledger.get(thread_id, {})
        entry = calls.get(call_id)
        if entry is None or self._result(thread_id, call_id) is not None:
            return False
        if CALL_STATE_ORDER[state] <= CALL_STATE_ORDER[entry.state]:
            return False
        # The answer is kept as a persistent store would: later changes to the caller's dict do not leak in.
        calls[call_id] = (
            replace(entry, state=state) if answer is None else entry.answered(json.loads(json.dumps(answer)))
        )
        return True

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result."""
        return self._complete(thread_id, call_id, result)

    def _complete(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        calls = self._ledger.get(thread_id)
        entry = None if calls is None else calls.get(call_id)
        if entry is None or entry.state is _TERMINAL:
            return False
        results = self._results.get(thread_id)
        if results is None:
            results = self._results[thread_id] = {}
        elif call_id in results:
            return False
        results[call_id] = result
        return True

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call."""
        calls = self._ledger.get(thread_id)
        entry = None if calls is None else calls.get(call_id)
        if entry is None:
            return None
        result = self._result(thread_id, call_id)
        return entry if result is None else entry.finished(result)

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in recording order."""
        results = self._results.get(thread_id, {})
        return [
            entry
            for call_id, entry in self._ledger.get(thread_id, {}).items()
            if entry.state is not CallState.TERMINAL and call_id not in results
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
            self.retention.use(thread_id)
            self._client_states[thread_id] = json.dumps(state, separators=(",", ":"))

    def _winner(self, thread_id: str, call_id: str) -> ToolResult | None:
        """The result the ledger holds for a call (`get_call(...).result`, without building the entry)."""
        if (result := self._result(thread_id, call_id)) is not None:
            return result
        entry = self._ledger.get(thread_id, {}).get(call_id)
        return None if entry is None else entry.result

    def _result(self, thread_id: str, call_id: str) -> ToolResult | None:
        results = self._results.get(thread_id)
        return None if results is None else results.get(call_id)

    async def load_wire_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the server's protocol state of the conversation (None when there is none).

        The conversation is then held (never dropped to keep the store in its bounds) until
        `release_wire_state`.
        """
        self._held.add(thread_id)
        self.retention.use(thread_id)
        saved = self._wire_states.get(thread_id)
        return None if saved is None else marshal.loads(saved)

    def release_wire_state(self, thread_id: str) -> None:
        """Let the conversation go: the state stays, and the thread may be dropped once it is finished."""
        self._held.discard(thread_id)

    async def save_wire_state(
        self,
        thread_id: str,
        state: Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
        appended: Sequence[Message] = (),
    ) -> frozenset[str]:
        """Replace the conversation's protocol state; None deletes it; move `dispatched` and `answered` calls on.

        The conversation is then held, as by `load_wire_state`.
        """
        self._held.add(thread_id)
        self.retention.use(thread_id)
        if appended:
            self._append(thread_id, appended)
        for call_id in dispatched:
            self._move(thread_id, call_id, CallState.DISPATCHED)
        saved = frozenset(
            call_id
            for call_id, answer in (answered or {}).items()
            if self._dispatched(thread_id, call_id) and self._move(thread_id, call_id, CallState.ANSWERED, answer)
        )
        if state is None:
            self._wire_states.pop(thread_id, None)
        else:  # a deep copy, as a persistent store would keep: later changes to `state` do not leak in
            # (marshal, not JSON: the server saves before each frame, and marshal copies strings whole)
            self._wire_states[thread_id] = marshal.dumps(dict(state))
        return saved

    def _dispatched(self, thread_id: str, call_id: str) -> bool:
        entry = self._ledger.get(thread_id, {}).get(call_id)
        return entry is not None and entry.state is CallState.DISPATCHED and self._result(thread_id, call_id) is None

    async def load_run(self, thread_id: str) -> RunRecord:
        """Return how the thread's last run stands."""
        return self._runs.get(thread_id, _NO_RUN)

    async def save_run(self, thread_id: str, record: RunRecord) -> None:
        """Replace how the thread's last run stands."""
        self.retention.use(thread_id)
        self._runs[thread_id] = record
