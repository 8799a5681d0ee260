"""`PostgresLeases`: one writer per conversation among replicas sharing a database (`LeaseStore`).

A lease is a row of `leases` (`conversation`, `owner`, `epoch`, `expires_at`), never deleted, so
an epoch never repeats. Each operation is one statement, timed by the database server's clock:

- acquire: `INSERT ... ON CONFLICT DO UPDATE SET epoch = epoch + 1 ... WHERE expires_at <= now`
  (free or expired: the next epoch; held: nothing, and None);
- renew: `UPDATE ... SET expires_at = now + ttl WHERE owner = mine AND epoch = mine` (`renew_all`:
  every lease a replica holds, in one statement);
- release: the same, setting `expires_at` to `-infinity` (the next acquire takes it at once),
  and `pg_notify('<schema>_released', conversation)` in the same statement;
- claim_abandoned (the sweeper): the leases that expired without a release (`expires_at` in the
  past but not `-infinity`), `FOR UPDATE SKIP LOCKED`, taken at the next epoch.

Hand-off wake-ups are PostgreSQL notifications carrying a conversation id only, on the channels
`<schema>_handover` (`ask_handover`: the holder should hand over) and `<schema>_released` (a
lease was released: a waiting replica may take it); with the default schema, `toolwire_handover`
and `toolwire_released`. `listen` holds a connection of its own that does nothing else.

The store remembers the lease it took of each conversation: its writes that depend on owning it
carry its epoch (`PostgresDatabase._owning`), and fail with `Fenced` once another replica took
the lease over. A released lease keeps fencing (a late write of a replica that handed over is
refused once the next one took the lease), until this store takes the conversation again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from .postgres_database import KEPT_LEASES, PostgresDatabase
from .records import Lease

__all__ = ["PostgresLeases"]

_ACQUIRE: Final = (
    "INSERT INTO leases AS l (conversation, owner, epoch, expires_at)"
    " VALUES (%(c)s, %(owner)s, 1, clock_timestamp() + make_interval(secs => %(ttl)s))"
    " ON CONFLICT (conversation) DO UPDATE SET owner = excluded.owner, epoch = l.epoch + 1,"
    " expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp()"
    " RETURNING epoch, extract(epoch FROM expires_at)::float8"
)
_RENEW: Final = (
    "UPDATE leases SET expires_at = clock_timestamp() + make_interval(secs => %(ttl)s)"
    " WHERE conversation = %(c)s AND owner = %(owner)s AND epoch = %(epoch)s"
)
_RENEW_ALL: Final = (
    "UPDATE leases l SET expires_at = clock_timestamp() + make_interval(secs => %(ttl)s)"
    " FROM unnest(%(cs)s::text[], %(owners)s::text[], %(epochs)s::bigint[]) AS h (conversation, owner, epoch)"
    " WHERE l.conversation = h.conversation AND l.owner = h.owner AND l.epoch = h.epoch RETURNING l.conversation"
)
_RELEASE: Final = (
    "WITH gone AS (UPDATE leases SET expires_at = '-infinity'"
    " WHERE conversation = %(c)s AND owner = %(owner)s AND epoch = %(epoch)s RETURNING conversation)"
    " SELECT pg_notify(%(channel)s, conversation) FROM gone"
)
_CLAIM: Final = (
    "WITH abandoned AS (SELECT conversation FROM leases WHERE expires_at <= clock_timestamp()"
    " AND expires_at > '-infinity' ORDER BY expires_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
    " UPDATE leases l SET owner = %(owner)s, epoch = l.epoch + 1,"
    " expires_at = clock_timestamp() + make_interval(secs => %(ttl)s) FROM abandoned"
    " WHERE l.conversation = abandoned.conversation"
    " RETURNING l.conversation, l.epoch, extract(epoch FROM l.expires_at)::float8"
)
_KINDS: Final = ("handover", "released")
_HOLDER: Final = (
    "SELECT owner, epoch, extract(epoch FROM expires_at)::float8 FROM leases"
    " WHERE conversation = %s AND expires_at > clock_timestamp()"
)


def _params(lease: Lease, **more: Any) -> dict[str, Any]:
    return {"c": lease.conversation, "owner": lease.owner, "epoch": lease.epoch, **more}


class PostgresLeases(PostgresDatabase):
    """The `LeaseStore` part of `PostgresStore`, and the leases its writes are fenced with."""

    async def acquire(self, conversation: str, owner: str, ttl: float) -> Lease | None:
        """Take the conversation's lease for `ttl` seconds if it is free or expired; None while another holds it.

        From now on this store's writes that depend on owning the conversation are fenced with
        the new epoch.
        """
        row = await self._fetchone(_ACQUIRE, {"c": conversation, "owner": owner, "ttl": float(ttl)})
        if row is None:
            return None
        lease = Lease(conversation, owner, int(row[0]), float(row[1]))
        self._hold(lease)
        return lease

    async def claim_abandoned(self, owner: str, ttl: float, *, limit: int = 16) -> list[Lease]:
        """Take over up to `limit` leases that expired without being released, in one statement.

        `FOR UPDATE SKIP LOCKED`: replicas that claim at the same time get different conversations.
        From now on this store's owning writes of each are fenced with its new epoch.
        """
        rows = await self._fetchall(_CLAIM, {"owner": owner, "ttl": float(ttl), "limit": limit})
        leases = [Lease(conversation, owner, int(epoch), float(expires)) for conversation, epoch, expires in rows]
        for lease in leases:
            self._hold(lease)
        return leases

    def _hold(self, lease: Lease) -> None:
        """Fence this store's owning writes of the lease's conversation with its epoch."""
        held = self._held
        held.pop(lease.conversation, None)  # (newest last: the oldest are forgotten first)
        held[lease.conversation] = lease
        if len(held) > KEPT_LEASES:
            del held[next(iter(held))]

    async def renew(self, lease: Lease, ttl: float) -> bool:
        """Extend the lease to `ttl` seconds from now; False when another replica took it over."""
        return await self._write(_RENEW, _params(lease, ttl=float(ttl))) == 1

    async def renew_all(self, leases: Sequence[Lease], ttl: float) -> set[str]:
        """`renew` each lease in one statement; return the conversations whose leases were renewed."""
        if not leases:
            return set()
        params = {
            "ttl": float(ttl),
            "cs": [lease.conversation for lease in leases],
            "owners": [lease.owner for lease in leases],
            "epochs": [lease.epoch for lease in leases],
        }
        return {conversation for (conversation,) in await self._fetchall(_RENEW_ALL, params)}

    async def release(self, lease: Lease) -> None:
        """Give the lease up: it expires now (its epoch stays, and keeps fencing this store's writes)."""
        await self._fetchall(_RELEASE, _params(lease, channel=f"{self.schema}_released"))

    async def holder(self, conversation: str) -> Lease | None:
        """Return the conversation's lease while someone holds it (None when free or expired)."""
        row = await self._fetchone(_HOLDER, (conversation,))
        return None if row is None else Lease(conversation, row[0], int(row[1]), float(row[2]))

    async def ask_handover(self, conversation: str) -> None:
        """Ask the conversation's holder to hand it over: `NOTIFY <schema>_handover, '<conversation>'`."""
        await self._fetchall("SELECT pg_notify(%s, %s)", (f"{self.schema}_handover", conversation))

    async def listen(self, wake: Callable[[str, str], None]) -> None:
        """Call `wake(kind, conversation)` for each hand-off wake-up (`handover`, `released`), until cancelled.

        Holds a connection of its own, which only listens.

        Raises:
            psycopg.OperationalError: The connection failed or was lost.
        """
        import psycopg
        from psycopg import sql

        await self._ready()  # the schema exists
        async with await psycopg.AsyncConnection.connect(self._dsn, **self._connect_args) as db:
            for kind in _KINDS:
                await db.execute(sql.SQL("LISTEN {}").format(sql.Identifier(f"{self.schema}_{kind}")))
            prefix = f"{self.schema}_"
            async for note in db.notifies():
                kind = note.channel.removeprefix(prefix)
                if kind in _KINDS:
                    wake(kind, note.payload)
