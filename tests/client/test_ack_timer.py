"""`AckTimer`: the client acknowledges late, once per busy stretch, or at once when asked to."""

from __future__ import annotations

import anyio

from toolwire.client.link import AckTimer


class Recorder:
    def __init__(self) -> None:
        self.times: list[float] = []
        self._changed = anyio.Event()

    async def __call__(self) -> None:
        self.times.append(anyio.current_time())
        self._changed.set()

    async def wait_for(self, count: int) -> None:
        with anyio.fail_after(5):
            while len(self.times) < count:
                await self._changed.wait()
                self._changed = anyio.Event()


async def test_one_acknowledgement_covers_what_arrived_within_the_delay() -> None:
    acks = Recorder()
    timer = AckTimer(acks, delay=0.1)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(timer.run)
        started = anyio.current_time()
        for _ in range(5):
            timer.later()
            await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        tasks.cancel_scope.cancel()
    assert len(acks.times) == 1 and acks.times[0] - started >= 0.1


async def test_soon_acknowledges_without_waiting_for_the_delay() -> None:
    acks = Recorder()
    timer = AckTimer(acks, delay=60)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(timer.run)
        timer.later()
        await anyio.sleep(0.01)  # the timer waits now
        timer.soon()
        await acks.wait_for(1)
        timer.soon()  # also when it was not waiting yet
        await acks.wait_for(2)
        tasks.cancel_scope.cancel()


async def test_nothing_is_written_until_something_waits() -> None:
    acks = Recorder()
    timer = AckTimer(acks, delay=0.01)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(timer.run)
        await anyio.sleep(0.1)
        tasks.cancel_scope.cancel()
    assert acks.times == []
