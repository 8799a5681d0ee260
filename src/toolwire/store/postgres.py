"""`PostgresStore`: the `Store` in PostgreSQL, shared by every process that opens the same database.

One schema (`toolwire` unless told otherwise) holds threads, transcripts, the call ledger,
one-time approvals, grants and remembered denials, client tool state and the server's protocol
state, with `SqliteStore`'s semantics:

- every write is one statement, so one round trip and one transaction (a batch's message and
  its calls, a batch's results and their messages, a protocol state and the calls it moves:
  data-modifying CTEs of one statement); the connections run in autocommit, so a statement is
  its own transaction with no `BEGIN` or `COMMIT` to wait for;
- `synchronous_commit = on` on every connection (`postgres_schema.connection_options`): a write
  returns once its WAL is flushed, and the store's writes precede what the server sends;
- the first terminal result wins in SQL: `UPDATE ... WHERE state <> 'terminal'` takes the row
  lock, and a second writer, once the first committed, re-reads the row and matches nothing; a
  batch's results lock their rows first (`SELECT ... FOR UPDATE`, which returns the newest
  version), so each message carries the result that won even against another process;
- a one-time approval is consumed by one `DELETE` (`postgres_approvals`): of two racing takers,
  the second waits for the first's row lock, then finds the row gone;
- the schema is versioned (`postgres_schema`); opening a store runs the missing migrations;
- a conversation's lease (`postgres_leases`): once this store took it, the writes that depend on
  owning the conversation (transcript, ledger moves, run record, client and protocol state) are
  fenced with its epoch and raise `Fenced` when another replica took it over; a call's first
  terminal result (`complete_call`) is independent of ownership, as are approvals and grants.

psycopg's async API runs on asyncio only. The store opens its connection pool on first use (or on
`open()`, or `async with`), in the running event loop, and must be closed (`aclose()`) in it.
Nothing here logs message content, arguments, results or the connection string's password.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..messages import Message, ToolResultMessage, message_from_dict
from .outbox import wire_parts
from .postgres_approvals import PostgresApprovals
from .postgres_database import describe_dsn
from .postgres_leases import PostgresLeases
from .postgres_schema import SCHEMA_VERSION
from .postgres_wire import load_wire, remember, save_wire
from .records import CALL_STATE_ORDER, COMES_WITH, CallState, LedgerEntry, RunRecord, ThreadInfo
from .rows import ledger_entry_from_row
from .sqlite_schema import dumps

__all__ = ["SCHEMA_VERSION", "PostgresStore", "describe_dsn"]

_LEDGER_COLUMNS: Final = (
    "thread_id, call_id, request_index, state, execution, mode, deadline, call, result, request_id, answer"
)
_RECORD: Final = (
    "INSERT INTO ledger (thread_id, call_id, request_index, state, execution, mode, deadline, call, result,"
    " request_id, answer) SELECT * FROM unnest(%(threads)s::text[], %(ids)s::text[], %(indexes)s::integer[],"
    " %(states)s::text[], %(executions)s::text[], %(modes)s::text[], %(deadlines)s::float8[], %(calls)s::text[],"
    " %(results)s::text[], %(request_ids)s::text[], %(answers)s::text[])"
    " ON CONFLICT (thread_id, call_id) DO NOTHING"  # only a duplicate id is skipped silently
)
_TOUCH: Final = "touched AS (UPDATE threads SET updated_at = %(now)s WHERE id = %(t)s)"
"""The CTE that makes a write the thread's last activity (each statement that appends messages has it)."""
_APPEND: Final = (
    "WITH " + _TOUCH + " INSERT INTO messages (thread_id, body) SELECT %(t)s, body"
    " FROM unnest(%(bodies)s::text[]) WITH ORDINALITY AS b (body, n) ORDER BY n"
)
_COMPLETE_BATCH: Final = (
    "WITH input AS (SELECT * FROM unnest(%(ids)s::text[], %(results)s::text[], %(heads)s::text[], %(tails)s::text[])"
    " WITH ORDINALITY AS i (call_id, result, head, tail, n)),"
    # FOR UPDATE returns each row as the writer that held its lock (if any) left it.
    " locked AS (SELECT call_id, state, result FROM ledger WHERE thread_id = %(t)s AND call_id = ANY(%(ids)s::text[])"
    " FOR UPDATE),"
    " won AS (UPDATE ledger l SET state = 'terminal', result = i.result FROM input i JOIN locked k USING (call_id)"
    " WHERE l.thread_id = %(t)s AND l.call_id = i.call_id AND k.state <> 'terminal'),"
    " kept AS (SELECT i.n, CASE WHEN k.state = 'terminal' AND k.result IS NOT NULL THEN k.result ELSE i.result END"
    " AS result, i.head, i.tail FROM input i LEFT JOIN locked k USING (call_id)),"
    " appended AS (INSERT INTO messages (thread_id, body) SELECT %(t)s, head || result || tail FROM kept ORDER BY n),"
    " " + _TOUCH + " SELECT result FROM kept ORDER BY n"
)

