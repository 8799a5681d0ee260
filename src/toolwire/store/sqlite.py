"""`SqliteStore`: the `Store` in one SQLite file, so threads survive restarts and crashes.

One file (`toolwire.sqlite3` under the data directory) holds threads, transcripts, the call
ledger, one-time approvals, grants and remembered denials, with `MemoryStore`'s semantics:

- WAL mode with `synchronous=NORMAL`: a commit survives the process being killed (`kill -9`,
  `os._exit`); only a power loss may lose the last commits;
- every write is one `BEGIN IMMEDIATE` transaction, atomic also against other processes on the
  same file (they wait up to `busy_timeout` for the lock); the server's saves of its protocol state
  (one before each frame it writes) queued during one turn of the event loop share a transaction
  (`batching.GroupCommit`), and each returns once that transaction is committed;
- the first terminal result wins in SQL (`UPDATE ... WHERE state != 'terminal'`) and a one-time
  approval is consumed by `DELETE ... RETURNING`, so two writers cannot both succeed;
- approvals, grants and denials outside any thread (`thread_id=None`) are stored under the
  empty string, so `""` is refused as a thread id in those methods;
- `PRAGMA user_version` is the schema version; opening a file runs the missing migrations
  (`sqlite_schema`); the server's protocol state has rows of its own (`sqlite_wire`).

Calls run directly on the event loop thread: each is one short indexed statement or one small
transaction (tens of microseconds in WAL mode), cheaper than a hop to a worker thread and back.
Checkpoints (copying the WAL into the database file, with its `fsync`s: milliseconds) run in a
background thread of the store (`checkpoints.Checkpointer`), every `_CHECKPOINT_EVERY` commits,
so that no commit on the event loop waits for one; SQLite's automatic checkpoint stays on, at
`_AUTOCHECKPOINT_PAGES`, in case that thread falls behind.
It also means no other task can interleave between `BEGIN` and `COMMIT` on the shared
connection, so no lock is needed, and a cancelled caller never leaves a write running in a
worker. The cost: while another process holds the write lock, the loop blocks for up to
`busy_timeout`; several server processes share state through `PostgresStore` instead.
Nothing here logs message content, arguments or results.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import weakref
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..messages import AssistantMessage, Message, ToolResultMessage
from ..policy import Grant
from .batching import GroupCommit
from .checkpoints import Checkpointer
from .local_leases import LocalLeases
from .records import CALL_STATE_ORDER, COMES_WITH, CallState, LedgerEntry, RunRecord, ThreadInfo
from .rows import grant_from_row, ledger_entry_from_row, thread_key
from .sqlite_schema import SCHEMA_VERSION, Transaction, dumps, migrate
from .sqlite_wire import SavedWire, load_wire, save_wire, wire_parts
from .transcripts import Transcripts

__all__ = ["FILENAME", "SCHEMA_VERSION", "SqliteStore"]

FILENAME: Final = "toolwire.sqlite3"
"""The name of the database file inside a data directory."""


_TERMINAL: Final = CallState.TERMINAL.value


_LEDGER_COLUMNS: Final = (
    "thread_id, call_id, request_index, state, execution, mode, deadline, call, result, request_id, answer"
)
# ON CONFLICT DO NOTHING rather than OR IGNORE: only a duplicate id is skipped silently.
_RECORD: Final = (
    f"INSERT INTO ledger ({_LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (thread_id, call_id) DO NOTHING"
)
_COMPLETE: Final = "UPDATE ledger SET state = ?, result = ? WHERE thread_id = ? AND call_id = ? AND state != ?"
_INSERT_MESSAGE: Final = "INSERT INTO messages (thread_id, seq, body) VALUES (?, ?, ?)"
_NEXT_SEQ: Final = "SELECT coalesce(max(seq) + 1, 0) FROM messages WHERE thread_id = ?"
_KEPT_NUMBERINGS: Final = 10_000
"""How many threads' next `seq` a store keeps (all forgotten at once past it)."""
_KEPT: Final = "SELECT call_id, result FROM ledger WHERE thread_id = ? AND state = 'terminal' AND call_id IN ("
"""The results that won of those of a thread's calls that are TERMINAL (their ids and `)` follow)."""
_INFO_COLUMNS: Final = "id, principal, created_at, updated_at"
_THREAD_TABLES: Final = (
    "messages",
    "ledger",
    "approvals",
    "grants",
    "denials",
    "client_state",
    "wire_state",
    "wire_outbox",
)
"""The tables that keep rows of a thread, by `thread_id` (`delete_thread`)."""
_CHECKPOINT_EVERY: Final = 200
"""Write transactions between two background checkpoints (a few hundred WAL pages)."""
_AUTOCHECKPOINT_PAGES: Final = 10_000
"""WAL pages after which a commit checkpoints by itself (40 MB; the background thread goes first)."""


