"""Run a coroutine under a deadline and a `Cancellation`, paying for them only if it waits.

Most tool calls and scripted model steps never wait: they finish in their first step. A cancel
scope with a deadline costs ~10 µs on asyncio (a timer, the scope's bookkeeping), more than the
rest of a call, so `guarded()` runs the coroutine's first step directly and only arms the
deadline and the cancellation when the coroutine suspends. Nothing can interrupt a coroutine
that has not suspended, so this changes no outcome.

Once the coroutine has suspended it cannot move under a cancel scope entered later (a scope the
coroutine itself opened in its first step would then close out of order), so on asyncio the rest
is driven by `_Drive`: it passes every step through to the task, and interrupts the coroutine the
way `asyncio.timeout` does: `task.cancel()` while the task waits in the drive, `task.uncancel()`
when the coroutine is done, so the caller's own cancellations (anyio's scopes included) are told
apart and propagate. Like `asyncio.timeout`, the interruption is delivered once: a coroutine that
catches `CancelledError` and goes on is let go on. Off asyncio (trio), it is an anyio cancel
scope.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from anyio import CancelScope, current_time

from .cancellation import Cancellation

if TYPE_CHECKING:
    import asyncio

__all__ = ["INTERRUPTED", "asyncio_loop", "guarded", "resume"]

T = TypeVar("T")


class _Interrupted(enum.Enum):
    INTERRUPTED = "interrupted"


INTERRUPTED: Final = _Interrupted.INTERRUPTED
"""What `guarded()` returns when the deadline passed or the cancellation fired first."""


async def guarded(
    coroutine: Coroutine[Any, Any, T], seconds: float | None, cancellation: Cancellation | None = None
) -> T | Literal[_Interrupted.INTERRUPTED]:
    """Await `coroutine`; `INTERRUPTED` if `seconds` pass or `cancellation` fires first.

    The coroutine's own exceptions propagate. A cancellation from outside (the caller's cancel
    scope, a cancelled task) propagates as well: only this call's deadline and `cancellation`
    end it with `INTERRUPTED`.
    """
    import asyncio  # here, not at the top: `import toolwire` does not load asyncio

    loop = asyncio_loop()
    if loop is None:  # not on asyncio: trio
        return await _scoped(coroutine, seconds, cancellation)
    deadline = None if seconds is None else loop.time() + seconds
    try:
        step = coroutine.send(None)
    except StopIteration as done:
        return done.value
    task = asyncio.current_task(loop)
    assert task is not None
    cancelling = task.cancelling()
    drive = _Drive(coroutine, step, task)
    timer = None if deadline is None else loop.call_at(deadline, drive.cancel)
    if cancellation is not None:
        cancellation.attach(drive)
    try:
        return await drive
    except asyncio.CancelledError:
        # Ours if we asked for it and nobody else did (the protocol of `asyncio.timeout`).
        if drive.requested:
            drive.requested = False
            if task.uncancel() <= cancelling:
                return INTERRUPTED
        raise
    finally:
        if cancellation is not None:
            cancellation.detach(drive)
        if timer is not None:
            timer.cancel()
        if drive.requested:  # asked for, and the coroutine finished anyway: take the request back
            task.uncancel()


def resume(coroutine: Coroutine[Any, Any, T], step: Any) -> Awaitable[T]:
    """Await the rest of `coroutine`, whose first step (`coroutine.send(None)`) yielded `step`."""
    return _Drive(coroutine, step, None)


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None on another event loop (trio)."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _scoped(
    coroutine: Coroutine[Any, Any, T], seconds: float | None, cancellation: Cancellation | None
) -> T | Literal[_Interrupted.INTERRUPTED]:
    deadline = float("inf") if seconds is None else current_time() + seconds
    with CancelScope(deadline=deadline) as scope:
        if cancellation is not None:
            cancellation.attach(scope)
        try:
            return await coroutine
        finally:
            if cancellation is not None:
                cancellation.detach(scope)
    if scope.cancelled_caught:
        return INTERRUPTED
    raise AssertionError("unreachable: a cancel scope that did not cancel returned no value")  # pragma: no cover


class _Drive:
    """The rest of a suspended coroutine, awaited step by step; `cancel()` interrupts it."""

    __slots__ = ("_coroutine", "_running", "_step", "_task", "fired", "requested")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], step: Any, task: asyncio.Task[Any] | None) -> None:
        self._coroutine = coroutine
        self._step = step
        self._task = task
        self._running = False
        self.fired = False
        self.requested = False
        """True once `task.cancel()` was called for this interruption (`guarded` uncancels it)."""

    def cancel(self) -> None:
        """Interrupt the coroutine where it waits (or where it next waits, if it runs now)."""
        if self.fired:
            return
        self.fired = True
        if not self._running:
            self._request()

    def _request(self) -> None:
        # Called only while the task waits in `__await__` (or is about to): the CancelledError
        # the task raises lands there, never after `guarded` has returned.
        self.requested = True
        assert self._task is not None, "resume() is not interruptible"
        self._task.cancel()

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, step = self._coroutine, self._step
        self._step = None
        while True:
            if self.fired and not self.requested:
                self._request()
            advance: Callable[[Any], Any]
            try:
                value: Any = yield step
                advance = coroutine.send
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # thrown in by the task: a cancellation
                advance, value = coroutine.throw, exc
            self._running = True
            try:
                step = advance(value)
            except StopIteration as done:
                return done.value
            finally:
                self._running = False
