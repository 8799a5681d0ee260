"""Admission control: at most `max_runs` runs at once, a FIFO queue whose clients see their place, 503 past it.

A real server on loopback (uvicorn, in this process) and the shipped Python client; the model waits
on a gate per prompt, so the test decides when each run ends. No sleeps: every step waits for a state.
"""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from server_support import TOKEN, Peer, peer, served_in_process
from websockets.asyncio.client import connect as ws_connect

from serving import serve_app
from toolwire import Agent
from toolwire.client import (
    Client,
    Event,
    RemoteRunFinished,
    RunFailed,
    RunQueued,
    RunStarted,
    connect,
)
from toolwire.errors import UsageError
from toolwire.messages import AssistantMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.protocol import (
    RUN_QUEUE,
    Connection,
    ErrorCode,
    ErrorMessage,
    MessageType,
    RunStatus,
    UserMessageBody,
)
from toolwire.server.admission import Admission, Ticket
from toolwire.server.server_conversation import ServerConversation
from toolwire.store.memory import MemoryStore
from toolwire.testing import FunctionModel

HOLDING_APP = textwrap.dedent(
    """
    import anyio
    from toolwire import Agent
    from toolwire.testing import FunctionModel

    async def hold(request):
        await anyio.sleep_forever()

    def make_agent(store):
        return Agent(FunctionModel(hold), store=store)
    """
)


class Gated:
    """A model that answers a prompt once its gate is open (`open(prompt)`)."""

    def __init__(self) -> None:
        self.gates: dict[str, anyio.Event] = {}
        self.asked: list[str] = []

    def gate(self, prompt: str) -> anyio.Event:
        return self.gates.setdefault(prompt, anyio.Event())

    def open(self, prompt: str) -> None:
        self.gate(prompt).set()

    async def __call__(self, request: ModelRequest) -> str:
        prompt = next(m.content for m in reversed(request.messages) if isinstance(m, UserMessage))
        self.asked.append(prompt)
        await self.gate(prompt).wait()
        return f"answer to {prompt}"


@asynccontextmanager
async def clients(count: int, **options: Any) -> AsyncIterator[tuple[Gated, MemoryStore, list[Client]]]:
    model, store = Gated(), MemoryStore()
    async with served_in_process(Agent(FunctionModel(model), store=store), **options) as url, AsyncExitStack() as stack:
        connected = [await stack.enter_async_context(connect(url, token=TOKEN)) for _ in range(count)]
        yield model, store, connected


async def next_event(events: AsyncIterator[Event]) -> Event:
    with anyio.fail_after(10):
        return await anext(events)


async def until_finished(events: AsyncIterator[Event]) -> list[Event]:
    seen: list[Event] = []
    with anyio.fail_after(10):
        async for event in events:
            seen.append(event)
    assert isinstance(seen[-1], RemoteRunFinished)
    return seen


async def test_a_run_past_the_limit_waits_its_turn_and_one_past_the_queue_is_refused() -> None:
    async with clients(3, max_runs=1, run_queue=1) as (model, store, (a, b, c)):
        first = a.send("a")
        assert isinstance(await next_event(first), RunStarted)
        second = b.send("b")
        queued = await next_event(second)
        assert isinstance(queued, RunQueued) and queued.position == 1 and queued.message_id is not None

        with pytest.raises(RunFailed) as refused:
            await c.ask("c")
        assert refused.value.code == ErrorCode.SERVER_BUSY
        assert "server busy" in str(refused.value)
        assert await store.load_messages(c.conversation_id) == []  # refused: nothing stored, nothing to resume

        assert model.asked == ["a"]  # b waits: its model was not called
        model.open("a")
        [*_, finished] = await until_finished(first)
        assert isinstance(finished, RemoteRunFinished) and finished.output == "answer to a"

        started = await next_event(second)
        assert isinstance(started, RunStarted) and started.run_id == queued.run_id
        model.open("b")
        [*_, finished] = await until_finished(second)
        assert isinstance(finished, RemoteRunFinished) and finished.output == "answer to b"
        assert await store.load_messages(b.conversation_id) == [UserMessage("b"), AssistantMessage("answer to b")]

        model.open("c, again")  # the queue is empty again: the refused client's retry runs
        assert await c.ask("c, again") == "answer to c, again"


async def test_positions_move_up_and_a_stopped_queued_run_ends_at_once() -> None:
    async with clients(3, max_runs=1, run_queue=2) as (model, store, (a, b, c)):
        first = a.send("a")
        assert isinstance(await next_event(first), RunStarted)
        second, third = b.send("b"), c.send("c")
        first_queued = await next_event(second)
        assert isinstance(first_queued, RunQueued) and first_queued.position == 1
        queued = await next_event(third)
        assert isinstance(queued, RunQueued) and queued.position == 2

        await b.stop()  # b leaves the queue: it ends canceled, its model never called
        [*_, stopped] = await until_finished(second)
        assert isinstance(stopped, RemoteRunFinished) and stopped.reason == "canceled"
        moved = await next_event(third)
        assert isinstance(moved, RunQueued) and moved.position == 1 and moved.run_id == queued.run_id

        model.open("a")
        await until_finished(first)
        assert isinstance(await next_event(third), RunStarted)
        model.open("c")
        [*_, finished] = await until_finished(third)
        assert isinstance(finished, RemoteRunFinished) and finished.output == "answer to c"
        assert model.asked == ["a", "c"]
        history = await store.load_messages(b.conversation_id)
        assert history[0] == UserMessage("b") and not any(isinstance(m, AssistantMessage) for m in history)


