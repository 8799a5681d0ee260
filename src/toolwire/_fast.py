"""The fast paths: every trick that makes the hot path cheaper, each with a plain equivalent.

The runtime builds messages and ledger entries, guards a call and runs a batch on every tool call;
on CPython the obvious code for these costs more than the rest of a call. Each trick lives here,
next to the plain code it stands for, and `tests/test_fast_paths.py` proves that both give the
same results:

- `quick_init` stands for the `__init__` that `dataclasses` writes. A frozen class forbids
  `self.x = v`, so `dataclasses` sets each field with `object.__setattr__` by name; `quick_init`
  lets the instance pass for a plain twin class with the same slots while its fields are stored
  (plain stores), then gives it back its class, or (for fewer than four fields) sets the slots
  through their member descriptors, bound once. A 12-field `ToolResult`: ≈ 1.6 µs instead of 2.3,
  a 10-field `LedgerEntry` ≈ 1.5 instead of 1.8 µs on CPython 3.11 (the dataclass's own: more).
- `maker` stands for calling such a dataclass with a few fields by name, the others left to their
  defaults, for the instances the hot path builds (a Success `ToolResult` per call: ≈ 0.5 µs
  instead of 1.6): the instance is built as the twin, without `__init__`.
- `replacer` stands for `dataclasses.replace` of one field of such a dataclass (`ToolResult`'s
  call id, on every result a tool or a filter returned): it copies the slots the same way and
  skips `__post_init__`, which checks other fields (≈ 4× faster than `replace`).
- `guarded` stands for `guard.guarded` (an anyio cancel scope with a deadline, ~10 µs on asyncio):
  it runs the coroutine's first step directly and arms the deadline and the cancellation only if
  the coroutine suspends. Nothing can interrupt a coroutine that has not suspended, so no outcome
  changes. Once suspended, the coroutine cannot move under a cancel scope entered later (a scope
  it opened in its first step would then close out of order), so on asyncio the rest is driven by
  `_Drive`: it passes every step through to the task, and interrupts the coroutine the way
  `asyncio.timeout` does (`task.cancel()` while the task waits in the drive, `task.uncancel()`
  when the coroutine is done), so the caller's own cancellations (anyio's scopes included) are
  told apart and propagate. Like `asyncio.timeout`, the interruption is delivered once: a
  coroutine that catches `CancelledError` and goes on is let go on. The deadlines of a loop's
  calls share one loop timer (`_Deadlines`), armed for the earliest: a call that waits costs a
  heap push instead of a `TimerHandle` armed and cancelled (≈ 6 µs on CPython 3.11).
- `together` stands for an anyio task group that starts each item's coroutine: on asyncio each
  starts in the current task, and only from the first one that waits do the rest get tasks (in
  one `asyncio.TaskGroup`; an anyio task group costs ~11 µs more per task).

Off asyncio (trio) the plain versions run. `toolwire._workers.run_sync`, the worker-thread hop of
sync tools, is a trick of the same kind, in a module of its own.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from heapq import heapify, heappop, heappush
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from . import guard
from .guard import INTERRUPTED, _Interrupted, asyncio_loop  # pyright: ignore[reportPrivateUsage]

if TYPE_CHECKING:
    import asyncio

    from .cancellation import Cancellation

__all__ = ["deadlines_of", "guarded", "maker", "quick_init", "replacer", "resume", "together"]

T = TypeVar("T")
X = TypeVar("X")


# -- quick_init --------------------------------------------------------------------------------


def quick_init(cls: type[T]) -> type[T]:
    """Replace the `__init__` of frozen, slotted dataclass `cls` with an equivalent, faster one."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: quick_init takes a frozen, slotted dataclass")
    fields = dataclasses.fields(cls)  # pyright: ignore[reportArgumentType]
    twin = _twin(cls) if len(fields) >= _TWIN_FROM else None
    scope: dict[str, Any] = {
        "_MISSING": dataclasses.MISSING,
        "_cls": cls,
        "_twin": twin,
        "_become": object.__setattr__,
        "_type_of": type,
    }
    positional: list[str] = []
    keyword: list[str] = []
    values: list[str] = []
    by_descriptor: list[str] = []
    by_store: list[str] = []
    for field in fields:
        name = field.name
        scope[f"_set_{name}"] = getattr(cls, name).__set__
        default = ""
        if field.default is not dataclasses.MISSING:
            scope[f"_default_{name}"] = field.default
            default = f"=_default_{name}"
            if not field.init:
                values.append(f"    {name} = _default_{name}")
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{name}"] = field.default_factory
            default = "=_MISSING"
            factory = f"_factory_{name}()"
            values.append(
                f"    {name} = {factory} if {name} is _MISSING else {name}" if field.init else f"    {name} = {factory}"
            )
        if field.init:
            (keyword if field.kw_only else positional).append(f"{name}{default}")
        by_descriptor.append(f"_set_{name}(self, {name})")
        by_store.append(f"self.{name} = {name}")
    body = values
    if twin is None:
        body += [f"    {line}" for line in by_descriptor]
    else:  # the twin's plain stores, then back to `cls` (a subclass, another layout: slot by slot)
        body += ["    if _type_of(self) is _cls:", "        _become(self, '__class__', _twin)"]
        body += [f"        {line}" for line in by_store]
        body += ["        self.__class__ = _cls", "    else:"]
        body += [f"        {line}" for line in by_descriptor]
    if hasattr(cls, "__post_init__"):  # as the dataclass's own: after the fields are set
        body.append("    self.__post_init__()")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, scope)  # the way dataclasses builds its own __init__
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init
    return cls


