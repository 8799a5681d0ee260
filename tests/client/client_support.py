"""A real `toolwire serve` subprocess for the client's tests, and a TCP proxy that can cut connections.

The server is started by tests/serving.py, with an agent whose plan the test chooses:
a user message `plan: [["Tool", {...}], ...]` makes the model call those tools one by one, then
answer "Done: <last value>" (or "Failed (<TYPE> <code>): <error>" when the last call failed).
Any other message follows the plan of tests/server: expand IDE, get_weather, OpenFile.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from serving import Server, serve_app

TOKEN = "client-test-token-0123456789abcdef"

APP_SOURCE = textwrap.dedent(
    '''
    import json

    import anyio

    from toolwire import Agent, ToolCall, tool
    from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
    from toolwire.errors import ProviderError
    from toolwire.messages import ToolResultMessage, UserMessage
    from toolwire.testing import FunctionModel

    @tool
    async def get_weather(city: str) -> dict:
        """The weather in a city."""
        return {"city": city, "celsius": 21}

    @tool(requires_permission=True)
    async def reset_cache() -> str:
        """Empty the cache."""
        return "cache emptied"

    @tool
    async def wait_for_ever() -> str:
        """Run until canceled."""
        await anyio.Event().wait()
        return "never"

    DEFAULT = [["IDE", {}], ["get_weather", {"city": "Paris"}], ["OpenFile", {"path": "config.toml"}]]

    def script(request):
        index = max(i for i, m in enumerate(request.messages) if isinstance(m, UserMessage))
        prompt = request.messages[index].content
        if prompt == "fail":
            raise ProviderError("scripted", "the model is down")
        plan = json.loads(prompt.removeprefix("plan:")) if prompt.startswith("plan:") else DEFAULT
        done = [m for m in request.messages[index:] if isinstance(m, ToolResultMessage)]
        if len(done) < len(plan):
            name, arguments = plan[len(done)]
            return [ToolCall(id=f"c{index}_{len(done)}", name=name, arguments=arguments)]
        last = done[-1].result if done else None
        if last is None or last.success:
            return "Done: " + str(None if last is None else last.data)
        return f"Failed ({last.type.name} {last.error_code}): {last.error}"

    def make_agent(store):
        # Schemas unchecked here, so that the client's own argument check is what answers.
        config = ClientToolsConfig(
            invoke_timeout=20,
            disconnection=RetryWithBackoff(max_retries=10, initial_delay=0.05),
            validate_schema_on_registration=False,
        )
        tools = [get_weather, reset_cache, wait_for_ever]
        return Agent(FunctionModel(script), tools=tools, store=store, client_tools=config)
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
        },
        {"name": "SaveFile", "description": "Save the open file", "requiresPermission": True},
        {"name": "Explode", "description": "Always fails"},
        {"name": "Slow", "description": "Takes its time"},
        {"name": "Missing", "description": "This client has no handler for it"},
    ],
}


def plan(*calls: tuple[str, dict[str, Any]]) -> str:
    """The user message that makes the test agent call these tools, in order."""
    return "plan:" + json.dumps([list(call) for call in calls])


@contextmanager
def serve(tmp_path: Path) -> Iterator[Server]:
    """Start `toolwire serve` with the test agent on a free loopback port; stop it after."""
    with serve_app(tmp_path, APP_SOURCE, "clientapp", token=TOKEN) as server:
        yield server


class Proxy:
    """A loopback TCP proxy in front of the server; `cut()` drops every connection, as a network would."""

    def __init__(self, upstream: str) -> None:
        match = re.fullmatch(r"ws://([^:/]+):(\d+)(/.*)", upstream)
        assert match, upstream
        self.host, self.port, self.path = match.group(1), int(match.group(2)), match.group(3)
        self.url = ""
        self.connections = 0
        self.targets: list[str] = []
        """The request target (path and query) of each connection's upgrade request, in order."""
        self.refusing = False
        """Close new connections at once, as a server that went away would."""
        self._streams: list[SocketStream] = []
        self._downstream = anyio.Event()
        self._downstream.set()

    async def serve(self, tasks: TaskGroup) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(SocketAttribute.local_port)
        self.url = f"ws://127.0.0.1:{port}{self.path}"

        async def accept() -> None:
            async with listener:
                await listener.serve(self._forward, tasks)

        tasks.start_soon(accept)

    async def _forward(self, client: SocketStream) -> None:
        if self.refusing:
            await client.aclose()
            return
        self.connections += 1
        server = await anyio.connect_tcp(self.host, self.port)
        self._streams += [client, server]
        async with client, server, anyio.create_task_group() as pipes:
            pipes.start_soon(self._pump, client, server, False)
            pipes.start_soon(self._pump, server, client, True)

    def hold(self) -> None:
        """Hold what the server sends (it is delivered, in order, on `release()`)."""
        self._downstream = anyio.Event()

    def release(self) -> None:
        """Deliver what the server sent while held, and what follows."""
        self._downstream.set()

    async def _pump(self, source: SocketStream, sink: SocketStream, downstream: bool) -> None:
        first = not downstream
        try:
            async for chunk in source:
                if downstream:
                    await self._downstream.wait()
                elif first:  # `GET /ws?... HTTP/1.1` (a loopback upgrade request comes whole in its first chunk)
                    first = False
                    self.targets.append(chunk.split(b"\r\n", 1)[0].split(b" ")[1].decode())
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        finally:
            await sink.aclose()

    async def cut(self) -> None:
        """Close both ends of every connection now."""
        streams, self._streams = self._streams, []
        for stream in streams:
            await stream.aclose()
