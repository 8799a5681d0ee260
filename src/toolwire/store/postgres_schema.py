r"""The PostgreSQL schema of `PostgresStore`: its migrations, and how its connections are set up.

Every table lives in one PostgreSQL schema (`toolwire` unless told otherwise), so that toolwire's
tables stand apart from an application's in a shared database, and several deployments can share
one database. Its `schema_version` table holds one row, the schema version; opening a store runs
the missing `MIGRATIONS` in one transaction, holding an advisory lock so that processes that
start together migrate one after the other. A migration is appended, never edited.

JSON values (messages, calls, results, answers, states) are stored as `text`, exactly as the
store wrote them: `jsonb` would refuse some of what a model may send (`\u0000`, a lone surrogate)
and costs the server a parse per row.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Final, LiteralString

from ..errors import UsageError

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["FENCED_SQLSTATE", "MIGRATIONS", "SCHEMA_VERSION", "connection_options", "migrate", "schema_name"]

_log = logging.getLogger("toolwire.store")

_VERSION_1: Final[tuple[LiteralString, ...]] = (
    "CREATE TABLE threads (id text PRIMARY KEY, principal text, created_at double precision NOT NULL,"
    " closed_at bigint NOT NULL DEFAULT -1, resume_attempts integer NOT NULL DEFAULT 0)",
    "CREATE INDEX threads_principal ON threads (principal)",
    # The transcript's order is the order of `seq` (an identity: appends never read the table first).
    "CREATE TABLE messages (thread_id text NOT NULL, seq bigint GENERATED ALWAYS AS IDENTITY, body text NOT NULL,"
    " PRIMARY KEY (thread_id, seq))",
    # `recorded` keeps the recording order.
    "CREATE TABLE ledger (recorded bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, thread_id text NOT NULL,"
    " call_id text NOT NULL, request_index integer NOT NULL, state text NOT NULL, execution text NOT NULL,"
    " mode text NOT NULL, deadline double precision, call text NOT NULL, result text, request_id text,"
    " answer text, UNIQUE (thread_id, call_id))",
    "CREATE INDEX ledger_open ON ledger (thread_id, recorded) WHERE state <> 'terminal'",
    "CREATE TABLE approvals (thread_id text NOT NULL, call_id text NOT NULL, tool text NOT NULL,"
    " args_hash text NOT NULL, PRIMARY KEY (thread_id, call_id, tool, args_hash))",
    "CREATE TABLE grants (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, thread_id text NOT NULL,"
    " tool text NOT NULL, explicit boolean NOT NULL, granted_at double precision NOT NULL, UNIQUE (thread_id, tool))",
    "CREATE TABLE denials (thread_id text NOT NULL, tool text NOT NULL, args_hash text NOT NULL,"
    " reason text NOT NULL, PRIMARY KEY (thread_id, tool, args_hash))",
    "CREATE TABLE client_state (thread_id text PRIMARY KEY, state text NOT NULL, updated_at double precision NOT NULL)",
    # The server's protocol state: the header, and one row per unacknowledged frame with the
    # numbering of the save that wrote it (see `outbox` and `postgres_wire`).
    "CREATE TABLE wire_state (thread_id text PRIMARY KEY, state text NOT NULL, updated_at double precision NOT NULL,"
    " version bigint NOT NULL)",
    "CREATE TABLE wire_outbox (thread_id text NOT NULL, stanza bigint NOT NULL, frame bytea NOT NULL,"
    " next_stanza bigint NOT NULL, last_seen bigint NOT NULL, PRIMARY KEY (thread_id, stanza))",
)

_VERSION_2: Final[tuple[LiteralString, ...]] = (
    # One row per conversation a replica ever held; never deleted, so an epoch never repeats.
    # `expires_at` is the database server's clock: replicas' clocks need not agree.
    "CREATE TABLE leases (conversation text PRIMARY KEY, owner text NOT NULL, epoch bigint NOT NULL,"
    " expires_at timestamptz NOT NULL)",
    "CREATE INDEX leases_expiry ON leases (expires_at)",
    # Run first in the transaction of a write that depends on owning the conversation: it fails
    # the transaction (nothing is written) unless the lease is still at the writer's epoch. FOR
    # SHARE holds a takeover's UPDATE until the write commits, and a write that waited for a
    # takeover re-reads the row (its new epoch): no write of an old epoch commits after a takeover.
    "CREATE FUNCTION lease_fence(c text, e bigint) RETURNS void LANGUAGE plpgsql AS $$"
    " BEGIN PERFORM 1 FROM leases WHERE conversation = c AND epoch = e FOR SHARE;"
    " IF NOT FOUND THEN RAISE EXCEPTION 'fenced: conversation %, epoch %', c, e USING ERRCODE = 'TWFEN'; END IF;"
    " END $$",
)

_VERSION_3: Final[tuple[LiteralString, ...]] = (
    # Each thread's last activity (a message appended), by which a principal's threads are listed.
    "ALTER TABLE threads ADD COLUMN updated_at double precision NOT NULL DEFAULT 0",
    "UPDATE threads SET updated_at = created_at",
    "DROP INDEX threads_principal",
    "CREATE INDEX threads_principal ON threads (principal, updated_at)",
)

FENCED_SQLSTATE: Final = "TWFEN"
"""The SQLSTATE of the error `lease_fence` raises."""

MIGRATIONS: Final[tuple[tuple[LiteralString, ...], ...]] = (_VERSION_1, _VERSION_2, _VERSION_3)
"""`MIGRATIONS[n]`: the statements that bring a schema from version `n` to `n + 1`; append, never edit."""

SCHEMA_VERSION: Final = len(MIGRATIONS)
"""The schema version this code writes (the row of `schema_version`)."""

_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_MIGRATION_LOCK: Final = 0x746F6F6C77697265  # "toolwire": the advisory lock key migrations hold


def schema_name(schema: str) -> str:
    """Check a schema name: lower-case letters, digits and `_`, so it needs no quoting anywhere.

    Raises:
        UsageError: Any other name.
    """
    if not _NAME.fullmatch(schema) or schema.startswith("pg_"):
        raise UsageError(
            f"schema {schema!r}: use lower-case letters, digits and '_' (at most 63; not a digit, nor 'pg_', first)"
        )
    return schema


def connection_options(schema: str, given: str | None) -> str:
    """The `options` startup parameter of the store's connections (no round trip of their own).

    `search_path` points at the store's schema; `synchronous_commit = on` makes every commit wait
    for its WAL to be flushed, whatever the server's default: the store's writes precede what the
    server sends (a ledger entry before its call runs, a frame before it is written). `given` is
    what the connection string asked for already; it comes first, the store's settings win.
    """
    ours = f"-c search_path={schema} -c synchronous_commit=on"
    return ours if not given else f"{given} {ours}"


async def migrate(db: AsyncConnection[Any], schema: str, where: str) -> None:
    """Bring the schema to `SCHEMA_VERSION` in one transaction (other processes wait for it).

    Creates the schema if it does not exist. `where` names the database in messages.

    Raises:
        UsageError: The schema was written by a newer toolwire.
    """
    from psycopg import sql

    async with db.transaction():
        await db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        cursor = await db.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if await cursor.fetchone() is None:
            await db.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        cursor = await db.execute("SELECT to_regclass('schema_version') IS NOT NULL")
        row = await cursor.fetchone()
        version = 0
        if row is not None and row[0]:
            cursor = await db.execute("SELECT version FROM schema_version")
            row = await cursor.fetchone()
            version = 0 if row is None else int(row[0])
        else:
            await db.execute("CREATE TABLE schema_version (version integer NOT NULL)")
            await db.execute("INSERT INTO schema_version VALUES (0)")
        if version > SCHEMA_VERSION:
            raise UsageError(
                f"{where} (schema {schema}) has schema version {version}, newer than this toolwire's "
                f"{SCHEMA_VERSION}; upgrade toolwire"
            )
        for statements in MIGRATIONS[version:]:
            for statement in statements:
                await db.execute(statement)
        if version < SCHEMA_VERSION:
            await db.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
            _log.info("migrated %s (schema %s) from schema version %d to %d", where, schema, version, SCHEMA_VERSION)
