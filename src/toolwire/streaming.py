"""`stream_events`: a run that reports its events to a callback, as an async generator of them."""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Awaitable, Callable

import anyio

from .events import RunEvent
from .tools import Cancellation

__all__ = ["stream_events"]


async def stream_events(
    run: Callable[[Callable[[RunEvent], None]], Awaitable[object]], cancellation: Cancellation
) -> AsyncGenerator[RunEvent]:
    """Run `run(emit)` in a task and yield each event it emits, as it happens (`Agent.stream()`).

    Closing the generator early cancels `cancellation` and lets the run finish (its calls end as
    Canceled and are stored). An exception of the run is re-raised here, as it is (no exception
    group).
    """
    send, receive = anyio.create_memory_object_stream[RunEvent](math.inf)
    failure: list[BaseException] = []

    def emit(event: RunEvent) -> None:
        try:
            send.send_nowait(event)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the consumer left; the run still finishes and is stored

    async def produce() -> None:
        with send:
            try:
                await run(emit)
            except Exception as exc:  # re-raised in the consumer, without an exception group
                failure.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        try:
            with receive:
                async for event in receive:
                    yield event
                    # Hand over what is already queued without a checkpoint per event.
                    while True:
                        try:
                            queued = receive.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        yield queued
        except GeneratorExit:
            # The consumer left: cancel the run and let it store Canceled results, then stop.
            cancellation.cancel("The event stream was closed")
            return
    if failure:
        raise failure[0]
