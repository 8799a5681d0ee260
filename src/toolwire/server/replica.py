"""`Replica`: the leases one server process holds, among replicas sharing a store (`LeaseStore`).

With a shared store (`toolwire serve --store postgresql://...`), one replica at a time serves a
conversation: the one holding its lease. The server takes the lease before it loads a
conversation, keeps it while a client is connected or a run goes on, and releases it after.
`Replica.run` renews every lease held, well before it expires (a lease whose renewal fails is
*lost*: its conversation's run stops at once and its socket closes, so the client reconnects
elsewhere), listens for hand-off wake-ups (another replica asking for a conversation held here:
it is handed over, drained, persisted, released; or a lease released that a connection here
waits for), and sweeps: it takes over the conversations whose holder stopped renewing their
leases without releasing them (it died), and resumes their runs with no client attached.

```
replica B: acquire ─ held by A ─► NOTIFY handover 'c' ─► A: park the run, wait (≤ drain),
           save, close the socket, release + NOTIFY released 'c' ─► B: acquire, load, resume
           (and B polls every `poll` seconds, in case a wake-up was lost)
```
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..store import Lease, LeaseStore

__all__ = ["LeaseSettings", "Replica", "default_replica_id"]

_log = logging.getLogger("toolwire.server")


def default_replica_id() -> str:
    """This process's name among replicas: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, kw_only=True)
class LeaseSettings:
    """How a server replica holds its conversations' leases (`toolwire serve --lease-*`)."""

    replica_id: str = field(default_factory=default_replica_id)
    """This replica's name in the leases it holds (`--replica-id`; default `host:pid`)."""
    ttl: float = 15.0
    """Seconds a lease lasts unless renewed (`--lease-ttl`): how long a dead replica's conversations wait."""
    renew_every: float = 5.0
    """Seconds between renewals (`--lease-renew`); well under `ttl`, so that a slow renewal is not a lost lease."""
    drain: float = 5.0
    """Seconds a replica asked to hand a conversation over waits for its run to stop (`--lease-drain`)."""
    wait: float = 8.0
    """Seconds a new connection waits for another replica to hand its conversation over (`--lease-wait`);
    under the clients' handshake timeout (10 s): past it the connection closes (1013) and the client comes back."""
    poll: float = 1.0
    """Seconds between checks of a lease a connection waits for, in case a wake-up was lost."""

    def __post_init__(self) -> None:
        if not 0 < self.renew_every < self.ttl:
            raise ValueError(f"the lease renewal interval ({self.renew_every} s) must be under its TTL ({self.ttl} s)")
        if self.drain < 0 or self.wait < 0 or self.poll <= 0:
            raise ValueError("the lease drain and wait bounds must not be negative, and the poll interval positive")


class Replica:
    """The leases this server holds, their renewal, and hand-off wake-ups.

    Args:
        store: The shared store.
        settings: How long leases last, how often they are renewed, the hand-off bounds.
    """

    def __init__(self, store: LeaseStore, settings: LeaseSettings) -> None:
        self.store = store
        self.settings = settings
        self.held: dict[str, tuple[Lease, float]] = {}
        """Conversation → its lease and until when (`anyio.current_time()`) it surely lasts."""
        self._released: dict[str, anyio.Event] = {}
        """Conversations connections here wait for → set when a wake-up says they were released."""
        self.on_lost: Callable[[str], None] = lambda _: None
        """Called with a conversation whose lease was lost (renewal refused, or failing past expiry)."""
        self.on_handover: Callable[[str], Coroutine[Any, Any, None]] | None = None
        """Called (in a task of its own) with a conversation held here that another replica asks for."""
        self.on_claimed: Callable[[str], Coroutine[Any, Any, None]] | None = None
        """Called (in a task of its own) with a conversation the sweeper took over (its holder died)."""

    async def take(self, conversation: str) -> bool:
        """Take the conversation's lease now; False while another replica holds it."""
        settings = self.settings
        started = anyio.current_time()
        lease = await self.store.acquire(conversation, settings.replica_id, settings.ttl)
        if lease is None:
            return False
        self.held[conversation] = (lease, started + settings.ttl)
        return True

    async def give_up(self, conversation: str) -> None:
        """Release the conversation's lease (after its last write), if held; another replica may take it at once."""
        held = self.held.pop(conversation, None)
        if held is not None:
            try:
                await self.store.release(held[0])
            except Exception as exc:  # it expires by itself
                _log.warning(
                    "conversation %s: releasing its lease failed (%s); it expires by itself", conversation, exc
                )

    async def wait_released(self, conversation: str) -> None:
        """Ask the conversation's holder to hand it over, then wait for its release (at most `poll` seconds)."""
        event = self._released.setdefault(conversation, anyio.Event())
        try:
            await self.store.ask_handover(conversation)
            with anyio.move_on_after(self.settings.poll):
                await event.wait()
        finally:
            if self._released.get(conversation) is event:
                del self._released[conversation]

    async def run(self) -> None:
        """Renew the leases held and listen for hand-off wake-ups, until cancelled."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._renew)
            group.start_soon(self._listen, group)
            group.start_soon(self._sweep, group)

    async def _sweep(self, group: TaskGroup) -> None:
        """Take over, every `renew_every` seconds, the conversations whose holders stopped renewing their leases."""
        settings = self.settings
        while True:
            await anyio.sleep(settings.renew_every)
            started = anyio.current_time()
            try:
                claimed = await self.store.claim_abandoned(settings.replica_id, settings.ttl)
            except Exception as exc:
                _log.warning("claiming abandoned conversations failed (%s)", exc)
                continue
            for lease in claimed:
                _log.info("conversation %s: took it over from %s, whose lease expired", lease.conversation, lease.owner)
                self.held[lease.conversation] = (lease, started + settings.ttl)
                if self.on_claimed is not None:
                    group.start_soon(self.on_claimed, lease.conversation)

    async def _renew(self) -> None:
        """Renew every lease held, every `renew_every` seconds, in one statement."""
        settings = self.settings
        while True:
            await anyio.sleep(settings.renew_every)
            held = dict(self.held)
            if not held:
                continue
            started = anyio.current_time()
            try:
                renewed = await self.store.renew_all([lease for lease, _ in held.values()], settings.ttl)
            except Exception as exc:  # the database is away: a lease lasts until its expiry, then is lost
                _log.warning("renewing %d leases failed (%s)", len(held), exc)
                renewed = None
            for conversation, (lease, lasts) in held.items():
                if self.held.get(conversation, (None,))[0] is not lease:
                    continue  # given up (or taken again) meanwhile
                if renewed is not None and conversation in renewed:
                    self.held[conversation] = (lease, started + settings.ttl)
                elif renewed is not None or anyio.current_time() >= lasts:
                    _log.warning("conversation %s: its lease was lost; stopping its run here", conversation)
                    del self.held[conversation]
                    self.on_lost(conversation)

    async def _listen(self, group: TaskGroup) -> None:
        def wake(kind: str, conversation: str) -> None:
            if kind == "released":
                if (event := self._released.get(conversation)) is not None:
                    event.set()
            elif kind == "handover" and conversation in self.held and self.on_handover is not None:
                group.start_soon(self.on_handover, conversation)

        while True:
            try:
                await self.store.listen(wake)
            except Exception as exc:  # the waiters poll meanwhile
                _log.warning("listening for hand-off wake-ups failed (%s); listening again in a moment", exc)
            await anyio.sleep(self.settings.poll)
