"""A real `toolwire serve` subprocess on loopback, and a bare protocol peer to talk to it."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Any

import anyio
from starlette.types import ASGIApp
from websockets.asyncio.client import ClientConnection, connect

from serving import Server, serve_app
from toolwire import Agent
from toolwire.messages import Message, message_from_dict
from toolwire.protocol import Configuration, Connection, Envelope, MessageBody, MessageType

TOKEN = "test-token-0123456789abcdef"
OTHER_TOKEN = "other-token-0123456789abcdef"

# The agent the server subprocess serves: a function model that follows the transcript, so a
# restarted process continues where the last one stopped.
APP_SOURCE = textwrap.dedent(
    '''
    from toolwire import Agent, ToolCall, tool
    from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
    from toolwire.messages import ToolResultMessage
    from toolwire.testing import FunctionModel

    @tool
    async def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "celsius": 21}

    PLAN = [
        ToolCall(id="c_expand", name="IDE", arguments={}),
        ToolCall(id="c_weather", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="c_open", name="OpenFile", arguments={"path": "config.toml"}),
    ]

    def script(request):
        done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        if len(done) < len(PLAN):
            return [PLAN[len(done)]]
        return "Done: " + str(done[-1].result.data)

    def make_agent(store):
        config = ClientToolsConfig(invoke_timeout=20, disconnection=RetryWithBackoff(max_retries=10))
        return Agent(FunctionModel(script), tools=[get_weather], store=store, client_tools=config)
    '''
)

IDE_GROUP: dict[str, Any] = {
    "name": "IDE",
    "description": "Editor tools",
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file in the editor",
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }
    ],
}


@contextmanager
def serve(tmp_path: Path, *extra: str, data_dir: Path | None = None) -> Iterator[Server]:
    """Start `toolwire serve --app agentapp:make_agent` on a free loopback port; stop it after."""
    with serve_app(tmp_path, APP_SOURCE, "agentapp", *extra, token=TOKEN, data_dir=data_dir) as server:
        yield server


class Peer:
    """A bare protocol client: the sans-I/O `Connection` over a `websockets` connection."""

    def __init__(self, socket: ClientConnection, connection: Connection) -> None:
        self.socket = socket
        self.connection = connection
        self.seen: list[Envelope] = []

    async def send(self, message: MessageBody) -> None:
        await self.socket.send(self.connection.send(message))

    async def receive(self) -> Envelope:
        """The next message (acknowledging as it goes)."""
        while True:
            if messages := await self.receive_frame():
                return messages[0]

    async def receive_frame(self) -> tuple[Envelope, ...]:
        """Read one frame, acknowledge what it brought, and return its messages (maybe none)."""
        data = await self.socket.recv()
        assert isinstance(data, bytes)
        received = self.connection.receive(data)
        for reply in received.replies:
            await self.socket.send(reply)
        if received.messages:
            if (ack := self.connection.ack()) is not None:
                await self.socket.send(ack)
            self.seen.extend(received.messages)
        return received.messages

    async def until(self, message_type: MessageType, **fields: Any) -> Envelope:
        """Read until a message of `message_type` whose fields match."""
        with anyio.fail_after(30):
            while True:
                envelope = await self.receive()
                message = envelope.message
                if message.type == message_type and all(getattr(message, k) == v for k, v in fields.items()):
                    return envelope


@asynccontextmanager
async def peer(
    url: str,
    *,
    token: str = TOKEN,
    conversation: str | None = None,
    connection: Connection | None = None,
    **options: Any,
) -> AsyncIterator[Peer]:
    """Connect, authenticate with a bearer token and complete the handshake."""
    connection = connection or Connection("client")
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, **options) as socket:
        await socket.send(connection.hello(conversation))
        client = Peer(socket, connection)
        data = await socket.recv()
        assert isinstance(data, bytes)
        received = connection.receive(data)
        assert any(isinstance(e.message, Configuration) for e in received.messages), received
        for reply in received.replies:
            await socket.send(reply)
        yield client


def stored_transcript(data_dir: Path, thread_id: str) -> list[Message]:
    """The transcript a server stored for a conversation, read from its SQLite file."""
    with closing(sqlite3.connect(data_dir / "toolwire.sqlite3")) as db:
        rows = db.execute("SELECT body FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)).fetchall()
    return [message_from_dict(json.loads(body)) for (body,) in rows]


@asynccontextmanager
async def served_in_process(agent: Agent, **options: Any) -> AsyncIterator[str]:
    """`create_app(agent, **options)` under uvicorn on loopback, in this process (its state visible); its /ws URL."""
    from toolwire.server import TokenAuth, create_app

    async with asgi_in_process(create_app(agent, auth=TokenAuth.single(TOKEN), **options)) as base:
        yield f"{base}/ws"


@asynccontextmanager
async def asgi_in_process(app: ASGIApp) -> AsyncIterator[str]:
    """An ASGI app under uvicorn on loopback, in this process; its base URL (`ws://host:port`)."""
    import uvicorn

    from toolwire.server.serve import listen

    listener = listen("127.0.0.1", 0)
    host, port = listener.getsockname()[:2]
    server = uvicorn.Server(uvicorn.Config(app, lifespan="off", log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [listener])
        with anyio.fail_after(10):
            while not server.started:  # noqa: ASYNC110 (uvicorn's own flag: no event to wait on)
                await anyio.sleep(0.01)
        try:
            yield f"ws://{host}:{port}"
        finally:
            server.should_exit = True