def _ledger_row(entry: LedgerEntry, call: str | None = None) -> tuple[Any, ...]:
    """The ledger row of `entry`; `call`: its call's JSON, when encoded already."""
    head = (entry.thread_id, entry.call.id, entry.request_index, entry.state.value, entry.execution, entry.mode)
    result = None if entry.result is None else dumps(entry.result.to_dict())
    answer = None if entry.answer is None else dumps(entry.answer)
    call = dumps(entry.call.to_dict()) if call is None else call
    return (*head, entry.deadline, call, result, entry.request_id, answer)


# The JSON of a batch's messages is put together from the JSON of its calls and results, which the
# ledger keeps too: each is encoded once. The same text as `dumps(message.to_dict())` (its members
# in the same order; tests/store/test_sqlite.py compares them).


def _asking_body(message: AssistantMessage, calls: Sequence[str]) -> str:
    """The JSON of the message that asks for a batch, given its calls' JSON (in its order)."""
    return f'{{"role":"assistant","text":{dumps(message.text)},"toolCalls":[{",".join(calls)}]}}'


def _answer_body(tool_name: str, result: str) -> str:
    """The JSON of a `ToolResultMessage`, given its result's JSON."""
    return f'{{"role":"tool","toolName":{dumps(tool_name)},"result":{result}}}'


