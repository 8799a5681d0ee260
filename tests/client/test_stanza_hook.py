"""`Link.on_stanza`: told each new server stanza id once, in order, also across a dropped socket."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
from client_support import IDE_GROUP, TOKEN, Proxy, Server

from toolwire.client import Client, Reconnect


@pytest.fixture
async def proxy(server: Server) -> AsyncIterator[Proxy]:
    proxy = Proxy(server.url)
    async with anyio.create_task_group() as tasks:
        await proxy.serve(tasks)
        yield proxy
        tasks.cancel_scope.cancel()


async def test_each_server_stanza_is_told_once_in_order_across_a_reconnect(proxy: Proxy) -> None:
    stanzas: list[int] = []

    async def open_file(path: str) -> str:
        await proxy.cut()  # the server's next stanzas go out on the next socket (and some are replayed)
        return f"opened {path}"

    client = Client(proxy.url, token=TOKEN, reconnect=Reconnect())
    client.handlers.add("OpenFile", open_file)
    client.link.on_stanza = stanzas.append
    async with anyio.create_task_group() as tasks:
        await client.start(tasks, None)
        await client.register([IDE_GROUP], expanded_containers=["IDE"])
        assert await client.ask("Open the config file") == "Done: opened config.toml"
        await client.aclose()
        tasks.cancel_scope.cancel()
    assert proxy.connections >= 2
    assert len(stanzas) > 3
    assert stanzas == list(range(-1, -len(stanzas) - 1, -1))  # -1, -2, …: no gap, no repeat