_INFO_COLUMNS: Final = "id, principal, created_at, updated_at"
_DELETE_THREAD: Final = (
    "WITH m AS (DELETE FROM messages WHERE thread_id = %(t)s), l AS (DELETE FROM ledger WHERE thread_id = %(t)s),"
    " a AS (DELETE FROM approvals WHERE thread_id = %(t)s), g AS (DELETE FROM grants WHERE thread_id = %(t)s),"
    " d AS (DELETE FROM denials WHERE thread_id = %(t)s), c AS (DELETE FROM client_state WHERE thread_id = %(t)s),"
    " w AS (DELETE FROM wire_state WHERE thread_id = %(t)s), o AS (DELETE FROM wire_outbox WHERE thread_id = %(t)s)"
    " DELETE FROM threads WHERE id = %(t)s RETURNING id"
)


def _ledger_rows(entries: Sequence[LedgerEntry]) -> dict[str, list[Any]]:
    """The entries as the columns `_RECORD` unnests."""
    return {
        "threads": [entry.thread_id for entry in entries],
        "ids": [entry.call.id for entry in entries],
        "indexes": [entry.request_index for entry in entries],
        "states": [entry.state.value for entry in entries],
        "executions": [entry.execution for entry in entries],
        "modes": [entry.mode for entry in entries],
        "deadlines": [entry.deadline for entry in entries],
        "calls": [dumps(entry.call.to_dict()) for entry in entries],
        "results": [None if entry.result is None else dumps(entry.result.to_dict()) for entry in entries],
        "request_ids": [entry.request_id for entry in entries],
        "answers": [None if entry.answer is None else dumps(entry.answer) for entry in entries],
    }


