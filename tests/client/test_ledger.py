"""The execution ledger: a request id runs its handler at most once, also across a dropped connection."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from client_support import IDE_GROUP, TOKEN, Proxy, Server

from toolwire.client import ClientToolCall, ConnectionClosed, ExecutionLedger, Reconnect, connect
from toolwire.client.link import hinted_url
from toolwire.errors import UsageError
from toolwire.protocol import ToolUseRequest


@pytest.fixture
async def proxy(server: Server) -> AsyncIterator[Proxy]:
    proxy = Proxy(server.url)
    async with anyio.create_task_group() as tasks:
        await proxy.serve(tasks)
        yield proxy
        tasks.cancel_scope.cancel()


async def test_a_result_lost_with_the_socket_is_replayed_and_the_handler_runs_once(proxy: Proxy) -> None:
    runs: list[str] = []

    async def open_file(path: str) -> str:
        runs.append(path)
        await proxy.cut()  # the socket dies after the tool ran, before its result is acknowledged
        return f"opened {path}"

    async with connect(proxy.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        events = [event async for event in client.send("Open the config file")]
        [entry] = list(client.ledger)
    assert runs == ["config.toml"]
    assert proxy.connections >= 2
    assert entry.result is not None
    assert (entry.result.result, entry.result.content) == ({"value": "opened config.toml"}, ())  # the value, once
    assert events[-1].output == "Done: opened config.toml"  # type: ignore[union-attr]


async def test_a_request_is_not_sent_again_to_a_client_that_reconnects_with_its_state(proxy: Proxy) -> None:
    runs: list[str] = []

    async def open_file(path: str) -> str:
        runs.append(path)
        await proxy.cut()
        return f"opened {path}"

    async with connect(proxy.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        events = [event async for event in client.send("Open the config file")]
    # The server retries (RetryWithBackoff) once the client is back, but the client has the
    # request (it acknowledged it): the server does not send it again, and waits for its result.
    calls = [(event.request.id, event.replayed) for event in events if isinstance(event, ClientToolCall)]
    assert [replayed for _, replayed in calls] == [False]
    assert runs == ["config.toml"]
    assert events[-1].output == "Done: opened config.toml"  # type: ignore[union-attr]


async def test_a_reconnect_names_the_conversation_in_its_url_for_a_load_balancer(proxy: Proxy) -> None:
    async def open_file(path: str) -> str:
        await proxy.cut()
        return f"opened {path}"

    async with connect(proxy.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        assert await client.ask("Open the config file") == "Done: opened config.toml"
    first, *again = proxy.targets
    assert "conversation=" not in first  # a new conversation: nothing to name yet
    assert again and all(target.endswith(f"?conversation={client.conversation_id}") for target in again)


async def test_connection_closed_surfaces_only_when_reconnecting_gives_up(server: Server, proxy: Proxy) -> None:
    async def open_file(path: str) -> str:
        proxy.refusing = True
        await proxy.cut()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    patience = Reconnect(attempts=3, initial_delay=0.01)
    async with connect(
        proxy.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}, reconnect=patience
    ) as client:
        with pytest.raises(ConnectionClosed, match="gave up reconnecting after 3 attempts"):
            await client.ask("Open the config file")
        with pytest.raises(ConnectionClosed):
            await client.ask("Anyone there?")
    # The run still waits for the client: another client of the conversation stops it.
    async with connect(server.url, token=TOKEN, conversation=client.conversation_id) as other:
        await other.stop("the test is over")


def test_the_ledger_starts_a_request_id_once() -> None:
    ledger = ExecutionLedger()
    request = ToolUseRequest(id="req_1", tool_name="OpenFile", arguments={}, execution="client")
    ledger.start(request)
    with pytest.raises(UsageError, match="already ran"):
        ledger.start(request)


def test_the_hint_replaces_an_older_one_and_keeps_the_other_parameters() -> None:
    assert hinted_url("ws://h:1/ws?token=a%26b", "conv_1") == "ws://h:1/ws?token=a%26b&conversation=conv_1"
    assert hinted_url("ws://h:1/ws?conversation=old&x=1", "conv_2") == "ws://h:1/ws?x=1&conversation=conv_2"
    assert hinted_url("ws://h:1/ws", "") == "ws://h:1/ws"
