"""`PostgresDatabase`: what `PostgresStore` stands on: its connection pool, opened in the event loop, and closed.

The pool's connections run in autocommit (a statement is its own transaction: no `BEGIN` or
`COMMIT` to wait for) with the store's schema as `search_path` and `synchronous_commit = on`
(`postgres_schema.connection_options`). The first connection creates or migrates the schema.

A write that depends on owning a conversation whose lease this store took (`PostgresLeases`) is
*fenced*: `_owning` runs it in a transaction whose first statement, `lease_fence(conversation,
epoch)`, fails it unless the lease is still at this store's epoch, all sent as one pipeline (one
round trip). A fenced write keeps nothing and raises `Fenced`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, LiteralString, Self

import anyio

from .._extras import import_extra
from ..errors import Fenced, StoreUnavailable, UsageError
from ..guard import asyncio_loop
from .outbox import SavedWire
from .postgres_schema import FENCED_SQLSTATE, connection_options, migrate, schema_name
from .records import Lease

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

    _Pool = AsyncConnectionPool[AsyncConnection[TupleRow]]

__all__ = ["KEPT_LEASES", "PostgresDatabase", "describe_dsn"]

KEPT_LEASES: Final = 4096
"""Released leases whose epochs a store keeps fencing its writes with (the oldest are forgotten)."""


def describe_dsn(dsn: str) -> str:
    """A connection string without its password: `postgresql://USER@HOST:PORT/DBNAME` (for messages and logs)."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(dsn)
    except Exception:  # not a connection string psycopg reads: say nothing of it
        return "postgresql://(unreadable connection string)"
    user = f"{params['user']}@" if params.get("user") else ""
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{params.get('host') or 'localhost'}{port}/{params.get('dbname') or ''}"


class PostgresDatabase:
    """A pool of connections to one schema of a PostgreSQL database (`PostgresStore`'s arguments)."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "toolwire",
        min_connections: int = 1,
        max_connections: int = 10,
        connect_timeout: float = 10.0,
    ) -> None:
        import_extra("psycopg_pool", "postgres")  # psycopg's pool, and psycopg with it
        from psycopg.conninfo import conninfo_to_dict

        self.schema = schema_name(schema)
        self.location = f"{describe_dsn(dsn)} (schema {schema})"
        """Where the store is, without the password (for messages and logs)."""
        self._dsn = dsn
        given = conninfo_to_dict(dsn).get("options")
        self._connect_args: dict[str, Any] = {
            "autocommit": True,
            "options": connection_options(schema, None if given is None else str(given)),
            "application_name": "toolwire",
            "connect_timeout": max(1, round(connect_timeout)),
        }
        self._sizes = (min_connections, max_connections)
        self._connect_timeout = connect_timeout
        self._pool: _Pool | None = None
        self._closed = False
        self._opening = anyio.Lock()
        self._outboxes: dict[str, SavedWire] = {}
        """Per thread, the `version` token and the outbox frames of this store's last save."""
        self._held: dict[str, Lease] = {}
        """Per conversation, the last lease this store took: its owning writes are fenced with its epoch."""

    async def open(self) -> None:
        """Connect, create or migrate the schema, and start the pool (done by the first call otherwise).

        Raises:
            UsageError: Not on asyncio; the database cannot be reached; or its schema is from a
                newer toolwire.
        """
        await self._ready()

    async def _ready(self) -> _Pool:
        if self._pool is not None:
            return self._pool
        if self._closed:
            raise UsageError(f"this PostgresStore ({self.location}) is closed; open a new PostgresStore")
        if asyncio_loop() is None:
            raise UsageError("PostgresStore runs on asyncio (psycopg's async API), not on this event loop")
        async with self._opening:
            if self._pool is None:
                self._pool = await self._start()
        return self._pool

    async def _start(self) -> _Pool:
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        try:
            async with await psycopg.AsyncConnection.connect(self._dsn, **self._connect_args) as db:
                await migrate(db, self.schema, self.location)
        except psycopg.OperationalError as exc:
            raise UsageError(f"cannot open the PostgreSQL store at {self.location}: {exc}".strip()) from exc
        minimum, maximum = self._sizes
        pool: _Pool = AsyncConnectionPool(
            self._dsn, kwargs=self._connect_args, min_size=minimum, max_size=maximum, open=False, name="toolwire"
        )
        await pool.open(wait=True, timeout=self._connect_timeout)
        return pool

    @asynccontextmanager
    async def _connection(self) -> AsyncGenerator[AsyncConnection[TupleRow]]:
        """A connection of the pool, for one operation.

        Raises:
            StoreUnavailable: The connection was lost or could not be made (the database server
                restarted, the network failed); the pool's other idle connections are checked,
                so that those the same failure broke are replaced rather than failing in turn.
        """
        import psycopg
        from psycopg_pool import PoolTimeout

        pool = await self._ready()
        try:
            async with pool.connection() as db:
                yield db
        except (psycopg.OperationalError, PoolTimeout) as exc:
            with anyio.move_on_after(1):
                await pool.check()
            raise StoreUnavailable(f"the PostgreSQL store at {self.location} failed: {exc}".strip()) from exc

    async def _fetchone(self, query: LiteralString, params: Any) -> Any:
        async with self._connection() as db:
            cursor = await db.execute(query, params)
            return await cursor.fetchone()

    async def _fetchall(self, query: LiteralString, params: Any, *, owning: Iterable[str] = ()) -> list[Any]:
        """Run one query; `owning`: the conversations whose leases fence it (a write)."""
        async with self._owning(owning) as db:
            cursor = await db.execute(query, params)
        return await cursor.fetchall()

    async def _write(self, query: LiteralString, params: Any, *, owning: Iterable[str] = ()) -> int:
        """Run one statement (its own transaction); return how many rows it changed.

        `owning`: the conversations whose ownership the write depends on (fenced by the leases
        this store holds of them).
        """
        async with self._owning(owning) as db:
            cursor = await db.execute(query, params)
        return cursor.rowcount

    @asynccontextmanager
    async def _owning(self, conversations: Iterable[str]) -> AsyncGenerator[AsyncConnection[TupleRow]]:
        """A connection for a write that depends on owning `conversations`.

        Without a lease of them held here, the pool's connection as it is (autocommit: each
        statement its own transaction). With one, a pipelined transaction that first checks each
        lease's epoch (`lease_fence`); its results are there once the block has ended.

        Raises:
            Fenced: Another replica took one of the leases over; nothing was written.
            StoreUnavailable: The connection failed (whether the write was kept is unknown).
        """
        fences = [(c, lease.epoch) for c in dict.fromkeys(conversations) if (lease := self._held.get(c)) is not None]
        async with self._connection() as db:
            if not fences:
                yield db
                return
            import psycopg

            try:
                async with db.pipeline(), db.transaction():
                    for conversation, epoch in fences:
                        await db.execute("SELECT lease_fence(%s, %s)", (conversation, epoch))
                    yield db
            except psycopg.Error as exc:
                if exc.sqlstate != FENCED_SQLSTATE:
                    raise
                said = str(exc.diag.message_primary)
                conversation, epoch = next(
                    (f for f in fences if f"conversation {f[0]}, epoch {f[1]}" in said), fences[0]
                )
                raise Fenced(conversation, epoch) from None

    # -- lifetime -------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pool's connections; the store cannot be used afterwards. Closing twice is harmless."""
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
