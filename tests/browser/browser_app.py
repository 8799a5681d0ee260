"""The agent the browser tests serve: `toolwire serve --app browser_app:make_agent`.

A function model reads the first word of the latest user message and follows that plan, expanding
the page's "Page" group first when one of its tools is needed and only the container is offered;
once every call of the plan has a result it answers with the outcomes:

| message | calls |
|---|---|
| `tools` | none: answers with the names of the tools it was offered |
| `selection` | GetSelection |
| `delete` | DeleteNotes (needs consent) |
| `ask` | GetUserInput (waits for the person, on the page) |
| `tour` | get_weather (a server tool; twice, once failing), SetTheme, ShowMessage, DeleteNotes; answers in words |
| `Undo …` | the tool and arguments the page's Undo button names |
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolwire import Agent, ToolCall, ToolError, tool
from toolwire.client_tools import ClientToolsConfig, RetryWithBackoff
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn

SERVER_TOOLS = {"get_weather"}

PLANS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "tools": [],
    "selection": [("GetSelection", {})],
    "delete": [("DeleteNotes", {})],
    "ask": [("GetUserInput", {"question": "What should I call you?"})],
    "tour": [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Atlantis"}),
        ("SetTheme", {"theme": "dark"}),
        ("ShowMessage", {"text": "Paris is sunny today.", "severity": "info"}),
        ("DeleteNotes", {}),
    ],
}


@tool
async def get_weather(city: str) -> dict[str, object]:
    """The weather in a city."""
    if city == "Atlantis":
        raise ToolError(f"No weather station in {city}", code="not_found")
    return {"city": city, "celsius": 21, "sky": "sunny"}


def _plan(text: str) -> list[tuple[str, dict[str, Any]]]:
    if match := re.match(r"Undo the \w+ call: please call (\w+) with (\{.*\})\.$", text, re.S):
        return [(match.group(1), json.loads(match.group(2)))]
    return PLANS.get(text.split()[0].lower() if text.split() else "", [])


def script(request: ModelRequest) -> Turn:
    """The next call of the message's plan, or the answer once every call has a result."""
    asked = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
    last = request.messages[asked[-1]]
    assert isinstance(last, UserMessage)
    done = [m for m in request.messages[asked[-1] :] if isinstance(m, ToolResultMessage)]
    offered = {t.name for t in request.tools}
    if last.content.startswith("tools"):
        return "Offered: " + ", ".join(sorted(offered))
    plan = _plan(last.content)
    calls = [name for name, _ in plan]
    made = [m for m in done if m.tool_name in calls]
    if len(made) < len(plan):
        name, arguments = plan[len(made)]
        if name not in offered and name not in SERVER_TOOLS and "Page" in offered:
            return [ToolCall(id=f"c{len(asked)}_{len(done)}_expand", name="Page", arguments={})]
        return [ToolCall(id=f"c{len(asked)}_{len(done)}", name=name, arguments=arguments)]
    if plan is PLANS["tour"] and [m.result.success for m in made] == [True, False, True, True, True]:
        return (
            "It is 21 °C and sunny in Paris; Atlantis has no weather station. I switched the page to the dark "
            "theme, told you so in a message, and deleted your notes: the Undo button brings them back."
        )
    outcomes = [
        f"{m.tool_name}={m.result.type.name}:{m.result.data if m.result.success else m.result.error}" for m in made
    ]
    return "Done. " + " | ".join(outcomes)


def make_agent(store: Store) -> Agent:
    """The agent, on the server's store; a page reloaded mid-call gets the same request again."""
    config = ClientToolsConfig(invoke_timeout=20, disconnection=RetryWithBackoff(max_retries=40, max_delay=0.5))
    return Agent(FunctionModel(script), tools=[get_weather], store=store, client_tools=config)
