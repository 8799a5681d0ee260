"""`ThreadTurns`: runs of one thread take turns; runs of different threads proceed concurrently."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio

__all__ = ["ThreadTurns"]


class ThreadTurns:
    """The queue of runs waiting for each thread; an `Agent` holds one.

    A thread's entry in `_waiting` is the queue of runs waiting for it: an empty list while one
    run works alone (no lock object per run: a parked run stays small). A thread without runs
    has no entry.
    """

    __slots__ = ("_waiting",)

    def __init__(self) -> None:
        self._waiting: dict[str, list[anyio.Event]] = {}

    @asynccontextmanager
    async def turn(self, thread_id: str) -> AsyncGenerator[None]:
        """Let one run at a time work on a thread (runs of other threads are not affected).

        Waits for the runs queued before this one; the next in line goes on when the block exits.
        """
        waiting = self._waiting.get(thread_id)
        if waiting is None:
            self._waiting[thread_id] = []
        else:
            turn = anyio.Event()
            waiting.append(turn)
            try:
                await turn.wait()
            except BaseException:
                if turn.is_set():
                    self._pass_turn(thread_id)  # handed the turn while being cancelled: hand it on
                else:
                    waiting.remove(turn)
                raise
        try:
            yield
        finally:
            self._pass_turn(thread_id)

    def _pass_turn(self, thread_id: str) -> None:
        waiting = self._waiting[thread_id]
        if waiting:
            waiting.pop(0).set()
        else:
            del self._waiting[thread_id]