class PostgresStore(PostgresApprovals, PostgresLeases):
    """Threads, transcripts, ledger, approvals, grants, client and protocol state in PostgreSQL.

    Open it once per process and share it; close it with `aclose()` (or `async with`). Other
    processes may open the same database and schema at the same time: they see every committed
    write, and first-wins holds across them.

    Args:
        dsn: A libpq connection string or URL (`postgresql://user:password@host:5432/dbname`).
        schema: The PostgreSQL schema of toolwire's tables; created (with the tables) if missing,
            migrated if older.
        min_connections: Connections the pool keeps open.
        max_connections: Connections the pool opens at most (concurrent statements beyond wait).
        connect_timeout: Seconds to wait for the database when the store opens.

    Raises:
        UsageError: The `postgres` extra is not installed, or the schema name is not plain
            (lower-case letters, digits, `_`). Opening raises it too when the database cannot be
            reached or was written by a newer toolwire.
        Fenced: A write that depends on owning a conversation whose lease this store took, once
            another replica took the lease over (`acquire`); nothing of the write was kept.
    """

    # -- threads and transcripts ----------------------------------------------------------------

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        now = time.time()
        created = await self._write(
            "INSERT INTO threads (id, principal, created_at, updated_at) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (id) DO NOTHING",
            (thread_id, principal, now, now),
        )
        return created == 1

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread (None for none or an unknown thread)."""
        row = await self._fetchone("SELECT principal FROM threads WHERE id = %s", (thread_id,))
        return None if row is None else row[0]

    async def thread_ids(self) -> list[str]:
        """Every thread of the schema, oldest first (for operators)."""
        rows = await self._fetchall("SELECT id FROM threads ORDER BY created_at, id", ())
        return [thread_id for (thread_id,) in rows]

    async def list_threads(self, principal: str, *, limit: int | None = None) -> list[ThreadInfo]:
        """Return the threads `principal` owns, the latest activity first, at most `limit` (an index scan)."""
        rows = await self._fetchall(
            "SELECT " + _INFO_COLUMNS + " FROM threads WHERE principal = %s ORDER BY updated_at DESC, id LIMIT %s",
            (principal, limit),
        )
        return [ThreadInfo(*row) for row in rows]

    async def thread_info(self, thread_id: str) -> ThreadInfo | None:
        """Return the thread's owner and times (None for an unknown thread)."""
        row = await self._fetchone("SELECT " + _INFO_COLUMNS + " FROM threads WHERE id = %s", (thread_id,))
        return None if row is None else ThreadInfo(*row)

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and everything kept of it (every table but `leases`), in one statement.

        Fenced by the lease this store holds of it, if any. True if the thread existed.
        """
        self._outboxes.pop(thread_id, None)
        gone = await self._fetchall(_DELETE_THREAD, {"t": thread_id}, owning=(thread_id,))
        return bool(gone)

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        return await self._fetchone("SELECT 1 FROM threads WHERE id = %s", (thread_id,)) is not None

    async def count_threads(self, principal: str) -> int:
        """Return how many threads `principal` owns (an index scan of `threads`)."""
        row = await self._fetchone("SELECT count(*) FROM threads WHERE principal = %s", (principal,))
        return int(row[0])

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return the thread's transcript, oldest first (empty for a new thread)."""
        rows = await self._fetchall("SELECT body FROM messages WHERE thread_id = %s ORDER BY seq", (thread_id,))
        return [message_from_dict(json.loads(body)) for (body,) in rows]

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript in one statement."""
        bodies = [dumps(message.to_dict()) for message in messages]
        await self._write(_APPEND, {"t": thread_id, "bodies": bodies, "now": time.time()}, owning=(thread_id,))

    # -- the call ledger ------------------------------------------------------------------------

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run (write-ahead); existing ids are kept."""
        await self._write(_RECORD, _ledger_rows(entries), owning=[entry.thread_id for entry in entries])

    async def record_batch(self, thread_id: str, message: Message, entries: Sequence[LedgerEntry]) -> None:
        """Append the message that asks for a batch of calls and write the calls to the ledger, in one statement."""
        params = {**_ledger_rows(entries), "t": thread_id, "body": dumps(message.to_dict()), "now": time.time()}
        await self._write(
            "WITH asked AS (INSERT INTO messages (thread_id, body) VALUES (%(t)s, %(body)s)), "
            + _TOUCH
            + " "
            + _RECORD,
            params,
            owning=[thread_id, *(entry.thread_id for entry in entries)],
        )

    async def complete_batch(
        self, thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[ToolResultMessage]:
        """Record each call's result and append one `ToolResultMessage` per call, in one statement.

        The first terminal result wins; each message carries the result that won (its JSON is
        put into the message's in SQL). Returns the messages.
        """
        texts = [dumps(result.to_dict()) for result in results]
        heads: list[str] = []
        tails: list[str] = []
        for call, result, text in zip(calls, results, texts, strict=True):
            # The message's JSON around its result's: the result is its last member.
            head, _, tail = dumps(ToolResultMessage(call.name, result).to_dict()).rpartition(text)
            heads.append(head)
            tails.append(tail)
        params = {
            "t": thread_id,
            "ids": [call.id for call in calls],
            "results": texts,
            "heads": heads,
            "tails": tails,
            "now": time.time(),
        }
        rows = await self._fetchall(_COMPLETE_BATCH, params, owning=(thread_id,))
        return [
            ToolResultMessage(call.name, result if kept == text else ToolResult.from_dict(json.loads(kept)))
            for call, result, text, (kept,) in zip(calls, results, texts, rows, strict=True)
        ]

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a call forward (e.g. to DISPATCHED); a call never moves back, nor out of TERMINAL.

        Raises:
            UsageError: `state` is ANSWERED or TERMINAL (they come with the answer, by
                `save_wire_state`, or the result, by `complete_call`).
        """
        if state in COMES_WITH:
            raise UsageError(f"a call becomes {state.name} only with {COMES_WITH[state]}")
        earlier = [other.value for other in CallState if CALL_STATE_ORDER[other] < CALL_STATE_ORDER[state]]
        await self._write(
            "UPDATE ledger SET state = %s WHERE thread_id = %s AND call_id = %s AND state = ANY(%s::text[])",
            (state.value, thread_id, call_id, earlier),
            owning=(thread_id,),
        )

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result (it wins)."""
        won = await self._write(
            "UPDATE ledger SET state = 'terminal', result = %s WHERE thread_id = %s AND call_id = %s"
            " AND state <> 'terminal'",
            (dumps(result.to_dict()), thread_id, call_id),
        )
        return won == 1

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call."""
        row = await self._fetchone(
            "SELECT " + _LEDGER_COLUMNS + " FROM ledger WHERE thread_id = %s AND call_id = %s", (thread_id, call_id)
        )
        return None if row is None else ledger_entry_from_row(row)

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in the order they were recorded."""
        rows = await self._fetchall(
            "SELECT " + _LEDGER_COLUMNS + " FROM ledger WHERE thread_id = %s AND state <> 'terminal' ORDER BY recorded",
            (thread_id,),
        )
        return [ledger_entry_from_row(row) for row in rows]

    # -- client tool state ------------------------------------------------------------------------

    async def load_client_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's client tool state as saved (None when there is none)."""
        row = await self._fetchone("SELECT state FROM client_state WHERE thread_id = %s", (thread_id,))
        return None if row is None else json.loads(row[0])

    async def save_client_state(self, thread_id: str, state: Mapping[str, Any] | None) -> None:
        """Replace the thread's client tool state in one statement; None deletes it."""
        if state is None:
            await self._write("DELETE FROM client_state WHERE thread_id = %s", (thread_id,), owning=(thread_id,))
            return
        await self._write(
            "INSERT INTO client_state (thread_id, state, updated_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at",
            (thread_id, dumps(state), time.time()),
            owning=(thread_id,),
        )

    # -- the server's protocol state ------------------------------------------------------------

    async def load_wire_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the server's protocol state of the conversation (None when there is none)."""
        async with self._connection() as db:
            return await load_wire(db, thread_id)

    def release_wire_state(self, thread_id: str) -> None:
        """Forget the outbox of this store's last save of the thread (the next save writes it whole)."""
        self._outboxes.pop(thread_id, None)

    async def save_wire_state(
        self,
        thread_id: str,
        state: Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
        appended: Sequence[Message] = (),
    ) -> frozenset[str]:
        """Replace the conversation's protocol state atomically, in one statement; None deletes it.

        As in `SqliteStore`, the frames of the outbox are rows of their own and a save writes what
        changed since this store's last save of the thread (`postgres_wire`); when another writer
        saved the thread in between, it rewrites everything. `dispatched` calls move to
        DISPATCHED and DISPATCHED `answered` calls to ANSWERED (with their answers) in the same
        statement; `appended` messages join the transcript in the same transaction (a statement
        before it).

        Returns:
            The calls of `answered` whose answers were saved.

        Raises:
            EnvelopeError: A state whose numbering is not integers or whose outbox is not pairs of
                a stanza number and a base64 frame.
        """
        # Forgotten until this save is committed: if it fails, the next one is whole.
        known = self._outboxes.pop(thread_id, None)
        parts = None if state is None else wire_parts(state, known)
        answers = {call_id: dumps(answer) for call_id, answer in (answered or {}).items()}
        async with self._owning((thread_id,)) as db:
            if not appended:
                saved, written = await save_wire(db, known, thread_id, parts, tuple(dispatched), answers)
            else:
                bodies = [dumps(message.to_dict()) for message in appended]
                async with db.transaction():  # (a savepoint within a fenced write's transaction)
                    await db.execute(_APPEND, {"t": thread_id, "bodies": bodies, "now": time.time()})
                    saved, written = await save_wire(db, known, thread_id, parts, tuple(dispatched), answers)
        remember(self._outboxes, thread_id, written)
        return saved

    # -- how each thread's last run stands ----------------------------------------------------------

    async def load_run(self, thread_id: str) -> RunRecord:
        """Return how the thread's last run stands (`RunRecord()` when nothing was saved)."""
        row = await self._fetchone("SELECT closed_at, resume_attempts FROM threads WHERE id = %s", (thread_id,))
        return RunRecord() if row is None else RunRecord(row[0], row[1])

    async def save_run(self, thread_id: str, record: RunRecord) -> None:
        """Replace how the thread's last run stands (creating the thread if needed)."""
        now = time.time()
        await self._write(
            "INSERT INTO threads (id, principal, created_at, updated_at, closed_at, resume_attempts)"
            " VALUES (%s, NULL, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET closed_at = excluded.closed_at,"
            " resume_attempts = excluded.resume_attempts",
            (thread_id, now, now, record.closed_at, record.resume_attempts),
            owning=(thread_id,),
        )
