"""`PostgresDatabase`: what `PostgresStore` stands on: its connection pool, opened in the event loop, and closed.

The pool's connections run in autocommit (a statement is its own transaction: no `BEGIN` or
`COMMIT` to wait for) with the store's schema as `search_path` and `synchronous_commit = on`
(`postgres_schema.connection_options`). The first connection creates or migrates the schema.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, LiteralString, Self

import anyio

from .._extras import import_extra
from ..errors import UsageError
from ..guard import asyncio_loop
from .outbox import SavedWire
from .postgres_schema import connection_options, migrate, schema_name

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.rows import TupleRow
    from psycopg_pool import AsyncConnectionPool

    _Pool = AsyncConnectionPool[AsyncConnection[TupleRow]]

__all__ = ["PostgresDatabase", "describe_dsn"]


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

    async def _fetchone(self, query: LiteralString, params: Any) -> Any:
        async with (await self._ready()).connection() as db:
            cursor = await db.execute(query, params)
            return await cursor.fetchone()

    async def _fetchall(self, query: LiteralString, params: Any) -> list[Any]:
        async with (await self._ready()).connection() as db:
            cursor = await db.execute(query, params)
            return await cursor.fetchall()

    async def _write(self, query: LiteralString, params: Any) -> int:
        """Run one statement (its own transaction); return how many rows it changed."""
        async with (await self._ready()).connection() as db:
            cursor = await db.execute(query, params)
            return cursor.rowcount

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