_TWIN_FROM = 4
"""Fields from which a twin pays (its two class switches cost about three slot writes)."""


def _twin(cls: type) -> type | None:
    """A plain class with the very slots of `cls`, whose instances may become `cls` (None if they may not).

    Writing a slot through the instance (`self.x = v`) is several times faster than through its
    member descriptor, but a frozen class forbids it: `quick_init` fills the instance as its twin,
    then gives it back its class (CPython lets `__class__` change between classes of the same
    layout: the same base, the same slots).
    """
    if cls.__bases__ != (object,):
        return None
    twin = type(f"_{cls.__name__}Slots", (), {"__slots__": cls.__dict__["__slots__"]})
    try:
        object.__setattr__(object.__new__(twin), "__class__", cls)
    except TypeError:  # pragma: no cover - another layout after all
        return None
    return twin


def maker(cls: type[T], *names: str) -> Callable[..., T]:
    """`make(*values)`: `cls(**dict(zip(names, values)))`, faster, for the instances a hot path builds.

    `cls` is a frozen, slotted dataclass (a direct subclass of `object`) whose other fields have
    defaults. The instance is built as `quick_init`'s twin, its fields stored, then given its
    class: no `__init__`, so no keyword parsing and no `__post_init__` (the caller's values
    must pass it, e.g. a Success `ToolResult`: its check is for the other outcomes).
    """
    twin = _twin(cls)
    if twin is None:
        raise TypeError(f"{cls.__name__}: maker takes a frozen, slotted dataclass based on object")
    fields = {field.name: field for field in dataclasses.fields(cls)}  # pyright: ignore[reportArgumentType]
    if unknown := [name for name in names if name not in fields]:
        raise TypeError(f"{cls.__name__} has no field {unknown[0]!r}")
    scope: dict[str, Any] = {"_cls": cls, "_twin": twin, "_new": object.__new__}
    body = [f"def make({', '.join(names)}):", "    self = _new(_twin)"]
    for name, field in fields.items():
        if name in names:
            value = name
        elif field.default is not dataclasses.MISSING:
            scope[f"_default_{name}"] = field.default
            value = f"_default_{name}"
        elif field.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{name}"] = field.default_factory
            value = f"_factory_{name}()"
        else:
            raise TypeError(f"{cls.__name__}.{name} has no default: name it")
        body.append(f"    self.{name} = {value}")
    body += ["    self.__class__ = _cls", "    return self"]
    exec("\n".join(body) + "\n", scope)  # as `quick_init`
    make = scope["make"]
    make.__qualname__ = f"maker.<{cls.__qualname__}({', '.join(names)})>"
    return make


