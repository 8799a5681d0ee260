"""The agent the AI SDK tests serve (`toolwire serve --app aisdk_app:make_agent --ai-sdk`).

What the model does depends on the last user message: "weather" calls the server's `get_weather`;
"pick" calls the front end's `pick_color`; "delete" calls `delete_file`, which the policy denies;
"explode" calls `explode`, which fails; any other prompt is answered "Hello!". After a tool result
it answers with what it got.
"""

from __future__ import annotations

import json

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


def script(request: ModelRequest) -> Turn:
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        if last.content in CALLS:
            name, arguments = CALLS[last.content]
            return [ToolCall(id="", name=name, arguments=arguments)]
        return "Hello!"
    assert isinstance(last, ToolResultMessage)
    return "Got " + json.dumps({last.tool_name: last.result.payload()}, sort_keys=True)


def make_agent(store: Store) -> Agent:
    return Agent(
        FunctionModel(script),
        tools=[get_weather, delete_file, explode],
        store=store,
        policy=PermissionPolicy(deny=["delete_*"], store=store),
        client_tools=ClientToolsConfig(invoke_timeout=60),
    )
