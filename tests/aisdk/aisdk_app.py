"""The agent the AI SDK tests serve (`toolwire serve --app aisdk_app:make_agent --ai-sdk`).

What the model does depends on the last user message: "weather" calls the server's `get_weather`;
"pick" calls the front end's `pick_color`; "delete" calls `delete_file`, which the policy denies;
"explode" calls `explode`, which fails; "run" calls `run_command` (a `local` tool: the default
policy asks for consent; "run twice" calls it twice in one batch); "slow PATH" calls `wait_gate`,
which returns once a writer opens the FIFO at PATH (the test holds the run there); any other
prompt is answered "Hello!". After a tool result it answers with what it got (the results of a
batch as a list).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio.to_thread

from toolwire import Agent, ToolCall, tool
from toolwire.client_tools import ClientToolsConfig
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.policy import PermissionPolicy
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn

CALLS = {
    "weather": ("get_weather", {"city": "Paris"}),
    "pick": ("pick_color", {"options": ["red", "blue"]}),
    "delete": ("delete_file", {"path": "notes.txt"}),
    "explode": ("explode", {}),
    "run": ("run_command", {"command": "ls"}),
}


@tool(mode="read")
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(mode="destructive")
def delete_file(path: str) -> str:
    """Delete a file (the policy never lets it run)."""
    raise AssertionError("denied by the policy: never runs")


@tool(mode="read")
def explode() -> str:
    """A tool that fails."""
    raise RuntimeError("the tool broke")


@tool(mode="local")
def run_command(command: str) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command}"


@tool(mode="read")
async def wait_gate(gate: str) -> str:
    """Wait until the test opens the FIFO `gate` for writing, then return what it wrote."""
    return await anyio.to_thread.run_sync(Path(gate).read_text, abandon_on_cancel=True)


def script(request: ModelRequest) -> Turn:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        if last.content.startswith("slow "):
            return [ToolCall(id="", name="wait_gate", arguments={"gate": last.content.removeprefix("slow ")})]
        if last.content == "run twice":
            return [
                ToolCall(id="", name="run_command", arguments={"command": "ls"}),
                ToolCall(id="", name="run_command", arguments={"command": "pwd"}),
            ]
        if last.content in CALLS:
            name, arguments = CALLS[last.content]
            return [ToolCall(id="", name=name, arguments=arguments)]
        return "Hello!"
    assert isinstance(last, ToolResultMessage)
    asked = max(i for i, message in enumerate(request.messages) if isinstance(message, UserMessage))
    results = [message for message in request.messages[asked:] if isinstance(message, ToolResultMessage)]
    if len(results) > 1:
        return "Got " + json.dumps([message.result.payload() for message in results])
    return "Got " + json.dumps({last.tool_name: last.result.payload()}, sort_keys=True)


def make_agent(store: Store, invoke_timeout: float = 60) -> Agent:
    return Agent(
        FunctionModel(script),
        tools=[get_weather, delete_file, explode, run_command, wait_gate],
        store=store,
        policy=PermissionPolicy(deny=["delete_*"], store=store),
        client_tools=ClientToolsConfig(invoke_timeout=invoke_timeout),
    )


def make_impatient_agent(store: Store) -> Agent:
    """The same agent, whose front-end calls time out after a second."""
    return make_agent(store, invoke_timeout=1)
