"""How `/ws` is reached: straight from the app (no routing frames kept per connection), below a mount
point, through middleware added to the app; and what an idle connection keeps."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import anyio
import pytest
from server_support import TOKEN, asgi_in_process, peer, served_in_process
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.types import ASGIApp, Receive, Scope, Send
from websockets.exceptions import InvalidStatus

from toolwire import Agent
from toolwire.server import TokenAuth, create_app
from toolwire.store.memory import MemoryStore
from toolwire.testing import ScriptedModel


def agent() -> Agent:
    return Agent(ScriptedModel(["hi"]), store=MemoryStore())


class Recorder:
    """Middleware that notes the type and path of every connection it sees."""

    seen: list[tuple[str, str]] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        Recorder.seen.append((scope["type"], scope["path"]))
        await self.app(scope, receive, send)


async def test_an_idle_connection_keeps_one_task_the_one_its_app_runs_in() -> None:
    async with served_in_process(agent()) as url, AsyncExitStack() as stack:
        await stack.enter_async_context(peer(url, ping_interval=None))  # (warm: the first one's lazy set-up)
        before = asyncio.all_tasks()
        for _ in range(5):
            await stack.enter_async_context(peer(url, ping_interval=None))
        await anyio.wait_all_tasks_blocked()
        assert len(asyncio.all_tasks() - before) == 5


async def test_a_mounted_server_serves_its_websocket_below_the_mount_point() -> None:
    outer = Starlette(routes=[Mount("/tw", app=create_app(agent(), auth=TokenAuth.single(TOKEN)))])
    async with asgi_in_process(outer) as base, peer(f"{base}/tw/ws") as client:
        assert client.connection.is_open


async def test_a_mounted_server_does_not_answer_its_websocket_path_outside_the_mount_point() -> None:
    outer = Starlette(routes=[Mount("/tw", app=create_app(agent(), auth=TokenAuth.single(TOKEN)))])
    async with asgi_in_process(outer) as base:
        with pytest.raises(InvalidStatus):
            async with peer(f"{base}/ws"):
                pass


async def test_middleware_added_to_the_app_sees_each_websocket_connection() -> None:
    app = create_app(agent(), auth=TokenAuth.single(TOKEN))
    app.add_middleware(Recorder)
    Recorder.seen.clear()
    async with asgi_in_process(app) as base, peer(f"{base}/ws") as client:
        assert client.connection.is_open
    assert ("websocket", "/ws") in Recorder.seen