def replacer(cls: type[T], name: str) -> Callable[[T, Any], T]:
    """`replace(instance, value)`: `dataclasses.replace(instance, **{name: value})`, faster.

    `cls` is a frozen, slotted dataclass whose `__post_init__` (if any) does not check field
    `name`: the copy's other fields passed it already, so it is not run again. An instance of a
    subclass is copied by `dataclasses.replace`.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"{cls.__name__}: replacer takes a frozen, slotted dataclass")
    names = [field.name for field in dataclasses.fields(cls)]  # pyright: ignore[reportArgumentType]
    if name not in names:
        raise TypeError(f"{cls.__name__} has no field {name!r}")
    scope: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_replace": dataclasses.replace}
    body = [
        "def replace(instance, value):",
        "    if type(instance) is not _cls:",
        f"        return _replace(instance, {name}=value)",
        "    new = _new(_cls)",
    ]
    for field_name in names:
        scope[f"_set_{field_name}"] = getattr(cls, field_name).__set__
        value = "value" if field_name == name else f"instance.{field_name}"
        body.append(f"    _set_{field_name}(new, {value})")
    body.append("    return new")
    exec("\n".join(body) + "\n", scope)  # as `quick_init`
    replace = scope["replace"]
    replace.__qualname__ = f"replacer.<{cls.__qualname__}.{name}>"
    return replace


# -- guarded -----------------------------------------------------------------------------------


async def guarded(
    coroutine: Coroutine[Any, Any, T], seconds: float | None, cancellation: Cancellation | None = None
) -> T | Literal[_Interrupted.INTERRUPTED]:
    """`guard.guarded()`, paying for the deadline and the cancellation only if the coroutine waits."""
    loop = asyncio_loop()
    if loop is None:  # not on asyncio (trio): the plain version
        return await guard.guarded(coroutine, seconds, cancellation)
    deadline = None if seconds is None else loop.time() + seconds
    try:
        step = coroutine.send(None)
    except StopIteration as done:
        return done.value
    import asyncio  # here, not at the top: `import toolwire` does not load asyncio (nor a call that never waits)

    task = asyncio.current_task(loop)
    assert task is not None
    cancelling = task.cancelling()
    drive = _Drive(coroutine, step, task)
    deadlines = None
    if deadline is not None:
        deadlines = deadlines_of(loop)
        deadlines.add(deadline, drive)
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
        if deadlines is not None:
            deadlines.finish(drive)
        if drive.requested:  # asked for, and the coroutine finished anyway: take the request back
            task.uncancel()


def deadlines_of(loop: asyncio.AbstractEventLoop) -> _Deadlines:
    """The deadlines of `loop`'s guarded calls (one loop runs per thread at a time)."""
    deadlines = _per_thread.deadlines
    if deadlines is None or deadlines.loop is not loop:
        deadlines = _per_thread.deadlines = _Deadlines(loop)
    return deadlines


def resume(coroutine: Coroutine[Any, Any, T], step: Any) -> Awaitable[T]:
    """Await the rest of `coroutine`, whose first step (`coroutine.send(None)`) yielded `step`."""
    return _Drive(coroutine, step, None)


