"""`stream_events`: a run that reports its events to a callback, as an async generator of them.

The run goes on in a task of its own and hands each event over through a queue (a deque): the
consumer takes what is queued without waiting and sleeps only when the queue is empty, woken by
the next event. A run that does not wait (a scripted model, tools that return at once) queues all
its events in one go, each for the price of an append (an anyio memory object stream costs a
microsecond or two per event each way: most of what `agent.stream()` added per tool call, bench
TW-5).
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio

from .events import RunEvent
from .tools import Cancellation

__all__ = ["stream_events"]


class _Queue:
    """The run's events on their way to the consumer."""

    __slots__ = ("done", "events", "left", "wake")

    def __init__(self) -> None:
        self.events: deque[RunEvent] = deque()
        self.wake: anyio.Event | None = None
        """Set by the next event (or the run's end) while the consumer sleeps."""
        self.done = False
        """The run ended: nothing more comes."""
        self.left = False
        """The consumer left: events are dropped (the run still finishes and is stored)."""

    def put(self, event: RunEvent) -> None:
        if not self.left:
            self.events.append(event)
            self._wake()

    def end(self) -> None:
        self.done = True
        self._wake()

    def _wake(self) -> None:
        if (wake := self.wake) is not None:
            self.wake = None
            wake.set()


async def stream_events(
    run: Callable[[Callable[[RunEvent], None]], Awaitable[object]], cancellation: Cancellation
) -> AsyncGenerator[RunEvent]:
    """Run `run(emit)` in a task and yield each event it emits, as it happens (`Agent.stream()`).

    Closing the generator early cancels `cancellation` and lets the run finish (its calls end as
    Canceled and are stored). An exception of the run is re-raised here, as it is (no exception
    group).
    """
    queue = _Queue()
    failure: list[BaseException] = []

    async def produce() -> None:
        try:
            await run(queue.put)
        except Exception as exc:  # re-raised in the consumer, without an exception group
            failure.append(exc)
        finally:
            queue.end()

    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        events = queue.events
        try:
            while True:
                while events:
                    yield events.popleft()
                if queue.done:
                    break
                queue.wake = wake = anyio.Event()
                await wake.wait()
        except GeneratorExit:
            # The consumer left: cancel the run and let it store Canceled results, then stop.
            queue.left = True
            events.clear()
            cancellation.cancel("The event stream was closed")
            return
    if failure:
        raise failure[0]
