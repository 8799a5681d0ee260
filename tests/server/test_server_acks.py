"""When the server acknowledges: late (`ACK_DELAY`), or at once when `ACK_SOON` stanzas wait.

An in-process server (uvicorn on a loopback socket, as `toolwire serve`), so the delay can be set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from server_support import Peer, peer, served_in_process

import toolwire.server.frames as frames
from toolwire import Agent
from toolwire.protocol import ControlStop
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import ScriptedModel


@asynccontextmanager
async def in_process_server(tmp_path: Path) -> AsyncIterator[str]:
    async with (
        SqliteStore.in_directory(tmp_path / "data") as store,
        served_in_process(Agent(ScriptedModel(["hello"]), store=store)) as url,
    ):
        yield url


async def pump_until(client: Peer, done: Callable[[], bool], seconds: float = 10) -> float:
    """Read (and act on) frames until `done()`; return how long it took."""
    started = anyio.current_time()
    with anyio.fail_after(seconds):
        while not done():
            with anyio.move_on_after(0.01):
                data = await client.socket.recv()
                assert isinstance(data, bytes)
                for reply in client.connection.receive(data).replies:
                    await client.socket.send(reply)
    return anyio.current_time() - started


def acknowledged(client: Peer) -> Callable[[], bool]:
    def check() -> bool:
        state = client.connection.state()
        return state is not None and not state.outbox

    return check


async def test_a_stanza_is_acknowledged_after_the_delay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "ACK_DELAY", 0.2)
    async with in_process_server(tmp_path) as url, peer(url) as client:
        await client.send(ControlStop())
        assert not acknowledged(client)()
        assert 0.2 <= await pump_until(client, acknowledged(client))


async def test_ack_soon_stanzas_are_acknowledged_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(frames, "ACK_DELAY", 60.0)
    async with in_process_server(tmp_path) as url, peer(url) as client:
        for _ in range(frames.ACK_SOON):
            await client.send(ControlStop())
        assert await pump_until(client, acknowledged(client)) < 30
