"""`ClientHub`: requests and responses correlate by id, per thread, exactly once."""

from __future__ import annotations

import gc
import logging
import sys
from typing import Any

import anyio
import pytest

from toolwire.client_tools.channel import ClientHub, FallbackMessage, RetryWithBackoff, new_request_id
from toolwire.client_tools.definitions import ClientToolRequest, ClientToolResponse, TextContent
from toolwire.errors import ClientDisconnected, UsageError


def request(thread_id: str = "t1", request_id: str = "req_1") -> ClientToolRequest:
    return ClientToolRequest(
        request_id=request_id,
        thread_id=thread_id,
        call_id="c1",
        tool_name="GetSelection",
        arguments={},
        description="",
        mode="external",
    )


def response(request_id: str = "req_1", text: str = "selected") -> ClientToolResponse:
    return ClientToolResponse(request_id=request_id, content=(TextContent(text=text),))


class Recorder:
    """A channel that records what it was sent and lets the test answer."""

    def __init__(self, *, fail: bool = False) -> None:
        self.sent: list[ClientToolRequest] = []
        self.fail = fail
        self.arrived = anyio.Event()

    async def send(self, request: ClientToolRequest) -> None:
        if self.fail:
            raise ClientDisconnected("gone")
        self.sent.append(request)
        self.arrived.set()
        self.arrived = anyio.Event()


async def answered(hub: ClientHub, channel: Recorder, thread_id: str = "t1", **options: Any) -> Any:
    """Run one request while the test's body answers it; return what `request` returned."""
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request(thread_id, request(thread_id), **options))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        assert hub.deliver(thread_id, response())
    return outcome[0]


async def test_a_response_for_the_request_is_returned() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    assert (await answered(hub, channel)).content == (TextContent(text="selected"),)


async def test_without_a_client_the_request_returns_none_at_once() -> None:
    assert await ClientHub().request("t1", request()) is None


async def test_a_channel_that_cannot_send_counts_as_gone() -> None:
    hub = ClientHub()
    hub.attach("t1", Recorder(fail=True))
    assert await hub.request("t1", request()) is None
    assert hub.channel("t1") is None


async def test_an_unknown_request_id_is_refused_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolwire.client_tools"):
        assert not ClientHub().deliver("t1", response("req_unknown"))
    assert "unknown request id" in caplog.text