async def together(
    run: Callable[[X, Any], Coroutine[Any, Any, None]],
    items: Sequence[X],
    extra: Any,
    started: Callable[[], object] | None = None,
) -> None:
    """Await `run(item, extra)` for every item, concurrently: an anyio task group's `start_soon` for each.

    `extra` is passed as such, not bound in a `partial`: a batch's calls are the hot path.
    `started`, on asyncio, is called once every item is started (its task created) and before any
    waits, if one does: a callback it schedules with `call_soon` runs after each item's first step.
    """
    if asyncio_loop() is None:  # not on asyncio (trio): the plain version
        from anyio import create_task_group

        async with create_task_group() as group:
            for item in items:
                group.start_soon(run, item, extra)
        return
    for position, item in enumerate(items):
        running = run(item, extra)
        try:
            step = running.send(None)
        except StopIteration:
            continue  # finished without waiting
        import asyncio  # loaded: an asyncio loop runs; not at toolwire's import

        async with asyncio.TaskGroup() as tasks:
            for later in items[position + 1 :]:
                tasks.create_task(run(later, extra))
            if started is not None:
                started()
            await resume(running, step)
        return


class _Timed(Protocol):
    """What a deadline interrupts: a guarded call's `_Drive`, or a call in a worker thread (`_workers`)."""

    finished: bool
    """Its deadline no longer applies."""

    def cancel(self) -> None:
        """Interrupt the call."""
        ...


class _Deadlines:
    """The deadlines of one event loop's guarded calls, behind one loop timer armed for the earliest.

    A call's deadline is a heap entry; the timer, when it fires, interrupts the calls whose
    deadline passed and is armed again for the next. A finished call's entry is dropped when it
    reaches the top (sequential calls: at once), or in a sweep once finished entries are most
    of the heap (as asyncio sweeps its cancelled timers).
    """

    __slots__ = ("_armed", "_finished", "_heap", "_order", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._heap: list[tuple[float, int, _Timed]] = []
        self._order = itertools.count()  # ties are broken by it: drives are never compared
        self._timer: asyncio.TimerHandle | None = None
        self._armed = math.inf
        self._finished = 0
        """Entries of finished calls still in the heap."""

    def add(self, deadline: float, drive: _Timed) -> None:
        """Interrupt `drive` at `deadline` (loop time) unless `finish(drive)` comes first."""
        heappush(self._heap, (deadline, next(self._order), drive))
        if deadline < self._armed:
            self._arm(deadline)

    def finish(self, drive: _Timed) -> None:
        """`drive`'s call is over: its deadline no longer applies."""
        if drive.finished:  # its deadline fired: the entry is gone
            return
        drive.finished = True
        self._finished += 1
        heap = self._heap
        while heap and heap[0][2].finished:
            heappop(heap)
            self._finished -= 1
        if self._finished > _SWEEP_AT and self._finished * 2 > len(heap):
            self._heap = [entry for entry in heap if not entry[2].finished]
            heapify(self._heap)
            self._finished = 0

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed = when
        self._timer = self.loop.call_at(when, self._fire)

    def _fire(self) -> None:
        # Due: everything up to the time the timer was armed for (asyncio runs a timer a clock
        # resolution early), and what passed since.
        due = max(self._armed, self.loop.time())
        self._timer, self._armed = None, math.inf
        heap = self._heap
        while heap and (heap[0][0] <= due or heap[0][2].finished):
            drive = heappop(heap)[2]
            if drive.finished:
                self._finished -= 1
            else:
                drive.finished = True  # the entry is gone: `finish()` has nothing to count
                drive.cancel()
        if heap:
            self._arm(heap[0][0])


class _PerThread(threading.local):
    """The `_Deadlines` of the loop that last ran a guarded call in this thread (one loop runs per thread at a time)."""

    deadlines: _Deadlines | None = None


_per_thread = _PerThread()
_SWEEP_AT = 100
"""Sweep the finished calls' entries out of a heap only when there are more than this many."""


class _Drive:
    """The rest of a suspended coroutine, awaited step by step; `cancel()` interrupts it."""

    __slots__ = ("_coroutine", "_running", "_step", "_task", "finished", "fired", "requested")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], step: Any, task: asyncio.Task[Any] | None) -> None:
        self._coroutine = coroutine
        self._step = step
        self._task = task
        self._running = False
        self.finished = False
        """Its deadline no longer applies: the call is over, or the deadline fired (`_Deadlines`)."""
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
