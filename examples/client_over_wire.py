"""Client tools over the wire: `toolwire serve` runs the agent, a Python client brings its own tool.

Two programs in one file, as in an application:

- the server side is `make_agent`, served by `toolwire serve --app client_over_wire:make_agent`.
  Its model is a function (offline) that expands the client's "Editor" group, asks the server's
  `get_weather`, then the client's `OpenFile`, and answers with what they returned;
- the client side is `talk`: it connects with `toolwire.client.connect`, registers the Editor
  group with a handler for `OpenFile`, sends one message and prints what happens.

`main()` starts the server in a child process on a free port, runs the client, and stops the
server. Needs the `server` extra: `pip install 'toolwire[server]'`.

    python examples/client_over_wire.py
"""

from __future__ import annotations

import re
import secrets
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from toolwire import Agent, Toolbox, ToolCall
from toolwire.client import AnswerText, ClientToolCall, ServerToolCall, connect
from toolwire.messages import ToolResultMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn

# --- The server side ---------------------------------------------------------------------------

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Current weather of a city (a server tool: it runs in the server's process)."""
    return {"city": city, "celsius": 21}


def script(request: ModelRequest) -> Turn:
    """A stand-in for a real model: the next step depends on the last result it was sent."""
    results = [message for message in request.messages if isinstance(message, ToolResultMessage)]
    if not results:
        return [ToolCall(id="", name="Editor", arguments={})]  # expand the client's collapsed group
    if len(results) == 1:
        return [ToolCall(id="", name="get_weather", arguments={"city": "Paris"})]
    if len(results) == 2:
        return [ToolCall(id="", name="OpenFile", arguments={"path": "notes.md"})]
    return f"It is {results[1].result.data['celsius']} °C in Paris; the editor says: {results[2].result.data}"


def make_agent(store: Store) -> Agent:
    """What `toolwire serve --app` calls: the served agent, on the server's store."""
    return Agent(FunctionModel(script), tools=toolbox, store=store)


# --- The client side ---------------------------------------------------------------------------

EDITOR = {
    "name": "Editor",
    "description": "The user's text editor",
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file in the editor",
            "parametersSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        }
    ],
}


async def open_file(path: str) -> str:
    """The handler of OpenFile: it runs here, in the client's process, when the model calls it."""
    return f"{path} is open"


async def talk(url: str, token: str) -> None:
    async with connect(url, token=token, groups=[EDITOR], handlers={"OpenFile": open_file}) as client:
        async for event in client.send("What is the weather in Paris? Then open my notes."):
            match event:
                case ServerToolCall(tool_name=name, arguments=arguments):
                    print(f"server runs {name} {arguments}")
                case ClientToolCall(tool_name=name, request=request, result=result):
                    print(f"client ran {name} {request.arguments}: {'ok' if result.success else result.error_code}")
                case AnswerText(text=text):
                    print(text, end="")
                case _:
                    pass
        print()


# --- Both, for the example ---------------------------------------------------------------------


def main() -> None:
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory() as data:
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--app", "client_over_wire:make_agent"]
        command += ["--port", "0", "--token", token, "--data-dir", data]
        server = subprocess.Popen(
            command, cwd=Path(__file__).parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            assert server.stdout is not None
            for line in server.stdout:  # "toolwire serving ws://127.0.0.1:PORT/ws (...)"
                if found := re.search(r"serving (ws://\S+)", line):
                    break
            else:
                sys.exit("the server did not start")
            anyio.run(talk, found.group(1), token)
        finally:
            server.send_signal(signal.SIGINT)  # a graceful stop, as Ctrl-C
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