async def test_a_response_from_another_thread_is_refused() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []

    async def ask() -> None:
        with anyio.move_on_after(0.05):
            outcome.append(await hub.request("t1", request()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        assert not hub.deliver("t2", response())
    assert outcome == []


async def test_a_response_after_the_caller_gave_up_is_refused() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    with anyio.move_on_after(0.01):
        await hub.request("t1", request())
    assert not hub.deliver("t1", response())
    assert hub.pending("t1") == []


async def test_detaching_wakes_the_waiting_call_with_none() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request("t1", request()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        hub.detach("t1", channel)
    assert outcome == [None]


async def test_detaching_an_old_channel_keeps_the_new_one() -> None:
    hub, old, new = ClientHub(), Recorder(), Recorder()
    hub.attach("t1", old)
    hub.attach("t1", new)
    hub.detach("t1", old)
    assert hub.channel("t1") is new


async def test_retry_resends_the_same_request_id_to_the_client_that_comes_back() -> None:
    hub, first, second = ClientHub(), Recorder(), Recorder()
    hub.attach("t1", first)
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request("t1", request(), retry=RetryWithBackoff(initial_delay=60, max_delay=60)))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await first.arrived.wait()
        hub.detach("t1", first)
        hub.attach("t1", second)
        await second.arrived.wait()
        assert hub.deliver("t1", response())
    assert [sent.request_id for sent in first.sent + second.sent] == ["req_1", "req_1"]
    assert outcome[0] is not None


def test_fallback_template_names_the_tool() -> None:
    assert FallbackMessage().message("OpenFile") == "Client disconnected. Tool 'OpenFile' unavailable."


def test_backoff_grows_to_its_maximum() -> None:
    strategy = RetryWithBackoff(initial_delay=0.5, max_delay=2.0)
    assert [strategy.delay(attempt) for attempt in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.0]


def test_a_nonsensical_backoff_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        RetryWithBackoff(max_retries=-1)


def test_request_ids_carry_128_random_bits() -> None:
    ids = {new_request_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(value) == len("req_") + 32 for value in ids)


class Approver(Recorder):
    """A channel whose user answers consent prompts."""

    async def consent(self, request: Any) -> bool:
        return True


def test_only_a_channel_with_consent_makes_the_thread_consenting() -> None:
    hub = ClientHub()
    hub.attach("t1", Recorder())
    hub.attach("t2", Approver())
    assert hub.consenting == {"t2"}
    hub.detach("t2", hub.channel("t2"))  # type: ignore[arg-type]
    assert hub.consenting == set()


# -- claims: a server saves a response before the call takes it ------------------------------------


async def test_a_claimed_response_goes_to_the_call_once_settled() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request("t1", request()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        claim = hub.claim("t1", "req_1")
        assert claim is not None and claim.request == request()
        await anyio.wait_all_tasks_blocked()
        assert outcome == []  # still saving
        hub.settle(claim, response())
    assert outcome == [response()]


async def test_a_call_interrupted_while_its_response_is_saved_still_takes_it() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []

    async def ask() -> None:
        with anyio.CancelScope() as scope:
            asking.append(scope)
            outcome.append(await hub.request("t1", request()))

    asking: list[anyio.CancelScope] = []
    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        claim = hub.claim("t1", "req_1")
        assert claim is not None
        asking[0].cancel()  # the call's deadline, say
        await anyio.wait_all_tasks_blocked()
        hub.settle(claim, response())
    assert outcome == [response()]  # decided before the interruption took effect


async def test_a_claim_given_up_leaves_the_call_waiting_and_detach_still_counts() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request("t1", request()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        claim = hub.claim("t1", "req_1")
        assert claim is not None
        hub.detach("t1", channel)  # while saving: the call waits for the claim
        await anyio.wait_all_tasks_blocked()
        assert outcome == []
        hub.settle(claim, None)  # not saved (the call was settled meanwhile, say)
    assert outcome == [None]  # then the client is gone


async def test_a_request_claimed_before_it_is_asked_for_is_not_sent() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    claim = hub.claim("t1", "req_1")  # a result replayed after a restart, before the resume asks
    assert claim is not None and claim.request is None
    outcome: list[Any] = []

    async def ask() -> None:
        outcome.append(await hub.request("t1", request()))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await anyio.wait_all_tasks_blocked()
        hub.settle(claim, response())
    assert outcome == [response()] and channel.sent == []


async def test_a_saved_answer_found_before_sending_is_returned_without_sending() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)

    async def saved() -> ClientToolResponse | None:
        return response(text="answered before the restart")

    assert await hub.request("t1", request(), answered=saved) == response(text="answered before the restart")
    assert channel.sent == []


async def test_an_answer_after_the_call_gave_up_is_refused_until_and_after_it_is_forgotten() -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    with anyio.move_on_after(0.01):
        await hub.request("t1", request())
    assert hub.claim("t1", "req_1") is None  # the call is being settled: refused at once
    hub.forget("req_1")
    placeholder = hub.claim("t1", "req_1")  # unknown now: only a ledger can tell
    assert placeholder is not None and placeholder.request is None
    hub.settle(placeholder, None)
    assert hub.pending("t1") == [] and not hub.deliver("t1", response())


async def test_a_flood_of_refused_responses_is_logged_as_the_first_and_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    with caplog.at_level(logging.WARNING, logger="toolwire.client_tools"):
        for n in range(1_000):
            assert not hub.deliver("t1", response(f"req_{n}"))
        hub.detach("t1", channel)
    first, count = (record.getMessage() for record in caplog.records)
    assert "unknown request id 'req_0'" in first
    assert "refused 999 more client responses (thread t1)" in count


async def test_each_thread_gets_its_own_first_refusal_line(caplog: pytest.LogCaptureFixture) -> None:
    hub = ClientHub()
    with caplog.at_level(logging.WARNING, logger="toolwire.client_tools"):
        for thread_id in ("t1", "t2", "t1", "t2"):
            hub.deliver(thread_id, response("req_unknown"))
    assert [record.getMessage().count("(thread t1)") for record in caplog.records] == [1, 0]


async def test_threads_whose_client_never_comes_back_leave_nothing_behind() -> None:
    hub = ClientHub()
    retry = RetryWithBackoff(max_retries=1, initial_delay=0.001, max_delay=0.001)

    async def ask(thread_id: str) -> None:
        assert await hub.request(thread_id, request(thread_id, "req_" + thread_id), retry=retry) is None
        hub.forget("req_" + thread_id)  # the call is settled (its disconnection strategy's result)

    async def gone(count: int, prefix: str) -> None:
        async with anyio.create_task_group() as group:
            for n in range(count):
                group.start_soon(ask, f"{prefix}{n}")

    await gone(1_000, "warm")  # the first time, tables grow to hold 1,000 threads, and stay so
    gc.collect()
    before = sys.getallocatedblocks()
    await gone(1_000, "t")
    gc.collect()
    grown = sys.getallocatedblocks() - before
    assert grown < 300  # an event kept per thread is 6 blocks: 6,000 more


async def test_a_response_settled_just_before_the_interruption_reaches_the_call_is_taken() -> None:
    from toolwire import Cancellation
    from toolwire.guard import guarded

    hub, channel = ClientHub(), Recorder()
    hub.attach("t1", channel)
    outcome: list[Any] = []
    stop = Cancellation()

    async def ask() -> None:  # as the pipeline runs a client call: guarded by the run's cancellation
        outcome.append(await guarded(hub.request("t1", request()), None, stop))

    async with anyio.create_task_group() as group:
        group.start_soon(ask)
        await channel.arrived.wait()
        claim = hub.claim("t1", "req_1")
        assert claim is not None
        hub.settle(claim, response())  # saved and handed over ...
        stop.cancel("the user pressed stop")  # ... and the stop lands before the call has run again
    assert outcome == [response()]  # the answer was decided first: the call takes it
