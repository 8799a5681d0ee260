"""Each fast path of `toolwire._fast` gives the same results as the plain code it stands for.

Every test of a fast path runs against both versions (the `guarded` and `run_together` fixtures);
the core's tests run on trio as well (tests/conftest.py), where the runtime takes the plain ones.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, TypeAlias

import anyio
import anyio.lowlevel
import pytest

from toolwire import Cancellation, ToolMode, _fast, _workers, envelopes, guard, invocation, pipeline, runs
from toolwire.envelopes import ResultType, ToolCall, ToolResult
from toolwire.errors import EnvelopeError
from toolwire.events import ModelRequestStarted
from toolwire.guard import INTERRUPTED
from toolwire.invocation import ToolCallFinished, ToolCallStarted
from toolwire.messages import AssistantMessage, ToolResultMessage, Usage, UserMessage
from toolwire.models import ModelRequest, ModelResponse, TextDelta
from toolwire.store import CallState, LedgerEntry, memory
from toolwire.toolsets import surface

Guarded: TypeAlias = Callable[..., Coroutine[Any, Any, Any]]
Together: TypeAlias = Callable[
    [Callable[[Any, Any], Coroutine[Any, Any, None]], Sequence[Any], Any], Coroutine[Any, Any, None]
]


@pytest.fixture(params=["fast", "plain"])
def guarded(request: pytest.FixtureRequest) -> Guarded:
    return _fast.guarded if request.param == "fast" else guard.guarded


async def _task_group(run: Callable[[Any, Any], Coroutine[Any, Any, None]], items: Sequence[Any], extra: Any) -> None:
    async with anyio.create_task_group() as group:
        for item in items:
            group.start_soon(run, item, extra)


@pytest.fixture(params=["fast", "plain"])
def run_together(request: pytest.FixtureRequest) -> Together:
    return _fast.together if request.param == "fast" else _task_group


# -- guarded -----------------------------------------------------------------------------------


FOREVER = 3600.0
_REQUEST: contextvars.ContextVar[str] = contextvars.ContextVar("request")


async def immediate(value: int) -> int:
    return value


async def waits(seconds: float, log: list[str]) -> str:
    try:
        await anyio.sleep(seconds)
    finally:
        log.append("cleaned up")
    return "woke"


async def test_a_coroutine_that_never_waits_returns_its_value(guarded: Guarded):
    assert await guarded(immediate(7), 0.0, Cancellation()) == 7


async def test_a_coroutine_that_waits_and_finishes_returns_its_value(guarded: Guarded):
    log: list[str] = []
    assert await guarded(waits(0, log), FOREVER, Cancellation()) == "woke"


async def test_the_deadline_interrupts_a_waiting_coroutine_and_lets_it_clean_up(guarded: Guarded):
    log: list[str] = []
    with anyio.fail_after(5):
        assert await guarded(waits(FOREVER, log), 0.01, Cancellation()) is INTERRUPTED
    assert log == ["cleaned up"]


async def test_cancel_interrupts_a_waiting_coroutine(guarded: Guarded):
    cancellation, log = Cancellation(), list[str]()
    async with anyio.create_task_group() as group:
        group.start_soon(_cancel_soon, cancellation)
        with anyio.fail_after(5):
            assert await guarded(waits(FOREVER, log), None, cancellation) is INTERRUPTED
    assert log == ["cleaned up"]


async def _cancel_soon(cancellation: Cancellation) -> None:
    await anyio.sleep(0.01)
    cancellation.cancel()


async def test_a_cancellation_fired_before_the_first_wait_interrupts_at_that_wait(guarded: Guarded):
    cancellation, log = Cancellation(), list[str]()

    async def cancels_itself_then_waits() -> str:
        cancellation.cancel()  # from inside the call, before it ever waits
        return await waits(FOREVER, log)

    with anyio.fail_after(5):
        assert await guarded(cancels_itself_then_waits(), None, cancellation) is INTERRUPTED
    assert log == ["cleaned up"]


async def test_a_task_group_opened_before_the_first_wait_closes_in_order_on_the_deadline(guarded: Guarded):
    finished: list[str] = []

    async def fans_out() -> None:
        async with anyio.create_task_group() as group:  # opened in the first step, before any wait
            group.start_soon(waits, FOREVER, finished)
            await anyio.sleep(FOREVER)

    with anyio.fail_after(5):
        assert await guarded(fans_out(), 0.01, Cancellation()) is INTERRUPTED
    assert finished == ["cleaned up"]


async def test_a_cancel_scope_of_the_coroutine_keeps_its_own_timeout(guarded: Guarded):
    async def own_timeout() -> None:
        with anyio.fail_after(0.01):  # shorter than the guard's deadline: the coroutine's error
            await anyio.sleep(FOREVER)

    with pytest.raises(TimeoutError):
        await guarded(own_timeout(), FOREVER, Cancellation())


async def test_exceptions_of_the_first_step_propagate(guarded: Guarded):
    async def fails_at_once() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await guarded(fails_at_once(), FOREVER, Cancellation())


async def test_exceptions_after_a_wait_propagate(guarded: Guarded):
    async def fails_later() -> None:
        await anyio.lowlevel.checkpoint()
        raise KeyError("late")

    with pytest.raises(KeyError, match="late"):
        await guarded(fails_later(), FOREVER, Cancellation())


async def test_the_callers_cancel_scope_is_not_mistaken_for_the_deadline(guarded: Guarded):
    log: list[str] = []
    with anyio.move_on_after(0.01) as outer:
        await guarded(waits(FOREVER, log), FOREVER, Cancellation())
        pytest.fail("the caller's scope did not end the call")  # pragma: no cover
    assert outer.cancelled_caught
    assert log == ["cleaned up"]


# -- asyncio's own machinery: only the fast version touches the task (the plain one is anyio's) --


@pytest.mark.asyncio_only
async def test_an_interruption_leaves_no_cancellation_pending_on_the_task():
    log: list[str] = []
    assert await _fast.guarded(waits(FOREVER, log), 0.01, Cancellation()) is INTERRUPTED
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0)  # would raise CancelledError if a cancel were still pending


@pytest.mark.asyncio_only
async def test_a_coroutine_that_swallows_the_interruption_returns_its_value():
    async def stubborn() -> str:
        try:
            await anyio.sleep(FOREVER)
        except asyncio.CancelledError:
            return "kept going"
        return "woke"  # pragma: no cover

    assert await _fast.guarded(stubborn(), 0.01, Cancellation()) == "kept going"


async def test_a_worker_thread_call_is_abandoned_at_the_deadline(guarded: Guarded):
    release = threading.Event()

    def blocks() -> str:
        release.wait(5)
        return "done"

    with anyio.fail_after(5):
        outcome = await guarded(anyio.to_thread.run_sync(blocks, abandon_on_cancel=True), 0.01, Cancellation())
    release.set()
    assert outcome is INTERRUPTED


async def test_calls_waiting_together_end_at_their_own_deadlines(guarded: Guarded):
    release, short_ones_ended = anyio.Event(), anyio.Event()
    outcomes: dict[str, object] = {}

    async def released() -> str:
        await release.wait()
        return "released"

    async def run(name: str, seconds: float) -> None:
        outcomes[name] = await guarded(released(), seconds, Cancellation())
        if len(outcomes) == 2:
            short_ones_ended.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "long", FOREVER)
            await anyio.lowlevel.checkpoint()  # the long deadline first: the shorter ones come after it
            group.start_soon(run, "later", 0.05)
            group.start_soon(run, "sooner", 0.01)
            await short_ones_ended.wait()
            release.set()
    assert outcomes == {"sooner": INTERRUPTED, "later": INTERRUPTED, "long": "released"}


async def test_a_finished_call_leaves_no_deadline_behind(guarded: Guarded):
    log: list[str] = []
    assert await guarded(waits(0, log), 0.01, Cancellation()) == "woke"
    await anyio.sleep(0.03)  # past the deadline: nothing interrupts this task


@pytest.mark.asyncio_only
async def test_the_deadlines_of_finished_calls_do_not_pile_up_behind_a_waiting_one():
    release = anyio.Event()

    async def released() -> str:
        await release.wait()
        return "released"

    async with anyio.create_task_group() as group:

        async def slow() -> None:
            assert await _fast.guarded(released(), FOREVER, Cancellation()) == "released"

        group.start_soon(slow)
        await anyio.lowlevel.checkpoint()
        log: list[str] = []
        for _ in range(1000):  # each ends after the slow call's deadline, while it waits
            assert await _fast.guarded(waits(0, log), 2 * FOREVER, Cancellation()) == "woke"
        deadlines = _fast._per_thread.deadlines
        assert deadlines is not None and len(deadlines._heap) <= 2 * _fast._SWEEP_AT + 2
        release.set()


# -- together ----------------------------------------------------------------------------------


async def test_together_runs_every_item(run_together: Together) -> None:
    done: list[int] = []

    async def run(item: int, _: object) -> None:
        if item % 2:
            await anyio.lowlevel.checkpoint()
        done.append(item)

    await run_together(run, [1, 2, 3, 4, 5], None)
    assert sorted(done) == [1, 2, 3, 4, 5]


async def test_together_runs_the_items_concurrently(run_together: Together) -> None:
    first_waits, second_ran = anyio.Event(), anyio.Event()

    async def run(item: str, _: object) -> None:
        if item == "first":
            first_waits.set()
            await second_ran.wait()  # finishes only if the second runs meanwhile
        else:
            await first_waits.wait()
            second_ran.set()

    with anyio.fail_after(5):
        await run_together(run, ["first", "second"], None)
    assert second_ran.is_set()


async def test_together_propagates_a_failure(run_together: Together) -> None:
    async def run(item: int, _: object) -> None:
        await anyio.lowlevel.checkpoint()
        if item == 2:
            raise ValueError("bad item")

    with pytest.raises(ExceptionGroup) as caught:
        await run_together(run, [1, 2, 3], None)
    assert [str(error) for error in caught.value.exceptions] == ["bad item"]


# -- run_sync: a sync function in a worker thread ----------------------------------------------------

RunSync: TypeAlias = Callable[..., Coroutine[Any, Any, Any]]


async def _anyio_hop(
    function: Callable[[], Any], seconds: float | None, cancellation: Cancellation | None = None
) -> Any:
    return await guard.guarded(anyio.to_thread.run_sync(function, abandon_on_cancel=True), seconds, cancellation)


@pytest.fixture(params=["fast", "plain"])
def run_sync(request: pytest.FixtureRequest) -> RunSync:
    return _workers.run_sync if request.param == "fast" else _anyio_hop


async def test_a_sync_function_runs_in_another_thread_and_returns_its_value(run_sync: RunSync) -> None:
    assert await run_sync(threading.get_ident, FOREVER, Cancellation()) != threading.get_ident()


async def test_a_sync_functions_exception_propagates(run_sync: RunSync) -> None:
    def fails() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await run_sync(fails, FOREVER, Cancellation())


async def test_a_sync_function_raising_stop_iteration_gives_a_runtime_error(run_sync: RunSync) -> None:
    def stops() -> None:
        raise StopIteration

    with pytest.raises(RuntimeError):
        await run_sync(stops, FOREVER, Cancellation())


async def test_a_sync_function_past_its_deadline_is_abandoned(run_sync: RunSync) -> None:
    release, late = threading.Event(), threading.Event()

    def blocks() -> str:
        release.wait(5)
        late.set()
        return "done"

    with anyio.fail_after(5):
        assert await run_sync(blocks, 0.01) is INTERRUPTED
    release.set()
    await anyio.to_thread.run_sync(late.wait, 5)  # its late result is dropped: nothing else to see


async def test_a_cancellation_interrupts_a_running_sync_function(run_sync: RunSync) -> None:
    started, release = threading.Event(), threading.Event()
    cancellation = Cancellation()
    outcomes: list[object] = []

    def blocks() -> str:
        started.set()
        release.wait(5)
        return "done"

    async def run() -> None:
        outcomes.append(await run_sync(blocks, FOREVER, cancellation))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await anyio.to_thread.run_sync(started.wait, 5)
            cancellation.cancel()
    release.set()
    assert outcomes == [INTERRUPTED]


async def test_a_sync_function_canceled_before_it_starts_never_runs(run_sync: RunSync) -> None:
    ran: list[str] = []
    cancellation = Cancellation()
    cancellation.cancel()
    assert await run_sync(lambda: ran.append("ran"), FOREVER, cancellation) is INTERRUPTED
    assert ran == []


async def test_the_callers_cancel_scope_abandons_a_sync_function(run_sync: RunSync) -> None:
    release = threading.Event()
    with anyio.fail_after(5):
        with anyio.move_on_after(0.01) as scope:
            await run_sync(lambda: release.wait(5), FOREVER, Cancellation())
    release.set()
    assert scope.cancelled_caught


async def test_a_sync_function_sees_the_callers_context_variables(run_sync: RunSync) -> None:
    token = _REQUEST.set("r1")
    try:
        assert await run_sync(_REQUEST.get, FOREVER) == "r1"
    finally:
        _REQUEST.reset(token)


async def test_a_sync_function_can_call_back_into_the_event_loop(run_sync: RunSync) -> None:
    loop_thread = threading.get_ident()
    assert await run_sync(lambda: anyio.from_thread.run_sync(threading.get_ident), FOREVER) == loop_thread
    assert await run_sync(anyio.from_thread.check_cancelled, FOREVER) is None


@pytest.mark.asyncio_only
async def test_gathered_calls_run_in_one_thread_and_wait_for_close() -> None:
    gather = _workers.Gather(asyncio.get_running_loop())
    results: list[object] = []

    async def run(n: int) -> None:
        results.append(await _workers.run_sync(threading.get_ident, FOREVER, Cancellation(), gather))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for n in range(3):
                group.start_soon(run, n)
            await anyio.lowlevel.checkpoint()
            assert results == []  # not started before `close()`
            gather.close()
    assert len(set(results)) == 1 and results[0] != threading.get_ident()
    assert await _workers.run_sync(lambda: 1, FOREVER, None, gather) == 1  # closed: a later call runs alone


@pytest.mark.asyncio_only
async def test_a_gathered_call_that_runs_long_lets_the_others_have_threads_of_their_own() -> None:
    gather = _workers.Gather(asyncio.get_running_loop())
    release, quick_done = threading.Event(), anyio.Event()
    outcomes: dict[str, object] = {}

    async def run(name: str, function: Callable[[], object]) -> None:
        outcomes[name] = await _workers.run_sync(function, FOREVER, None, gather)
        if name == "quick":
            quick_done.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "slow", lambda: release.wait(5))
            group.start_soon(run, "quick", lambda: "quick")
            await anyio.lowlevel.checkpoint()
            gather.close()
            await quick_done.wait()  # would wait for the slow one without the sharing
            release.set()
    assert outcomes == {"slow": True, "quick": "quick"}


@pytest.mark.asyncio_only
async def test_more_jobs_than_threads_wait_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    idle = _workers._idle
    monkeypatch.setattr(_workers, "_idle", [])  # no idle thread, and no new one allowed: jobs queue
    monkeypatch.setattr(_workers, "MAX_THREADS", _workers._threads)
    queued: list[object] = []

    async def queue() -> None:
        queued.append(await _workers.run_sync(lambda: "queued", FOREVER))

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(queue)
                await anyio.lowlevel.checkpoint()
                assert queued == [] and len(_workers._queued) == 1
                monkeypatch.setattr(_workers, "MAX_THREADS", _workers._threads + 1)
                assert await _workers.run_sync(lambda: "first", FOREVER) == "first"  # its thread takes the queued job
        assert queued == ["queued"]
    finally:
        idle.extend(_workers._idle)  # the threads go back to the pool


# -- quick_init --------------------------------------------------------------------------------

QUICK = [
    (UserMessage, ("hello",), {}),
    (AssistantMessage, ("text", (ToolCall(id="c1", name="add", arguments={"a": 1}),)), {}),
    (ToolResultMessage, ("add", ToolResult.ok("c1", "done")), {}),
    (LedgerEntry, (), {"thread_id": "t", "call": ToolCall(id="c1", name="add", arguments={}), "request_index": 0}),
    (ModelRequest, (), {"system": "s", "messages": ()}),
    (ModelResponse, (), {"text": "text"}),
    (ModelResponse, (), {}),  # a default factory
    (TextDelta, ("chunk",), {}),
    (Usage, (1, 2, 3), {}),
    (ToolResult, (), {"call_id": "c1", "data": {"a": 1}}),
    (ToolResult, (), {}),  # a default factory
    (ModelRequestStarted, (2,), {}),
    (ToolCallStarted, (ToolCall(id="c1", name="add", arguments={}), None, None, 0, 0), {}),
    (ToolCallFinished, (ToolCall(id="c1", name="add", arguments={}), ToolResult.ok("c1", 3), 0.5, 0, 0), {}),
]


def _plain(cls: type[Any]) -> type[Any]:
    """The same dataclass with the `__init__` that `dataclasses` writes."""
    fields = [
        (
            f.name,
            f.type,
            dataclasses.field(default=f.default, default_factory=f.default_factory, init=f.init, kw_only=f.kw_only),
        )
        for f in dataclasses.fields(cls)
    ]
    post_init = {"__post_init__": cls.__post_init__} if hasattr(cls, "__post_init__") else {}
    return dataclasses.make_dataclass(cls.__name__, fields, namespace=post_init, frozen=True, slots=True)


@pytest.mark.parametrize(("cls", "args", "kwargs"), QUICK, ids=[c.__name__ for c, _, _ in QUICK])
def test_quick_init_sets_what_the_dataclass_init_sets(
    cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    quick, plain = cls(*args, **kwargs), _plain(cls)(*args, **kwargs)
    assert _values(quick) == _values(plain)


def _values(instance: Any) -> dict[str, Any]:
    return {f.name: getattr(instance, f.name) for f in dataclasses.fields(instance)}


@pytest.mark.parametrize(("cls", "args", "kwargs"), QUICK, ids=[c.__name__ for c, _, _ in QUICK])
def test_quick_init_keeps_the_signature(cls: type[Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    import inspect

    def parameters(init: Any) -> list[tuple[str, Any, Any]]:
        # A default factory shows as a sentinel, dataclasses' own or `MISSING`: the same fact.
        factory = {"<factory>", repr(dataclasses.MISSING)}
        return [
            (p.name, p.kind, "factory" if repr(p.default) in factory else p.default)
            for p in inspect.signature(init).parameters.values()
        ]

    assert parameters(cls.__init__) == parameters(_plain(cls).__init__)


def test_a_quick_init_instance_stays_frozen() -> None:
    message = UserMessage("hello")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]


def test_an_instance_filled_through_the_twin_class_is_of_its_own_class_and_frozen() -> None:
    entry = LedgerEntry(thread_id="t", call=ToolCall(id="c1", name="add", arguments={}), request_index=0)
    assert type(entry) is LedgerEntry
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.state = CallState.TERMINAL  # type: ignore[misc]


def test_a_subclass_of_another_layout_is_filled_slot_by_slot() -> None:
    class Noted(LedgerEntry):  # no __slots__: it has a __dict__, so it cannot pass for the twin
        pass

    call = ToolCall(id="c1", name="add", arguments={})
    noted = Noted(thread_id="t", call=call, request_index=3, mode="read")
    assert type(noted) is Noted
    assert _values(noted) == _values(LedgerEntry(thread_id="t", call=call, request_index=3, mode="read"))


def test_quick_init_runs_post_init_as_the_dataclass_init_does() -> None:
    with pytest.raises(EnvelopeError, match="DENIED"):
        ToolResult(call_id="c", type=ResultType.DENIED, error="x")  # its payload is missing
    with pytest.raises(EnvelopeError, match="DENIED"):
        _plain(ToolResult)(call_id="c", type=ResultType.DENIED, error="x")


def test_quick_init_refuses_a_class_it_cannot_speed_up() -> None:
    @dataclasses.dataclass
    class Mutable:
        value: int

    with pytest.raises(TypeError, match="frozen, slotted"):
        _fast.quick_init(Mutable)


# -- maker -------------------------------------------------------------------------------------

_CALL = ToolCall(id="c1", name="add", arguments={"a": 1})

MADE = [  # each maker the hot path uses, with the call of the class it stands for
    (envelopes.new_success, ("c1", {"a": [1]}), ToolResult, {"call_id": "c1", "data": {"a": [1]}}),
    (
        surface._pending,
        ("t", _CALL, 2, "read"),
        LedgerEntry,
        {"thread_id": "t", "call": _CALL, "request_index": 2, "mode": "read"},
    ),
    (runs._request, ("s", (), (), "auto", 3), ModelRequest, {"system": "s", "messages": (), "request_index": 3}),
    (
        memory._result_message,
        ("add", ToolResult.ok("c1", 3)),
        ToolResultMessage,
        {"tool_name": "add", "result": ToolResult.ok("c1", 3)},
    ),
    (
        invocation._started,
        (_CALL, ToolMode.READ, None, 1, 0, None),
        ToolCallStarted,
        {"call": _CALL, "mode": ToolMode.READ, "decision": None, "request_index": 1, "tool_index": 0},
    ),
    (
        pipeline._finished,
        (_CALL, ToolResult.ok("c1", 3), 0.5, 1, 0),
        ToolCallFinished,
        {"call": _CALL, "result": ToolResult.ok("c1", 3), "duration_ms": 0.5, "request_index": 1, "tool_index": 0},
    ),
]


@pytest.mark.parametrize(("make", "values", "cls", "fields"), MADE, ids=[m[2].__name__ for m in MADE])
def test_a_maker_builds_what_the_class_builds(
    make: Callable[..., Any], values: tuple[Any, ...], cls: type[Any], fields: dict[str, Any]
) -> None:
    made = make(*values)
    assert type(made) is cls
    assert _values(made) == _values(cls(**fields))


def test_a_made_instance_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        envelopes.new_success("c1", 3).data = 4  # type: ignore[misc]


def test_maker_wants_a_default_for_every_field_it_is_not_given() -> None:
    with pytest.raises(TypeError, match="call has no default"):
        _fast.maker(LedgerEntry, "thread_id", "request_index")


# -- replacer ----------------------------------------------------------------------------------

RESULTS = [
    ToolResult.ok(None, {"a": 1}, message="m", terminal=True, next_action="retry"),
    ToolResult.failed("c0", "broke", code="execution_error", error_type="RuntimeError", data={"x": [1]}),
    ToolResult.canceled(None, "stop", "user"),
    ToolResult.timeout("c0", 1500, True),
    ToolResult.denied(None, "rm", "not allowed"),
    ToolResult.from_dict({"callId": "c0", "success": True, "data": 1, "future": "kept"}),
]


@pytest.mark.parametrize("result", RESULTS, ids=[r.type.name for r in RESULTS])
def test_with_call_id_copies_what_dataclasses_replace_copies(result: ToolResult) -> None:
    fast = result.with_call_id("c9")
    assert _values(fast) == _values(dataclasses.replace(result, call_id="c9"))
    assert type(fast) is ToolResult and fast.call_id == "c9" and result.call_id != "c9"


def test_a_replaced_instance_stays_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolResult.ok(None, 1).with_call_id("c").call_id = "d"  # type: ignore[misc]


def test_replacer_copies_a_subclass_with_dataclasses_replace() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Base:
        key: str
        value: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Derived(Base):
        more: int = 0

    replace = _fast.replacer(Base, "key")
    assert replace(Base("a", 1), "b") == Base("b", 1)
    assert replace(Derived("a", 1, more=2), "b") == Derived("b", 1, more=2)


def test_replacer_refuses_what_it_cannot_copy() -> None:
    @dataclasses.dataclass
    class Mutable:
        value: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class Frozen:
        value: int

    with pytest.raises(TypeError, match="frozen, slotted"):
        _fast.replacer(Mutable, "value")
    with pytest.raises(TypeError, match="no field 'other'"):
        _fast.replacer(Frozen, "other")
