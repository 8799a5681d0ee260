"""The worker threads of sync tools: one call's hop, and one hop for the sync calls of a batch.

`run_sync(function, seconds, cancellation)` stands for `guard.guarded(to_thread.run_sync(function,
abandon_on_cancel=True), seconds, cancellation)`, which the plain path (trio) still runs, and gives
the same outcomes: the function's value, its exception, or `INTERRUPTED` when the deadline passes
or the cancellation fires first (the thread, which cannot be interrupted, is abandoned and its
late result dropped); a cancellation of the awaiting task from outside propagates.

Why not anyio's hop (on the 2-core machine, hop after hop: ≈ 90–115 µs CPU, against ≈ 40 for this
one; in the agent loop, guarded: ≈ 145 µs against ≈ 60; docs/benchmarks.md, "Sync tools"): it
passes through the loop once more for its checkpoint, enters a capacity limiter and a cancel scope,
and hands the job over through a `queue.Queue`; guarding it (`_fast.guarded`) then drives the
coroutine step by step and interrupts it with `task.cancel()`. Here the call is an asyncio future
that the worker's result resolves, and its deadline and cancellation resolve it with
`INTERRUPTED` (a `_fast._Deadlines` entry; nothing to uncancel). The function runs in a copy of the
caller's context (contextvars, tracing), in a thread anyio knows as its worker
(`anyio.from_thread` works in it, as in anyio's own).

**Batches.** `Gather` collects the sync calls of a batch that start together (the pipeline closes
it once every call of the batch had its first step): they run as one job, one after another in one
worker thread, and their results come back to the loop together (one wake-up). A call is never
held up long by another: while a job still has calls waiting, a loop timer looks every `SHARE_FOR`
seconds, and once a call has been running that long, the calls not started yet each get a thread
of their own and the results already there are delivered. Each call keeps its own deadline,
cancellation and result; one that is interrupted before its turn never runs.

Threads: at most `MAX_THREADS` run calls at once in the process (anyio's default limit, per loop
there); more jobs wait for one, and their calls' deadlines run meanwhile. An abandoned call keeps
its thread, and counts, until its function returns. A thread idle for `IDLE_FOR` seconds ends when
the next job is handed out. They are daemon threads: an abandoned call does not keep the process
from exiting.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import copy_context
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

from ._fast import deadlines_of, guarded
from .guard import INTERRUPTED, _Interrupted, asyncio_loop  # pyright: ignore[reportPrivateUsage]

if TYPE_CHECKING:
    import asyncio
    from contextlib import AbstractContextManager

    from .cancellation import Cancellation

__all__ = ["IDLE_FOR", "MAX_THREADS", "SHARE_FOR", "Gather", "run_sync"]

T = TypeVar("T")

MAX_THREADS: Final = 40
"""Calls running at once in worker threads (anyio's default `to_thread` limit); more jobs wait."""
SHARE_FOR: Final = 0.001
"""Seconds a call of a batch may keep the calls after it waiting before they get threads of their own."""
IDLE_FOR: Final = 10.0
"""Seconds a worker thread may wait for work before it ends (at the next job handed out)."""


class _Call:
    """One call of a sync function: its function, its context, and the future its result resolves."""

    __slots__ = ("context", "finished", "function", "future")

    def __init__(self, function: Callable[[], Any], future: asyncio.Future[Any]) -> None:
        self.function = function
        self.context = copy_context()
        self.future = future
        self.finished = False
        """Its deadline no longer applies (a `_fast._Deadlines` entry)."""

    def cancel(self) -> None:
        """End the wait with `INTERRUPTED` (the deadline passed, or the cancellation fired)."""
        if not self.future.done():
            self.future.set_result(INTERRUPTED)


class _Job:
    """Calls run one after another in one worker thread; their results go back together."""

    __slots__ = ("done", "loop", "over", "running_since", "timer", "waiting")

    def __init__(self, loop: asyncio.AbstractEventLoop, calls: list[_Call]) -> None:
        self.loop = loop
        self.waiting = deque(calls)
        """Calls not started yet (under `_lock`)."""
        self.done: list[tuple[_Call, Any, BaseException | None]] = []
        """Finished calls whose results were not delivered yet (under `_lock`)."""
        self.running_since = 0.0
        """`time.monotonic()` when the running call started; 0 between calls."""
        self.over = False
        self.timer: asyncio.TimerHandle | None = None
        """Looks whether a call keeps the others waiting (`_share`), while two or more wait."""


class _Worker:
    """A worker thread: it sleeps on `wake` until it is handed a job (None: end)."""

    __slots__ = ("idle_since", "job", "wake")

    def __init__(self, job: _Job) -> None:
        self.job: _Job | None = job
        self.wake = threading.Lock()
        self.wake.acquire()
        self.idle_since = 0.0


_lock = threading.Lock()
"""Guards the pool and the jobs' `waiting` and `done` (held for a few operations, never while a call runs)."""
_idle: list[_Worker] = []
"""Idle workers, the longest idle first (a job goes to the last one: its stack is warm)."""
_queued: deque[_Job] = deque()
"""Jobs waiting for a thread (all `MAX_THREADS` busy)."""
_threads = 0
"""Worker threads alive."""
_claim: Callable[[asyncio.AbstractEventLoop], AbstractContextManager[Any]] | None = None
"""Makes the current thread anyio's worker for a loop (`anyio.from_thread` then works in it)."""


def _reset_after_fork() -> None:
    # The child has none of the parent's threads: a job handed to one would never run.
    global _lock, _threads
    _lock = threading.Lock()
    _idle.clear()
    _queued.clear()
    _threads = 0


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX
    os.register_at_fork(after_in_child=_reset_after_fork)


def _claimer() -> Callable[[asyncio.AbstractEventLoop], AbstractContextManager[Any]] | None:
    """The way anyio makes a thread its worker, or None if this anyio has none (then: the plain path)."""
    global _claim
    if _claim is None:
        try:
            from anyio._backends._asyncio import AsyncIOBackend
            from anyio._core._eventloop import claim_worker_thread, threadlocals
        except ImportError:  # pragma: no cover - anyio moved them
            return None

        @contextmanager
        def claim(loop: asyncio.AbstractEventLoop) -> Generator[None]:
            with claim_worker_thread(AsyncIOBackend, loop):
                # No anyio cancel scope waits on these calls: `from_thread.check_cancelled()` does not
                # raise (a tool checks `ToolContext.cancelled`, which the deadline sets).
                threadlocals.current_cancel_scope = None
                try:
                    yield
                finally:
                    del threadlocals.current_cancel_scope

        _claim = claim
    return _claim


class Gather:
    """The sync calls of a batch that start together, run as one job (see the module's docstring).

    Create one per batch on the loop's thread, give it to the batch's calls, and `close()` it once
    every call had its first step: the calls it holds then start. A call that comes after `close()`
    runs on its own.
    """

    __slots__ = ("_calls", "_loop", "_open")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._calls: list[_Call] = []
        self._open = True

    def _add(self, call: _Call) -> bool:
        if not self._open:
            return False
        self._calls.append(call)
        return True

    def close_soon(self) -> None:
        """`close()` once the callbacks the loop has ready now ran (e.g. the first steps of tasks just created)."""
        self._loop.call_soon(self.close)

    def close(self) -> None:
        """Start the calls gathered so far, as one job; later calls run on their own (idempotent)."""
        if not self._open:
            return
        self._open = False
        calls = [call for call in self._calls if not call.future.done()]
        self._calls = []
        if calls:
            _submit(_Job(self._loop, calls))


async def run_sync(
    function: Callable[[], T],
    seconds: float | None,
    cancellation: Cancellation | None = None,
    gather: Gather | None = None,
) -> T | Literal[_Interrupted.INTERRUPTED]:
    """Run `function` in a worker thread; `INTERRUPTED` if `seconds` pass or `cancellation` fires first.

    With `gather`, the call waits for the gather's `close()` to start with the others.
    """
    loop = asyncio_loop()
    if loop is None or (_claim is None and _claimer() is None):  # not on asyncio (trio): anyio's hop
        from anyio import to_thread

        return await guarded(to_thread.run_sync(function, abandon_on_cancel=True), seconds, cancellation)
    call = _Call(function, loop.create_future())
    deadlines = None
    if seconds is not None:
        deadlines = deadlines_of(loop)
        deadlines.add(loop.time() + seconds, call)
    if cancellation is not None:
        cancellation.attach(call)  # canceled already: the call is over before it starts
    # Handed over last: a thread woken earlier would only wait for the interpreter lock.
    if not call.future.done() and (gather is None or not gather._add(call)):  # pyright: ignore[reportPrivateUsage]
        _submit(_Job(loop, [call]))
    try:
        return await call.future
    finally:
        if cancellation is not None:
            cancellation.detach(call)
        if deadlines is not None:
            deadlines.finish(call)


def _submit(job: _Job) -> None:
    """Hand `job` to an idle worker, a new one, or the queue (on the loop's thread)."""
    global _threads
    worker = None
    stale: list[_Worker] = []
    with _lock:
        if _idle:
            worker = _idle.pop()
            now = time.monotonic()
            while _idle and now - _idle[0].idle_since >= IDLE_FOR:
                stale.append(_idle.pop(0))
            _threads -= len(stale)
        elif _threads < MAX_THREADS:
            _threads += 1
        else:  # a worker takes it when it is done with its own
            _queued.append(job)
            return
    for old in stale:
        old.job = None
        old.wake.release()
    if worker is None:
        worker = _Worker(job)
        threading.Thread(target=_serve, args=(worker,), name="toolwire worker", daemon=True).start()
    else:
        worker.job = job
        worker.wake.release()
    if len(job.waiting) > 1:
        job.timer = job.loop.call_later(SHARE_FOR, _share, job)


def _serve(worker: _Worker) -> None:
    """A worker thread's life: run the jobs it is handed, then those queued, then wait to be woken."""
    job = worker.job
    claimed: tuple[asyncio.AbstractEventLoop, AbstractContextManager[Any]] | None = None
    while job is not None:
        if claimed is None or claimed[0] is not job.loop:  # anyio's worker for this loop, until another's job comes
            if claimed is not None:
                claimed[1].__exit__(None, None, None)
            assert _claim is not None
            claimed = (job.loop, _claim(job.loop))
            claimed[1].__enter__()
        _run(job)
        # Idle (or on to a queued job) before the results are delivered: the loop's next job finds this thread.
        with _lock:
            job.over = True
            done, job.done = job.done, []
            follow = _queued.popleft() if _queued else None
            if follow is None:
                worker.job = None
                worker.idle_since = time.monotonic()
                _idle.append(worker)
        if done:
            try:
                job.loop.call_soon_threadsafe(_deliver, done, job)
            except RuntimeError:  # the loop is closed: no one waits any more
                pass
        del done
        if follow is None:
            worker.wake.acquire()
            follow = worker.job
        job = follow
    if claimed is not None:
        claimed[1].__exit__(None, None, None)


def _run(job: _Job) -> None:
    """Run the calls of `job` one after another (their results wait in `job.done`)."""
    while True:
        with _lock:
            if not job.waiting:
                break
            call = job.waiting.popleft()
        if call.future.done():  # interrupted (or its waiter cancelled) before it started
            continue
        job.running_since = time.monotonic()
        exc: BaseException | None = None
        try:
            value = call.context.run(call.function)
        except BaseException as raised:  # delivered to the caller, which decides
            value, exc = None, raised
        job.running_since = 0.0
        with _lock:
            job.done.append((call, value, exc))
        del value, exc


def _deliver(done: list[tuple[_Call, Any, BaseException | None]], job: _Job | None = None) -> None:
    """Resolve the futures of finished calls (on the loop's thread); an interrupted one keeps its `INTERRUPTED`.

    `job`, when it is over: its timer has nothing left to look at.
    """
    if job is not None and job.timer is not None:
        job.timer.cancel()
        job.timer = None
    for call, value, exc in done:
        future = call.future
        if future.done():
            continue
        if exc is None:
            future.set_result(value)
        elif isinstance(exc, StopIteration):  # a future cannot hold one
            error = RuntimeError("the tool raised StopIteration")
            error.__cause__ = exc
            future.set_exception(error)
        else:
            future.set_exception(exc)


def _share(job: _Job) -> None:
    """The job's timer: once a call has been running `SHARE_FOR`, the calls after it get threads of their own."""
    with _lock:
        if job.over or not job.waiting:
            return
        since = job.running_since
        if not since or time.monotonic() - since < SHARE_FOR:
            stuck = None  # not started yet (its thread waits for the interpreter), or between calls
        else:
            stuck = (job.done, list(job.waiting))
            job.done = []
            job.waiting.clear()
    if stuck is None:  # look again
        job.timer = job.loop.call_later(SHARE_FOR, _share, job)
        return
    job.timer = None
    done, waiting = stuck
    _deliver(done)
    for call in waiting:
        _submit(_Job(job.loop, [call]))
