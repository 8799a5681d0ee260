"""`toolwire.guard.guarded`: a deadline and a `Cancellation` that cost nothing until the coroutine waits."""

from __future__ import annotations

import asyncio
import threading

import anyio
import anyio.lowlevel
import pytest

from toolwire import Cancellation, guard
from toolwire.guard import INTERRUPTED, guarded

FOREVER = 3600.0


async def immediate(value: int) -> int:
    return value


async def waits(seconds: float, log: list[str]) -> str:
    try:
        await anyio.sleep(seconds)
    finally:
        log.append("cleaned up")
    return "woke"


async def test_a_coroutine_that_never_waits_returns_its_value():
    assert await guarded(immediate(7), 0.0, Cancellation()) == 7


async def test_a_coroutine_that_waits_and_finishes_returns_its_value():
    log: list[str] = []
    assert await guarded(waits(0, log), FOREVER, Cancellation()) == "woke"


async def test_the_deadline_interrupts_a_waiting_coroutine_and_lets_it_clean_up():
    log: list[str] = []
    with anyio.fail_after(5):
        assert await guarded(waits(FOREVER, log), 0.01, Cancellation()) is INTERRUPTED
    assert log == ["cleaned up"]


async def test_cancel_interrupts_a_waiting_coroutine():
    cancellation, log = Cancellation(), list[str]()
    async with anyio.create_task_group() as group:
        group.start_soon(_cancel_soon, cancellation)
        with anyio.fail_after(5):
            assert await guarded(waits(FOREVER, log), None, cancellation) is INTERRUPTED
    assert log == ["cleaned up"]


async def _cancel_soon(cancellation: Cancellation) -> None:
    await anyio.sleep(0.01)
    cancellation.cancel()


async def test_a_cancellation_fired_before_the_first_wait_interrupts_at_that_wait():
    cancellation, log = Cancellation(), list[str]()

    async def cancels_itself_then_waits() -> str:
        cancellation.cancel()  # from inside the call, before it ever waits
        return await waits(FOREVER, log)

    with anyio.fail_after(5):
        assert await guarded(cancels_itself_then_waits(), None, cancellation) is INTERRUPTED
    assert log == ["cleaned up"]


async def test_a_task_group_opened_before_the_first_wait_closes_in_order_on_the_deadline():
    finished: list[str] = []

    async def fans_out() -> None:
        async with anyio.create_task_group() as group:  # opened in the first step, before any wait
            group.start_soon(waits, FOREVER, finished)
            await anyio.sleep(FOREVER)

    with anyio.fail_after(5):
        assert await guarded(fans_out(), 0.01, Cancellation()) is INTERRUPTED
    assert finished == ["cleaned up"]


async def test_a_cancel_scope_of_the_coroutine_keeps_its_own_timeout():
    async def own_timeout() -> None:
        with anyio.fail_after(0.01):  # shorter than the guard's deadline: the coroutine's error
            await anyio.sleep(FOREVER)

    with pytest.raises(TimeoutError):
        await guarded(own_timeout(), FOREVER, Cancellation())


async def test_exceptions_of_the_first_step_propagate():
    async def fails_at_once() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        await guarded(fails_at_once(), FOREVER, Cancellation())


async def test_exceptions_after_a_wait_propagate():
    async def fails_later() -> None:
        await anyio.lowlevel.checkpoint()
        raise KeyError("late")

    with pytest.raises(KeyError, match="late"):
        await guarded(fails_later(), FOREVER, Cancellation())


async def test_the_callers_cancel_scope_is_not_mistaken_for_the_deadline():
    log: list[str] = []
    with anyio.move_on_after(0.01) as outer:
        await guarded(waits(FOREVER, log), FOREVER, Cancellation())
        pytest.fail("the caller's scope did not end the call")  # pragma: no cover
    assert outer.cancelled_caught
    assert log == ["cleaned up"]


@pytest.mark.asyncio_only
async def test_an_interruption_leaves_no_cancellation_pending_on_the_task():
    log: list[str] = []
    assert await guarded(waits(FOREVER, log), 0.01, Cancellation()) is INTERRUPTED
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

    assert await guarded(stubborn(), 0.01, Cancellation()) == "kept going"


async def test_a_worker_thread_call_is_abandoned_at_the_deadline():
    release = threading.Event()

    def blocks() -> str:
        release.wait(5)
        return "done"

    with anyio.fail_after(5):
        outcome = await guarded(anyio.to_thread.run_sync(blocks, abandon_on_cancel=True), 0.01, Cancellation())
    release.set()
    assert outcome is INTERRUPTED


async def test_off_asyncio_a_cancel_scope_does_the_same(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(guard, "asyncio_loop", lambda: None)  # as under trio
    log: list[str] = []
    assert await guarded(immediate(3), FOREVER, Cancellation()) == 3
    with anyio.fail_after(5):
        assert await guarded(waits(FOREVER, log), 0.01, Cancellation()) is INTERRUPTED
    assert log == ["cleaned up"]
