"""`Admission`: how many runs a server drives at once, and the queue of those that wait their turn.

```
start ──► a slot free and nobody waiting? ──yes──► run ──► leave: the first waiting run takes the slot
              │ no
              ▼
          queue (FIFO) ──► RunStatus "queued", position 1, 2, … (when it changes, at most every `interval` s)
```

All runs of a server share one event loop and one store. Past the point where that loop is busy all
the time, more runs at once bring no more turns per second, only longer runs: every run's turns
interleave with every other's, so each run's wall time grows with the number of runs in progress
(measured: 132× at 200 conversations), and no client is told why. With a limit the admitted runs go
at full speed, the others wait in arrival order, and their clients are told their place.

A UserMessage that finds every slot taken and the queue full is refused before anything is stored
(`ToolwireServer._act`: ErrorMessage 503, like 105 for a conversation whose run is in progress).
Runs resumed without a prompt (after a restart, or taken over from a replica that died) wait in the
same queue but are never refused: their prompt is stored already and nobody would send it again.
A waiting run that is stopped (ControlStop, a forced deletion) leaves the queue and ends at once,
canceled, without a slot (`withdraw`); one whose server stops (`park`) leaves it and is resumed by
the next process. A client that disconnects leaves its run in the queue: runs do not depend on
their connection, and a client that comes back is told the current position.

There is no limit by default. A run holds its slot for its whole life, also while it waits for a
client tool's result or a person's consent, which costs the server nothing: a limit of a few runs
per CPU would turn away clients of a server whose runs mostly wait (2,100 conversations whose
client tool calls wait at once are served today, tests/server/test_floods.py). Set `max_runs` for
runs that keep the server busy (a fast local model, heavy server tools, scripted load), near where
turns per second stop growing: bench/admission_bench.py finds it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from ..errors import UsageError

__all__ = ["DEFAULT_RUN_QUEUE", "MAX_RUNS", "STATUS_INTERVAL", "Admission", "Ticket"]

MAX_RUNS: Final = None
"""Runs in progress at once by default: no limit (see the module's docstring for why)."""
DEFAULT_RUN_QUEUE: Final = 256
"""Runs that may wait for a slot by default; a prompt beyond is refused (503)."""
STATUS_INTERVAL: Final = 1.0
"""Seconds between two positions told to a waiting run's client, at least."""


class Ticket:
    """One run's place: in the queue, then holding a slot (or let through without one, see `withdraw`)."""

    __slots__ = ("admitted", "holds")

    def __init__(self) -> None:
        self.admitted = anyio.Event()
        """Set once the run may start."""
        self.holds = False
        """The run holds one of the slots (False while it waits, and for a run let through without one)."""


class Admission:
    """The run slots of one server and the FIFO queue of runs waiting for one.

    Args:
        max_runs: Runs in progress at most; None: no limit (and no queue).
        queue: Runs that may wait for a slot; a prompt beyond is refused (`full`). 0: none wait.
        interval: Seconds between two positions told to a waiting run's client, at least.

    Raises:
        UsageError: `max_runs` is not positive, or `queue` is negative.
    """

    def __init__(
        self, max_runs: int | None, queue: int = DEFAULT_RUN_QUEUE, *, interval: float = STATUS_INTERVAL
    ) -> None:
        if max_runs is not None and max_runs < 1:
            raise UsageError(f"max_runs must be a positive number (or None: no limit), not {max_runs}")
        if queue < 0:
            raise UsageError(f"the run queue cannot hold a negative number of runs ({queue})")
        self.max_runs = max_runs
        self.queue = queue
        self.interval = interval
        self.running = 0
        """Runs holding a slot."""
        self._waiting: deque[Ticket] = deque()
        self._moves = 0
        self._moved = anyio.Event()
        """Set (and replaced) whenever the queue moves."""

    @property
    def waiting(self) -> int:
        """Runs in the queue."""
        return len(self._waiting)

    @property
    def full(self) -> bool:
        """True when a new prompt must be refused: every slot is taken and the queue is full."""
        limit = self.max_runs
        return limit is not None and self.running >= limit and len(self._waiting) >= self.queue

    def enter(self) -> Ticket:
        """Take a slot for a run about to start, or a place at the end of the queue (`wait` for the turn).

        It never refuses: check `full` first for a run that may be refused.
        """
        ticket = Ticket()
        limit = self.max_runs
        if limit is None or (self.running < limit and not self._waiting):
            self._admit(ticket)
        else:
            self._waiting.append(ticket)
        return ticket

    def position(self, ticket: Ticket) -> int | None:
        """The ticket's place in the queue (1: the next to start); None when it does not wait."""
        if ticket.admitted.is_set():
            return None
        try:
            return self._waiting.index(ticket) + 1
        except ValueError:
            return None

    async def wait(self, ticket: Ticket, report: Callable[[int], Awaitable[None]]) -> None:
        """Wait until the ticket's run may start, calling `report(position)` when the position changed.

        The first position is reported at once, the next ones when the queue moved, at most every
        `interval` seconds. Cancelled (the server stops), call `leave` all the same.
        """
        reported: int | None = None
        while not ticket.admitted.is_set():
            moves = self._moves
            position = self.position(ticket)
            if position is not None and position != reported:
                await report(position)
                reported = position
                with anyio.move_on_after(self.interval):  # a bounded rate, but not later than the start
                    await ticket.admitted.wait()
            if moves == self._moves and not ticket.admitted.is_set():
                await self._moved.wait()

    def withdraw(self, ticket: Ticket) -> None:
        """Let a waiting run through without a slot: it was stopped, and ends at once (running no turn)."""
        if ticket in self._waiting:
            self._waiting.remove(ticket)
            ticket.admitted.set()
            self._move()

    def leave(self, ticket: Ticket) -> None:
        """The ticket's run ended, or stopped waiting (cancelled): free its slot or its place."""
        if ticket.holds:
            ticket.holds = False
            self.running -= 1
        elif ticket in self._waiting:
            self._waiting.remove(ticket)
        else:
            return
        limit = self.max_runs
        while self._waiting and (limit is None or self.running < limit):
            self._admit(self._waiting.popleft())
        self._move()

    def _admit(self, ticket: Ticket) -> None:
        ticket.holds = True
        self.running += 1
        ticket.admitted.set()

    def _move(self) -> None:
        self._moves += 1
        self._moved.set()
        self._moved = anyio.Event()
