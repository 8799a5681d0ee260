"""`GroupCommit`: the writes queued during one turn of the event loop share one transaction.

A small SQLite write transaction costs far more in `BEGIN IMMEDIATE` and `COMMIT` (locks, the WAL
frames, the wal-index) than in its statements. When many conversations each save before writing
a frame, the writes they queue while the loop runs its ready callbacks go into one transaction,
committed together: the first writer of a turn lets the loop run once, then commits for all
who joined it. Every writer still returns only once its write is committed, so nothing is
acknowledged or sent before it is durable; a writer alone pays one turn of the loop.

If that transaction fails, each of its writes is retried in a transaction of its own, so a write
fails only for its own reason. Off asyncio (trio), a write runs at once in its own transaction.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager

from ..guard import asyncio_loop

__all__ = ["GroupCommit", "Write"]

Write = Callable[[sqlite3.Connection], None]
"""A write: statements run on the connection inside a transaction it does not end itself."""


class GroupCommit:
    """Commits the writes submitted during one turn of the asyncio loop in one transaction.

    Args:
        begin: Opens a write transaction (commits when its block ends; on an error, rolls back and
            forgets what its writes remembered of what they wrote, before the writes of a shared
            one are retried alone).
    """

    def __init__(self, begin: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        self._begin = begin
        self._queued: list[tuple[Write, asyncio.Future[None]]] = []

    async def submit(self, write: Write) -> None:
        """Run `write` in the next shared transaction; return once it is committed.

        Raises:
            Exception: What `write`, or its transaction, raised (nothing of it was committed).
        """
        loop = asyncio_loop()
        if loop is None:
            self._now(write)
            return
        future: asyncio.Future[None] = loop.create_future()
        leading = not self._queued
        self._queued.append((write, future))
        if not leading:
            await future  # cancelled: the write is still committed, and nobody waits for it
            return
        # The first writer of a turn lets the loop run once, so that the writers of this turn
        # join it, then commits for all of them, even if it was cancelled meanwhile.
        try:
            await asyncio.sleep(0)
        finally:
            self.commit()
            error = future.exception() if future.done() else None
        if error is not None:
            raise error

    def commit(self) -> None:
        """Commit what is queued now (the first writer of a turn calls it; a closing store too)."""
        queued, self._queued = self._queued, []
        if not queued:
            return
        try:
            with self._begin() as db:
                for write, _ in queued:
                    write(db)
        except Exception as exc:
            if len(queued) == 1:
                _settle(queued[0][1], exc)
                return
            for write, future in queued:
                self._alone(write, future)
        else:
            for _, future in queued:
                _settle(future, None)

    def _alone(self, write: Write, future: asyncio.Future[None]) -> None:
        try:
            self._now(write)
        except Exception as exc:
            _settle(future, exc)
        else:
            _settle(future, None)

    def _now(self, write: Write) -> None:
        """Run `write` in a transaction of its own."""
        with self._begin() as db:
            write(db)


def _settle(future: asyncio.Future[None], error: Exception | None) -> None:
    if future.done():  # its writer was cancelled
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
