"""The reference the AG-UI tests compare `/agui` with: pydantic-ai's `AGUIAdapter`, on the same script.

The model is agui_app.py's script for a pydantic-ai `FunctionModel`: "weather" calls the server's
`get_weather` (Paris), "pick" calls the front end's `pick_color` (red, blue), "both" calls both in
one batch (Oslo; green), "run" calls `run_command` (ls; it requires approval, as toolwire's default
policy asks about a `local` tool), any other prompt is answered "Hello!", and after tool results it answers
"Got " and the results as JSON. Served by uvicorn (`uvicorn reference_app:app`) at `POST /agui`,
with the adapter's defaults: the client's messages are the history (nothing is kept between requests).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

Call = tuple[str, dict[str, object]]


def script(messages: list[ModelMessage]) -> str | list[Call]:
    """What the model answers to the conversation: text, or the tool calls of one batch (agui_app.script).

    As there, the last message decides: a prompt, or the results of the calls (the last request's parts).
    """
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    last = request.parts[-1]
    if isinstance(last, ToolReturnPart):
        results = {part.tool_name: part.content for part in request.parts if isinstance(part, ToolReturnPart)}
        return "Got " + json.dumps(results, sort_keys=True)
    assert isinstance(last, UserPromptPart)
    match last.content:
        case "weather":
            return [("get_weather", {"city": "Paris"})]
        case "run":
            return [("run_command", {"command": "ls"})]
        case "pick":
            return [("pick_color", {"options": ["red", "blue"]})]
        case "both":
            return [("get_weather", {"city": "Oslo"}), ("pick_color", {"options": ["green"]})]
        case _:
            return "Hello!"


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
    """The script as a streamed response (the adapter streams): the text in one delta, or each call whole."""
    turn = script(messages)
    if isinstance(turn, str):
        yield turn
        return
    yield {index: DeltaToolCall(name, json.dumps(arguments)) for index, (name, arguments) in enumerate(turn)}


agent = Agent(FunctionModel(stream_function=stream), output_type=[str, DeferredToolRequests])


@agent.tool_plain
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@agent.tool_plain(requires_approval=True)
def run_command(command: str) -> str:
    """Run a shell command (pretend)."""
    return f"ran {command}"


async def agui(request: Request) -> Response:
    return await AGUIAdapter[None, str | DeferredToolRequests].dispatch_request(request, agent=agent)


app = Starlette(routes=[Route("/agui", agui, methods=["POST"])])
