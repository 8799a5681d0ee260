"""`ThreadTurns`: runs of one thread take turns; runs of different threads proceed concurrently."""

from __future__ import annotations

from collections.abc import Coroutine
from types import TracebackType
from typing import Any

import anyio

__all__ = ["ThreadTurn", "ThreadTurns"]


class ThreadTurns:
    """The queue of runs waiting for each thread; an `Agent` holds one.

    A thread's entry in `_waiting` is the queue of runs waiting for it: an empty list while one
    run works alone (no lock object per run: a parked run stays small). A thread without runs
    has no entry.
    """

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[str, list[anyio.Event]] = {}

    def turn(self, thread_id: str) -> ThreadTurn:
        """Let one run at a time work on a thread (runs of other threads are not affected).

        `async with turns.turn(thread_id):` waits for the runs queued before this one; the next in
        line goes on when the block exits.
        """
        return ThreadTurn(self, thread_id)

    async def take(self, thread_id: str) -> None:
        """Wait for the thread's turn (`ThreadTurn`'s entry)."""
        waiting = self._waiting.get(thread_id)
        if waiting is None:
            self._waiting[thread_id] = []
            return
        turn = anyio.Event()
        waiting.append(turn)
        try:
            await turn.wait()
        except BaseException:
            if turn.is_set():
                self.pass_on(thread_id)  # handed the turn while being cancelled: hand it on
            else:
                waiting.remove(turn)
            raise

    def pass_on(self, thread_id: str) -> None:
        """End the thread's turn: the next run in line goes on (`ThreadTurn`'s exit)."""
        waiting = self._waiting[thread_id]
        if waiting:
            waiting.pop(0).set()
        else:
            del self._waiting[thread_id]


class ThreadTurn:
    """One run's turn on a thread, as an async context manager (`ThreadTurns.turn`).

    A small class rather than `contextlib.asynccontextmanager`: a run holds its turn for its whole
    life, and a generator-based manager costs an async generator (tracked by asyncio) and ≈ 3 µs
    per run, and its frame stays in the memory of every parked run.
    """

    __slots__ = ("_thread_id", "_turns")

    def __init__(self, turns: ThreadTurns, thread_id: str) -> None:
        self._turns = turns
        self._thread_id = thread_id

    def __aenter__(self) -> Coroutine[Any, Any, None]:
        return self._turns.take(self._thread_id)  # (no coroutine of its own in between)

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._turns.pass_on(self._thread_id)
