"""The SQLite file's schema: its migrations, and the transactions every write runs in.

`PRAGMA user_version` is the schema version; opening a file runs the missing `MIGRATIONS` in one
transaction. A migration is appended, never edited: a file of any earlier version must still be
brought up to date.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from pydantic_core import PydanticSerializationError, to_json

from ..errors import EnvelopeError, UsageError

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "Transaction", "dumps", "migrate"]

_log = logging.getLogger("toolwire.store")


def dumps(value: Any) -> str:
    """The JSON text of a stored value (a JSON-safe form: `to_dict()`'s)."""
    try:
        return to_json(value).decode()  # (5× `json.dumps`: several values per tool call)
    except PydanticSerializationError:
        # A lone surrogate (a model can send "\ud800") is no UTF-8: escaped, in ASCII.
        return json.dumps(value, separators=(",", ":"))


def _migrate_to_1(db: sqlite3.Connection) -> None:
    """Create the first schema."""
    for statement in (
        "CREATE TABLE threads (id TEXT PRIMARY KEY, principal TEXT, created_at REAL NOT NULL)",
        "CREATE TABLE messages (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,"
        " PRIMARY KEY (thread_id, seq)) WITHOUT ROWID",
        # `recorded` keeps the recording order (an explicit key: VACUUM may renumber plain rowids).
        "CREATE TABLE ledger (recorded INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, call_id TEXT NOT NULL,"
        " request_index INTEGER NOT NULL, state TEXT NOT NULL, execution TEXT NOT NULL, mode TEXT NOT NULL,"
        " deadline REAL, call TEXT NOT NULL, result TEXT, UNIQUE (thread_id, call_id))",
        "CREATE INDEX ledger_open ON ledger (thread_id, state)",
        "CREATE TABLE approvals (thread_id TEXT NOT NULL, call_id TEXT NOT NULL, tool TEXT NOT NULL,"
        " args_hash TEXT NOT NULL, PRIMARY KEY (thread_id, call_id, tool, args_hash)) WITHOUT ROWID",
        "CREATE TABLE grants (id INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, tool TEXT NOT NULL,"
        " explicit INTEGER NOT NULL, granted_at REAL NOT NULL, UNIQUE (thread_id, tool))",
        "CREATE TABLE denials (thread_id TEXT NOT NULL, tool TEXT NOT NULL, args_hash TEXT NOT NULL,"
        " reason TEXT NOT NULL, PRIMARY KEY (thread_id, tool, args_hash)) WITHOUT ROWID",
    ):
        db.execute(statement)


def _migrate_to_2(db: sqlite3.Connection) -> None:
    """Add the client tool state of threads (registered groups, expansion, hidden tools, context)."""
    db.execute("CREATE TABLE client_state (thread_id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at REAL NOT NULL)")


def _migrate_to_3(db: sqlite3.Connection) -> None:
    """Keep the request id of client calls, so that a re-send after a restart carries the same id."""
    db.execute("ALTER TABLE ledger ADD COLUMN request_id TEXT")


def _migrate_to_4(db: sqlite3.Connection) -> None:
    """Keep the server's protocol state of each conversation: numbering and unacknowledged frames."""
    db.execute("CREATE TABLE wire_state (thread_id TEXT PRIMARY KEY, state TEXT NOT NULL, updated_at REAL NOT NULL)")


def _migrate_to_5(db: sqlite3.Connection) -> None:
    """Keep the server's unacknowledged frames one row each, so that a save writes only what changed.

    `wire_state.state` keeps the rest (role, conversation, numbering) and `version` the token of
    the save that last rewrote the frames. Each frame row also keeps the numbering of the save that
    wrote it (the numbering only grows): a save that only adds a frame writes one row.
    """
    db.execute(
        "CREATE TABLE wire_outbox (thread_id TEXT NOT NULL, stanza INTEGER NOT NULL, frame BLOB NOT NULL,"
        " next_stanza INTEGER NOT NULL, last_seen INTEGER NOT NULL, PRIMARY KEY (thread_id, stanza)) WITHOUT ROWID"
    )
    from .sqlite_wire import INSERT_FRAME, wire_parts  # (the module that writes these rows imports this one)

    db.execute("ALTER TABLE wire_state ADD COLUMN version INTEGER NOT NULL DEFAULT 0")
    for thread_id, text in db.execute("SELECT thread_id, state FROM wire_state").fetchall():
        try:
            state = json.loads(text)
            header, _, frames, _ = wire_parts(state, None)
        except (EnvelopeError, TypeError, ValueError):  # not a state this code wrote: left as it is
            continue
        numbering = (header["nextStanza"], header["lastSeen"])
        db.executemany(INSERT_FRAME, [(thread_id, stanza, frame, *numbering) for stanza, frame in frames.items()])
        db.execute("UPDATE wire_state SET state = ? WHERE thread_id = ?", (dumps(header), thread_id))


def _migrate_to_6(db: sqlite3.Connection) -> None:
    """Keep a client's answer apart from the call's result, and how each thread's last run stands."""
    db.execute("ALTER TABLE ledger ADD COLUMN answer TEXT")
    db.execute("ALTER TABLE threads ADD COLUMN closed_at INTEGER NOT NULL DEFAULT -1")
    db.execute("ALTER TABLE threads ADD COLUMN resume_attempts INTEGER NOT NULL DEFAULT 0")


def _migrate_to_7(db: sqlite3.Connection) -> None:
    """Keep each thread's last activity, and find a principal's threads by it (a server lists them)."""
    db.execute("ALTER TABLE threads ADD COLUMN updated_at REAL NOT NULL DEFAULT 0")
    db.execute("UPDATE threads SET updated_at = created_at")
    db.execute("CREATE INDEX threads_principal ON threads (principal, updated_at)")


def _migrate_to_8(db: sqlite3.Connection) -> None:
    """Drop the index of the ledger by state: a thread's open calls are found through its calls' own key.

    Kept up to date, it cost every call two more pages written (the call recorded, then settled).
    """
    db.execute("DROP INDEX IF EXISTS ledger_open")


MIGRATIONS: Final[tuple[Callable[[sqlite3.Connection], None], ...]] = (
    _migrate_to_1,
    _migrate_to_2,
    _migrate_to_3,
    _migrate_to_4,
    _migrate_to_5,
    _migrate_to_6,
    _migrate_to_7,
    _migrate_to_8,
)
"""`MIGRATIONS[n]` brings a file from schema version `n` to `n + 1`; append, never edit."""

SCHEMA_VERSION: Final = len(MIGRATIONS)
"""The schema version this code writes (`PRAGMA user_version`)."""


class Transaction:
    """One write transaction (`BEGIN IMMEDIATE`, taking the file's write lock up front, … `COMMIT`).

    A failure rolls it back, then calls `rolled_back` (a store forgets what its writes remembered).
    A class rather than a generator: the store opens two or three per tool call, on the loop's hot path.
    """

    __slots__ = ("_db", "_rolled_back")

    def __init__(self, db: sqlite3.Connection, rolled_back: Callable[[], None] | None = None) -> None:
        self._db = db
        self._rolled_back = rolled_back

    def __enter__(self) -> sqlite3.Connection:
        self._db.execute("BEGIN IMMEDIATE")
        return self._db

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                self._db.execute("COMMIT")
                return
        except BaseException:
            self._undo()
            raise
        self._undo()

    def _undo(self) -> None:
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")
        if self._rolled_back is not None:
            self._rolled_back()


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the file's schema to `SCHEMA_VERSION` in one transaction (other processes wait)."""
    with Transaction(db):
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"{path} has schema version {version}, newer than this toolwire's {SCHEMA_VERSION}; upgrade toolwire"
            )
        for step in MIGRATIONS[version:]:
            step(db)
        if version < SCHEMA_VERSION:
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            _log.info("migrated %s from schema version %d to %d", path, version, SCHEMA_VERSION)
