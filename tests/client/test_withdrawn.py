"""Calls the server settles without this client's result: withdrawn (ToolUseCancel), refused results surfaced."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from typing import Any

import anyio
import pytest
from client_support import IDE_GROUP, TOKEN, Proxy, Server, plan

from toolwire.client import ClientToolCall, ClientToolCanceled, RemoteRunFinished, ResultRefused, connect

IDE = {"groups": [IDE_GROUP], "expanded_containers": ["IDE"]}


@pytest.fixture
async def proxy(server: Server) -> AsyncIterator[Proxy]:
    proxy = Proxy(server.url)
    async with anyio.create_task_group() as tasks:
        await proxy.serve(tasks)
        yield proxy
        tasks.cancel_scope.cancel()


async def test_a_stopped_run_cancels_the_handler_and_sends_no_result(server: Server) -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def slow() -> str:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    async with connect(server.url, token=TOKEN, handlers={"Slow": slow}, **IDE) as client:
        events: list[Any] = []

        async def stop_when_started() -> None:
            await started.wait()
            await client.stop("the user pressed stop")

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stop_when_started)
            events = [event async for event in client.send(plan(("Slow", {})))]
    [withdrawn] = [event for event in events if isinstance(event, ClientToolCanceled)]
    assert (withdrawn.code, withdrawn.running) == ("canceled", True) and cancelled.is_set()
    assert not [event for event in events if isinstance(event, ClientToolCall)]  # no result was sent
    assert isinstance(events[-1], RemoteRunFinished) and events[-1].reason == "canceled"


async def test_a_result_the_server_no_longer_takes_is_surfaced(server: Server, proxy: Proxy) -> None:
    started, finish, refused_once = anyio.Event(), anyio.Event(), anyio.Event()
    refused: list[ResultRefused] = []

    async def slow() -> str:
        started.set()
        await finish.wait()
        return "done, but late"

    def on_refused(event: ResultRefused) -> None:
        refused.append(event)
        refused_once.set()

    async with connect(proxy.url, token=TOKEN, handlers={"Slow": slow}, on_refused=on_refused, **IDE) as client:
        events: list[Any] = []
        sent = anyio.Event()

        async def settle_before_the_result() -> None:
            await started.wait()
            proxy.hold()  # the server's withdrawal reaches the client only after its result left
            await client.stop("the user pressed stop")
            with anyio.fail_after(30):
                while not settled(server, client.conversation_id):  # noqa: ASYNC110 (another process's state)
                    await anyio.sleep(0.02)
            finish.set()  # the handler returns: its result goes out, crossing the withdrawal
            await sent.wait()
            proxy.release()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(settle_before_the_result)
            async for event in client.send(plan(("Slow", {}))):
                events.append(event)
                if isinstance(event, ClientToolCall):
                    sent.set()
        with anyio.fail_after(30):
            await refused_once.wait()
    [call] = [event for event in events if isinstance(event, ClientToolCall)]
    [withdrawn] = [event for event in events if isinstance(event, ClientToolCanceled)]
    assert [event.request_id for event in refused] == [call.request.id] == [withdrawn.request_id]
    assert withdrawn.running is False  # it had finished: nothing to stop


def settled(server: Server, conversation: str) -> bool:
    with closing(sqlite3.connect(server.data_dir / "toolwire.sqlite3")) as db:
        rows = db.execute("SELECT state FROM ledger WHERE thread_id = ?", (conversation,)).fetchall()
    return bool(rows) and all(state == "terminal" for (state,) in rows)
