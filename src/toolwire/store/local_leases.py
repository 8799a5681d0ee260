"""`LocalLeases`: the `LeaseStore` of a store that one process holds alone (`MemoryStore`, `SqliteStore`).

One process writes such a store (a `MemoryStore` lives in it; `toolwire serve` locks its SQLite
data directory, `DataDirLock`), so there is no other replica to fence out: the leases are kept
in memory with the semantics of the shared store's (take when free or expired with the next
epoch, renew by the holder at its epoch, release), and no write checks them. They are gone with
the process, as is every replica a lease could have kept out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import anyio

from .records import Lease

__all__ = ["LocalLeases"]


class LocalLeases:
    """Leases in this process's memory (mixed into the single-process stores)."""

    _local_leases: dict[str, Lease] | None = None

    def _leases(self) -> dict[str, Lease]:
        if self._local_leases is None:
            self._local_leases = {}
        return self._local_leases

    async def acquire(self, conversation: str, owner: str, ttl: float) -> Lease | None:
        """Take the conversation's lease if it is free or expired (the next epoch); None while held."""
        leases = self._leases()
        now = time.time()
        last = leases.get(conversation)
        if last is not None and last.expires_at > now:
            return None
        lease = leases[conversation] = Lease(conversation, owner, 1 if last is None else last.epoch + 1, now + ttl)
        return lease

    async def renew(self, lease: Lease, ttl: float) -> bool:
        """Extend the lease to `ttl` seconds from now; False when it is no longer this holder's at this epoch."""
        leases = self._leases()
        if not _same(leases.get(lease.conversation), lease):
            return False
        leases[lease.conversation] = Lease(lease.conversation, lease.owner, lease.epoch, time.time() + ttl)
        return True

    async def renew_all(self, leases: Sequence[Lease], ttl: float) -> set[str]:
        """`renew` each lease; return the conversations whose leases were renewed."""
        return {lease.conversation for lease in leases if await self.renew(lease, ttl)}

    async def release(self, lease: Lease) -> None:
        """Give the lease up (it expires now, its epoch stays); nothing when it moved on already."""
        leases = self._leases()
        if _same(leases.get(lease.conversation), lease):
            leases[lease.conversation] = Lease(lease.conversation, lease.owner, lease.epoch, float("-inf"))

    async def holder(self, conversation: str) -> Lease | None:
        """Return the conversation's lease while someone holds it (None when free or expired)."""
        lease = self._leases().get(conversation)
        return lease if lease is not None and lease.expires_at > time.time() else None

    async def claim_abandoned(self, owner: str, ttl: float, *, limit: int = 16) -> list[Lease]:
        """Take over up to `limit` leases that expired without being released (the next epoch each)."""
        leases = self._leases()
        now = time.time()
        abandoned = [lease for lease in leases.values() if float("-inf") < lease.expires_at <= now][:limit]
        for lease in abandoned:
            leases[lease.conversation] = Lease(lease.conversation, owner, lease.epoch + 1, now + ttl)
        return [leases[lease.conversation] for lease in abandoned]

    async def ask_handover(self, conversation: str) -> None:
        """Nothing: one process holds every lease of this store (there is nobody to ask)."""

    async def listen(self, wake: Callable[[str, str], None]) -> None:
        """Wait until cancelled: nothing wakes a replica of a single-process store."""
        await anyio.sleep_forever()


def _same(stored: Lease | None, lease: Lease) -> bool:
    return stored is not None and stored.owner == lease.owner and stored.epoch == lease.epoch