async def test_a_queued_run_goes_on_when_its_client_leaves_and_a_returning_client_sees_its_place() -> None:
    async with clients(1, max_runs=1, run_queue=2) as (model, store, (a,)):
        url = a.link.url.split("?", 1)[0]
        first = a.send("a")
        assert isinstance(await next_event(first), RunStarted)
        async with connect(url, token=TOKEN) as b:
            thread = b.conversation_id
            queued = await next_event(b.send("b"))
            assert isinstance(queued, RunQueued) and queued.position == 1
        # b is gone; its run still waits. Back on the same conversation, the client is told its place
        # (a bare protocol client that lists `runQueue`: unnumbered, so not replayed, but sent anew).
        async with returning(url, thread, features=(RUN_QUEUE,)) as back:
            told = (await back.until(MessageType.RUN_STATUS, status="queued")).message
            assert isinstance(told, RunStatus) and told.position == 1 and told.run_id == queued.run_id
            model.open("a")
            model.open("b")
            await until_finished(first)
            await back.until(MessageType.RUN_STATUS, status="started", run_id=queued.run_id)
            await back.until(MessageType.RUN_STATUS, status="finished", output="answer to b")
        assert await store.load_messages(thread) == [UserMessage("b"), AssistantMessage("answer to b")]

        # A client without the feature is not sent the queued status (a peer of the published protocol
        # would refuse the state it does not know): it sees the run start, later.
        first = a.send("a2")
        assert isinstance(await next_event(first), RunStarted)
        async with returning(url, thread, features=()) as plain:
            await plain.send(UserMessageBody(id="m2", content="b2"))
            model.open("a2")
            model.open("b2")
            started = await plain.until(MessageType.RUN_STATUS, status="started", message_id="m2")
            assert not [e for e in plain.seen if isinstance(e.message, RunStatus) and e.message.status == "queued"]
            assert started.stanza_id < 0


async def test_a_resumed_run_goes_through_admission_too() -> None:
    store = MemoryStore()
    model = Gated()
    agent = Agent(FunctionModel(model), store=store)
    await store.create_thread("t1", principal="alice")
    await store.append_messages("t1", [UserMessage("left by a crash")])
    admission = Admission(1, 0)
    held = admission.enter()  # another run holds the only slot
    conversation = ServerConversation(agent, "t1", "alice", None, admission=admission)
    assert admission.full
    async with anyio.create_task_group() as runs:
        assert conversation.start(runs, None)  # a resumed run is never refused: it waits, past the queue's bound
        assert conversation.busy and admission.waiting == 1
        await anyio.wait_all_tasks_blocked()
        assert model.asked == []
        model.open("left by a crash")
        admission.leave(held)
        await conversation.wait_idle()
    assert model.asked == ["left by a crash"]
    assert admission.running == 0 and admission.waiting == 0


async def test_admission_is_fifo_and_bounded() -> None:
    admission = Admission(2, 2, interval=0)
    slots = [admission.enter(), admission.enter()]
    assert all(ticket.holds for ticket in slots) and not admission.full
    waiting = [admission.enter(), admission.enter()]
    assert admission.full and [admission.position(t) for t in waiting] == [1, 2]
    reported: dict[int, list[int]] = {0: [], 1: []}

    async def wait(index: int, ticket: Ticket) -> None:
        async def report(position: int) -> None:
            reported[index].append(position)

        await admission.wait(ticket, report)

    async with anyio.create_task_group() as group:
        for index, ticket in enumerate(waiting):
            group.start_soon(wait, index, ticket)
        await anyio.wait_all_tasks_blocked()
        assert reported == {0: [1], 1: [2]}
        admission.leave(slots[0])  # the first waiting run takes the slot, the second moves up
        assert waiting[0].holds and admission.position(waiting[1]) == 1 and not admission.full
        await anyio.wait_all_tasks_blocked()
        assert reported == {0: [1], 1: [2, 1]}
        admission.withdraw(waiting[1])  # let through without a slot (it was stopped)
    assert waiting[1].admitted.is_set() and not waiting[1].holds and admission.waiting == 0
    for ticket in (slots[1], waiting[0], waiting[1]):
        admission.leave(ticket)
    assert admission.running == 0
    with pytest.raises(UsageError):
        Admission(0)
    with pytest.raises(UsageError):
        Admission(1, -1)
    unlimited = Admission(None)
    assert all(unlimited.enter().holds for _ in range(1000)) and not unlimited.full


@asynccontextmanager
async def returning(url: str, thread: str, *, features: tuple[str, ...]) -> AsyncIterator[Peer]:
    """A bare protocol client resuming `thread` (with no state: it is sent what the conversation kept)."""
    connection = Connection("client")
    async with ws_connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as socket:
        await socket.send(connection.hello(thread, features=features))
        client = Peer(socket, connection)
        with anyio.fail_after(10):
            while not connection.is_open:
                await client.receive_frame()
        yield client


async def test_toolwire_serve_takes_the_limits_from_its_options(tmp_path: Path) -> None:
    options = ("--max-runs", "1", "--run-queue", "0")
    with serve_app(tmp_path, HOLDING_APP, "holding", *options, token=TOKEN) as server:
        async with peer(server.url) as first, peer(server.url) as second:
            await first.send(UserMessageBody(id="m1", content="hold"))
            await first.until(MessageType.RUN_STATUS, status="started")
            await second.send(UserMessageBody(id="m2", content="no room"))
            refused = (await second.until(MessageType.ERROR)).message
            assert isinstance(refused, ErrorMessage)
            assert (refused.code, refused.recoverable, refused.originating_id) == (ErrorCode.SERVER_BUSY, True, 1)
            assert "server busy" in refused.message
