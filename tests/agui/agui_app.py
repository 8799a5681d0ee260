"""The agent the AG-UI tests serve (`toolwire serve --app agui_app:make_agent --agui`).

What the model does depends on the last message: "weather" calls the server's `get_weather`;
"pick" calls the front end's `pick_color`; "both" calls `get_weather` and `pick_color` in one
batch; "run" calls `run_command` (a `local` tool: the default policy asks for consent); "secrets"
calls `read_secret` twice in one batch (it requires permission: two questions at once); "slow PATH"
calls `wait_gate`, which returns once a writer opens the FIFO at PATH; any other prompt is answered
"Hello!". After a tool result it answers with what it got.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio.to_thread

from toolwire import Agent, ToolCall, tool
from toolwire.client_tools import ClientToolsConfig
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn


@tool(mode="read")
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(mode="local")
def run_command(command: str) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command}"


@tool(mode="read", requires_permission=True)
def read_secret(name: str) -> str:
    """Read a secret (pretend)."""
    return f"{name}=hunter2"


@tool(mode="read")
async def wait_gate(gate: str) -> str:
    """Wait until the test opens the FIFO `gate` for writing, then return what it wrote."""
    return await anyio.to_thread.run_sync(Path(gate).read_text, abandon_on_cancel=True)


def script(request: ModelRequest) -> Turn:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        if last.content.startswith("slow "):
            return [ToolCall(id="", name="wait_gate", arguments={"gate": last.content.removeprefix("slow ")})]
        match last.content:
            case "weather":
                return [ToolCall(id="", name="get_weather", arguments={"city": "Paris"})]
            case "run":
                return [ToolCall(id="", name="run_command", arguments={"command": "ls"})]
            case "secrets":
                return [
                    ToolCall(id="", name="read_secret", arguments={"name": "a"}),
                    ToolCall(id="", name="read_secret", arguments={"name": "b"}),
                ]
            case "pick":
                return [ToolCall(id="", name="pick_color", arguments={"options": ["red", "blue"]})]
            case "both":
                return [
                    ToolCall(id="", name="get_weather", arguments={"city": "Oslo"}),
                    ToolCall(id="", name="pick_color", arguments={"options": ["green"]}),
                ]
            case _:
                return "Hello!"
    assert isinstance(last, ToolResultMessage)
    results = [message for message in request.messages[-2:] if isinstance(message, ToolResultMessage)]
    return "Got " + json.dumps({message.tool_name: message.result.payload() for message in results}, sort_keys=True)


def make_agent(store: Store) -> Agent:
    return Agent(
        FunctionModel(script),
        tools=[get_weather, run_command, read_secret, wait_gate],
        store=store,
        client_tools=ClientToolsConfig(invoke_timeout=60),
    )


def make_impatient_agent(store: Store) -> Agent:
    """The same agent, whose front-end calls time out after a second."""
    return Agent(
        FunctionModel(script),
        tools=[get_weather, run_command, read_secret],
        store=store,
        client_tools=ClientToolsConfig(invoke_timeout=1),
    )