class SqliteStore(LocalLeases):
    """Threads, transcripts, ledger, approvals and grants in one SQLite file (WAL).

    Open it once per process and share it; close it with `aclose()` (or `async with`).
    Another process may open the same file at the same time and sees every committed write.

    Args:
        path: The database file; created (with the schema) if missing, migrated if older.
        busy_timeout: Seconds to wait for another process's write lock before failing.

    Raises:
        UsageError: The file was written by a newer toolwire (its schema version is unknown).
        sqlite3.Error: The file cannot be opened or is not a SQLite database.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> None:
        self.path = Path(path)
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")
            # On for later schema versions. Version 1 declares no foreign key: as in `MemoryStore`,
            # messages and ledger entries may be written for a thread before `create_thread`.
            db.execute("PRAGMA foreign_keys = ON")
            migrate(db, self.path)
        except BaseException:
            db.close()
            raise
        self._db: sqlite3.Connection | None = db
        self._busy_timeout = busy_timeout
        self._commits = 0
        self._checkpointer: Checkpointer | None = None
        self._outboxes: dict[str, SavedWire] = {}
        """Per thread, the `version` token and the outbox frames of this store's last save."""
        self._transcripts = Transcripts()
        self._next_seq: dict[str, int] = {}
        """The next `seq` of the threads this store appended to (checked by the insert's key)."""
        """The decoded transcripts of recently loaded threads (a load decodes only the rows added since)."""
        self._group = GroupCommit(self._write)
        """Saves of the protocol state (one before each frame a server writes) share transactions."""

    @classmethod
    def in_directory(cls, data_dir: str | os.PathLike[str], *, busy_timeout: float = 5.0) -> SqliteStore:
        """Open the store of a data directory (`<data_dir>/toolwire.sqlite3`), creating the directory."""
        directory = Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        return cls(directory / FILENAME, busy_timeout=busy_timeout)

    def _forget(self) -> None:
        """A transaction rolled back: what was remembered of its writes may not be in the file."""
        self._outboxes.clear()
        self._transcripts.clear()
        self._next_seq.clear()

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise UsageError(f"this SqliteStore ({self.path}) is closed; open a new SqliteStore to use the file")
        return self._db

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        """Run a query and return its first row (None if there is none)."""
        return self._connection().execute(sql, params).fetchone()

    def _write(self) -> Transaction:
        db = self._connection()
        if self._checkpointer is None:  # from the first write on (a store that only reads needs none)
            self._checkpointer = Checkpointer(self.path, self._busy_timeout)
            # A store dropped without `aclose()` ends its thread too (the thread holds no reference to it).
            weakref.finalize(self, self._checkpointer.stop, join=False)
        self._commits += 1
        if self._commits >= _CHECKPOINT_EVERY:
            self._commits = 0
            self._checkpointer.poke()
        return Transaction(db, self._forget)

    # -- threads and transcripts ----------------------------------------------------------------

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        now = time.time()
        with self._write() as db:
            cursor = db.execute(
                "INSERT INTO threads (id, principal, created_at, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (id) DO NOTHING",
                (thread_id, principal, now, now),
            )
        return cursor.rowcount == 1

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread (None for none or an unknown thread)."""
        row = self._one("SELECT principal FROM threads WHERE id = ?", (thread_id,))
        return None if row is None else row[0]

    async def thread_ids(self) -> list[str]:
        """Every thread of the file, oldest first (for operators: `toolwire conversations list`)."""
        rows = self._connection().execute("SELECT id FROM threads ORDER BY created_at, id")
        return [thread_id for (thread_id,) in rows]

    async def list_threads(self, principal: str, *, limit: int | None = None) -> list[ThreadInfo]:
        """Return the threads `principal` owns, the latest activity first, at most `limit` (an index scan)."""
        rows = self._connection().execute(
            f"SELECT {_INFO_COLUMNS} FROM threads WHERE principal = ? ORDER BY updated_at DESC, id LIMIT ?",
            (principal, -1 if limit is None else limit),
        )
        return [ThreadInfo(*row) for row in rows]

    async def thread_info(self, thread_id: str) -> ThreadInfo | None:
        """Return the thread's owner and times (None for an unknown thread)."""
        row = self._one(f"SELECT {_INFO_COLUMNS} FROM threads WHERE id = ?", (thread_id,))
        return None if row is None else ThreadInfo(*row)

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and everything kept of it (every table), in one transaction; True if it existed."""
        self._outboxes.pop(thread_id, None)
        self._transcripts.forget(thread_id)
        self._next_seq.pop(thread_id, None)
        with self._write() as db:
            for table in _THREAD_TABLES:
                db.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
            cursor = db.execute("DELETE FROM threads WHERE id = ?", (thread_id,))
        return cursor.rowcount == 1

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        return self._one("SELECT 1 FROM threads WHERE id = ?", (thread_id,)) is not None

    async def count_threads(self, principal: str) -> int:
        """Return how many threads `principal` owns (a scan of `threads`: about 8 ms per 100,000)."""
        return self._one("SELECT COUNT(*) FROM threads WHERE principal = ?", (principal,))[0]

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return the thread's transcript, oldest first (empty for a new thread)."""
        return self._transcripts.load(self._connection(), thread_id)

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript in one transaction."""
        bodies = [dumps(message.to_dict()) for message in messages]
        with self._write() as db:
            self._append(db, thread_id, bodies)

    def _append(self, db: sqlite3.Connection, thread_id: str, bodies: Sequence[str], *, activity: bool = True) -> None:
        """Append message bodies to a thread's transcript (inside a write transaction).

        The next `seq` of a thread this store appended to is known; when another process appended
        since, the insert meets its row and the thread's numbering is read again. `activity`: the
        thread's last activity is now. A tool call's messages (the model asking for a batch, its
        results) leave it as it was: the user's message and the answer set it, and the page and
        index rows it rewrites cost a third of a tool call's writes.
        """
        if activity:
            db.execute("UPDATE threads SET updated_at = ? WHERE id = ?", (time.time(), thread_id))
        if not bodies:
            return

        def insert(start: int) -> None:  # one statement: a conflict leaves no row behind
            if len(bodies) == 1:
                db.execute(_INSERT_MESSAGE, (thread_id, start, bodies[0]))
                return
            rows = ", ".join(["(?, ?, ?)"] * len(bodies))
            values = [value for offset, body in enumerate(bodies) for value in (thread_id, start + offset, body)]
            db.execute(f"INSERT INTO messages (thread_id, seq, body) VALUES {rows}", values)

        start = self._next_seq.pop(thread_id, None)
        if start is not None:
            try:
                insert(start)
            except sqlite3.IntegrityError:  # another process appended since
                start = None
        if start is None:
            (start,) = db.execute(_NEXT_SEQ, (thread_id,)).fetchone()
            insert(start)
        if len(self._next_seq) >= _KEPT_NUMBERINGS:
            self._next_seq.clear()
        self._next_seq[thread_id] = start + len(bodies)

    # -- the call ledger ------------------------------------------------------------------------

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run (write-ahead); existing ids are kept."""
        rows = [_ledger_row(entry) for entry in entries]
        with self._write() as db:
            db.executemany(_RECORD, rows)

    async def record_batch(self, thread_id: str, message: Message, entries: Sequence[LedgerEntry]) -> None:
        """Append the message that asks for a batch of calls and write the calls to the ledger, in one transaction."""
        calls = [dumps(entry.call.to_dict()) for entry in entries]
        rows = [_ledger_row(entry, call) for entry, call in zip(entries, calls, strict=True)]
        if calls and isinstance(message, AssistantMessage) and message.tool_calls == tuple(e.call for e in entries):
            body = _asking_body(message, calls)
        else:
            body = dumps(message.to_dict())
        with self._write() as db:
            self._append(db, thread_id, [body], activity=False)
            if len(rows) == 1:
                db.execute(_RECORD, rows[0])
            else:
                db.executemany(_RECORD, rows)

    async def complete_batch(
        self, thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[ToolResultMessage]:
        """Record each call's result and append one `ToolResultMessage` per call, in one transaction.

        The first terminal result wins; each message carries the result that won. Returns the messages.
        """
        texts = [dumps(result.to_dict()) for result in results]
        with self._write() as db:
            if len(calls) == 1:  # (the usual batch: one statement, and a second only when another result won)
                cursor = db.execute(_COMPLETE, (_TERMINAL, texts[0], thread_id, calls[0].id, _TERMINAL))
                kept = {} if cursor.rowcount == 1 else dict(db.execute(_KEPT + "?)", (thread_id, calls[0].id)))
            else:  # the calls a result was recorded for already (`complete_call`, as each was decided)
                marks = ", ".join("?" * len(calls))
                kept = dict(db.execute(_KEPT + marks + ")", (thread_id, *(call.id for call in calls))))
                rows = [
                    (_TERMINAL, text, thread_id, call.id, _TERMINAL) for call, text in zip(calls, texts, strict=True)
                ]
                db.executemany(_COMPLETE, [row for row in rows if row[3] not in kept])
            messages: list[ToolResultMessage] = []
            bodies: list[str] = []
            for call, result, text in zip(calls, results, texts, strict=True):
                won = kept.get(call.id)
                if won is not None and won != text:  # an earlier result won (not this very one, recorded before)
                    result, text = ToolResult.from_dict(json.loads(won)), won
                messages.append(ToolResultMessage(call.name, result))
                bodies.append(_answer_body(call.name, text))
            self._append(db, thread_id, bodies, activity=False)
        return messages

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a call forward (e.g. to DISPATCHED); a call never moves back, nor out of TERMINAL.

        Raises:
            UsageError: `state` is ANSWERED or TERMINAL (they come with the answer, by
                `save_wire_state`, or the result, by `complete_call`).
        """
        if state in COMES_WITH:
            raise UsageError(f"a call becomes {state.name} only with {COMES_WITH[state]}")
        earlier = [other.value for other in CallState if CALL_STATE_ORDER[other] < CALL_STATE_ORDER[state]]
        placeholders = ", ".join("?" * len(earlier))
        with self._write() as db:
            db.execute(
                f"UPDATE ledger SET state = ? WHERE thread_id = ? AND call_id = ? AND state IN ({placeholders})",
                (state.value, thread_id, call_id, *earlier),
            )

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result (it wins).

        Returns once it is committed; the results decided during one turn of the event loop (a
        batch's quick calls) share one transaction (`GroupCommit`).
        """
        body = dumps(result.to_dict())
        won = False

        def write(db: sqlite3.Connection) -> None:
            nonlocal won
            won = db.execute(_COMPLETE, (_TERMINAL, body, thread_id, call_id, _TERMINAL)).rowcount == 1

        await self._group.submit(write)
        return won

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call."""
        row = self._one(
            f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE thread_id = ? AND call_id = ?", (thread_id, call_id)
        )
        return None if row is None else ledger_entry_from_row(row)

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in the order they were recorded."""
        rows = self._connection().execute(
            f"SELECT {_LEDGER_COLUMNS} FROM ledger WHERE thread_id = ? AND state != ? ORDER BY recorded",
            (thread_id, _TERMINAL),
        )
        return [ledger_entry_from_row(row) for row in rows]

    # -- approvals, grants, denials (ApprovalStore) ---------------------------------------------

    async def approve_once(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> None:
        """Record a one-time approval for exactly this call."""
        with self._write() as db:
            db.execute(
                "INSERT INTO approvals (thread_id, call_id, tool, args_hash) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                (thread_key(thread_id), call_id, tool, args_hash),
            )

    async def take_approval(self, thread_id: str | None, call_id: str, tool: str, args_hash: str) -> bool:
        """Consume the one-time approval of this call; False if there is none."""
        with self._write() as db:
            taken = db.execute(
                "DELETE FROM approvals WHERE thread_id = ? AND call_id = ? AND tool = ? AND args_hash = ? RETURNING 1",
                (thread_key(thread_id), call_id, tool, args_hash),
            ).fetchall()
        return bool(taken)

    async def grant(self, thread_id: str | None, tool: str, *, explicit: bool = True) -> Grant:
        """Allow `tool` for the rest of the thread (replacing an earlier grant of it)."""
        grant = Grant(thread_id, tool, explicit, time.time())
        with self._write() as db:
            db.execute(
                "INSERT INTO grants (thread_id, tool, explicit, granted_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (thread_id, tool) DO UPDATE SET explicit = excluded.explicit,"
                " granted_at = excluded.granted_at",
                (thread_key(thread_id), tool, int(explicit), grant.granted_at),
            )
        return grant

    async def find_grant(self, thread_id: str | None, tool: str) -> Grant | None:
        """Return the standing grant for `tool` in the thread, if any."""
        row = self._one(
            "SELECT thread_id, tool, explicit, granted_at FROM grants WHERE thread_id = ? AND tool = ?",
            (thread_key(thread_id), tool),
        )
        return None if row is None else grant_from_row(row)

    async def grants(self, thread_id: str | None) -> list[Grant]:
        """List the thread's grants, oldest first."""
        rows = self._connection().execute(
            "SELECT thread_id, tool, explicit, granted_at FROM grants WHERE thread_id = ? ORDER BY id",
            (thread_key(thread_id),),
        )
        return [grant_from_row(row) for row in rows]

    async def revoke(self, thread_id: str | None, tool: str) -> bool:
        """Remove the grant for `tool` in the thread; False if there was none."""
        with self._write() as db:
            cursor = db.execute("DELETE FROM grants WHERE thread_id = ? AND tool = ?", (thread_key(thread_id), tool))
        return cursor.rowcount == 1

    async def remember_denial(self, thread_id: str | None, tool: str, args_hash: str, reason: str) -> None:
        """Remember that this tool with these arguments was refused in the thread (the latest reason wins)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO denials (thread_id, tool, args_hash, reason) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO UPDATE SET reason = excluded.reason",
                (thread_key(thread_id), tool, args_hash, reason),
            )

    async def find_denial(self, thread_id: str | None, tool: str, args_hash: str) -> str | None:
        """Return the reason an identical call was refused in the thread, if it was."""
        row = self._one(
            "SELECT reason FROM denials WHERE thread_id = ? AND tool = ? AND args_hash = ?",
            (thread_key(thread_id), tool, args_hash),
        )
        return None if row is None else row[0]

    # -- lifetime -------------------------------------------------------------------------------

    # -- client tool state ------------------------------------------------------------------------

    async def load_client_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's client tool state as saved (None when there is none)."""
        row = self._one("SELECT state FROM client_state WHERE thread_id = ?", (thread_id,))
        return None if row is None else json.loads(row[0])

    async def save_client_state(self, thread_id: str, state: Mapping[str, Any] | None) -> None:
        """Replace the thread's client tool state in one transaction; None deletes it."""
        with self._write() as db:
            if state is None:
                db.execute("DELETE FROM client_state WHERE thread_id = ?", (thread_id,))
            else:
                db.execute(
                    "INSERT INTO client_state (thread_id, state, updated_at) VALUES (?, ?, ?)"
                    " ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
                    (thread_id, dumps(state), time.time()),
                )

    # -- the server's protocol state ------------------------------------------------------------

    async def load_wire_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the server's protocol state of the conversation (None when there is none)."""
        return load_wire(self._connection(), thread_id)

    def release_wire_state(self, thread_id: str) -> None:
        """Forget what this store keeps in memory of the conversation: nothing in this process uses it now.

        The outbox of its last save (the next save writes it whole), its decoded transcript and its
        next message number: a server's memory goes back when its conversations end.
        """
        self._outboxes.pop(thread_id, None)
        self._transcripts.forget(thread_id)
        self._next_seq.pop(thread_id, None)

    async def save_wire_state(
        self,
        thread_id: str,
        state: Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
        appended: Sequence[Message] = (),
    ) -> frozenset[str]:
        """Replace the conversation's protocol state atomically; None deletes it.

        Returns once the save is committed. The saves of all threads queued during one turn of
        the event loop share one transaction (`GroupCommit`): with many conversations a save costs
        a few statements rather than a transaction each.

        The frames of the outbox are rows of their own, and a save writes what changed since this
        store's last save of the thread: it deletes the frames acknowledged meanwhile and inserts
        the new ones, each row with the numbering (next stanza, last seen) as of its save; the
        header only when no frame was added (the numbering moved, or rows that carried it went).
        A save that sends one frame after the client acknowledged the last one touches one page.
        When another writer saved the thread in between (the `version` token differs), or the
        numbering went back, it rewrites everything.
        `dispatched` calls move to DISPATCHED and DISPATCHED `answered` calls to ANSWERED (with
        their answers), and `appended` messages join the transcript, in the same transaction.

        Returns:
            The calls of `answered` whose answers were saved.

        Raises:
            EnvelopeError: A state whose numbering is not integers or whose outbox is not pairs of
                a stanza number and a base64 frame.
        """
        parts = None if state is None else wire_parts(state, self._outboxes.get(thread_id))
        answers = {call_id: dumps(answer) for call_id, answer in (answered or {}).items()}
        self._connection()  # a closed store fails here, not in the shared transaction
        saved = set[str]()
        write = partial(
            save_wire,
            outboxes=self._outboxes,
            thread_id=thread_id,
            parts=parts,
            dispatched=tuple(dispatched),
            answered=answers,
            saved_answers=saved,
        )
        if appended:
            bodies = [dumps(message.to_dict()) for message in appended]
            wire = write

            def write(db: sqlite3.Connection) -> None:
                self._append(db, thread_id, bodies)
                wire(db)

        await self._group.submit(write)
        return frozenset(saved)

    # -- how each thread's last run stands ----------------------------------------------------------

    async def load_run(self, thread_id: str) -> RunRecord:
        """Return how the thread's last run stands (`RunRecord()` when nothing was saved)."""
        row = self._one("SELECT closed_at, resume_attempts FROM threads WHERE id = ?", (thread_id,))
        return RunRecord() if row is None else RunRecord(row[0], row[1])

    async def save_run(self, thread_id: str, record: RunRecord) -> None:
        """Replace how the thread's last run stands (creating the thread if needed)."""
        now = time.time()
        with self._write() as db:
            db.execute(
                "INSERT INTO threads (id, principal, created_at, updated_at, closed_at, resume_attempts)"
                " VALUES (?, NULL, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET closed_at = excluded.closed_at,"
                " resume_attempts = excluded.resume_attempts",
                (thread_id, now, now, record.closed_at, record.resume_attempts),
            )

    async def aclose(self) -> None:
        """Close the connection; the store cannot be used afterwards. Closing twice is harmless."""
        if self._db is not None:
            self._group.commit()  # what is queued still goes in
        if self._checkpointer is not None:
            self._checkpointer.stop()
            self._checkpointer = None
        if self._db is not None:
            self._db.close()
            self._db = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
