"""The loop with server-everything behind a container (`Collapsed(MCPToolset(...))`) and a toolbox.

A scripted model sees the toolbox's tool and the container, expands the container, then calls an
MCP tool (`echo`) and a toolbox tool together; the transcript holds for both providers.
"""

from __future__ import annotations

from typing import Any

from toolwire import Agent, ResultType, Toolbox, ToolCall, tool
from toolwire.events import RunResult
from toolwire.interop.mcp import MCPToolset
from toolwire.messages import ToolResultMessage
from toolwire.testing import ScriptedModel, validate_transcript
from toolwire.toolsets.collapsed import Collapsed


@tool
def add_note(text: str) -> str:
    """Keep a note."""
    return f"noted: {text}"


EXPAND = ToolCall(id="c1", name="everything", arguments={})
ECHO = ToolCall(id="c2", name="echo", arguments={"message": "hi"})
NOTE = ToolCall(id="c3", name="add_note", arguments={"text": "milk"})


async def run(everything: dict[str, Any], turns: list[Any]) -> tuple[ScriptedModel, RunResult, MCPToolset]:
    """One run of an agent with a toolbox and server-everything (echo and get-sum) collapsed."""
    server = MCPToolset(**everything, tools=["echo", "get-sum"])
    model = ScriptedModel(turns)
    container = Collapsed(server, name="everything", description="The reference MCP server")
    async with Agent(model, tools=[Toolbox([add_note]), container]) as agent:
        result = await agent.run("go")
    return model, result, server


def results(result: RunResult) -> dict[str, tuple[ResultType, Any]]:
    return {
        m.call_id: (m.result.type, m.result.data if m.result.success else m.result.error)
        for m in result.transcript
        if isinstance(m, ToolResultMessage)
    }


async def test_the_model_sees_the_toolbox_and_the_container_then_the_servers_tools(
    everything: dict[str, Any],
) -> None:
    model, _, _ = await run(everything, [[EXPAND], [ECHO, NOTE], "done"])
    offered = [[(t.name, t.description) for t in request.tools] for request in model.requests]
    assert offered == [
        [("add_note", "Keep a note."), ("everything", "The reference MCP server (2 tools)")],
        [
            ("add_note", "Keep a note."),
            ("echo", "Echoes back the input string"),
            ("get-sum", "Returns the sum of two numbers"),
        ],
        [
            ("add_note", "Keep a note."),
            ("echo", "Echoes back the input string"),
            ("get-sum", "Returns the sum of two numbers"),
        ],
    ]


async def test_expanding_then_calling_an_mcp_tool_and_a_toolbox_tool(everything: dict[str, Any]) -> None:
    _, result, server = await run(everything, [[EXPAND], [ECHO, NOTE], "done"])
    assert (results(result), server.sent) == (
        {
            "c1": (ResultType.SUCCESS, "everything expanded. Available functions: echo, get-sum"),
            "c2": (ResultType.SUCCESS, "Echo: hi"),
            "c3": (ResultType.SUCCESS, "noted: milk"),
        },
        1,
    )


async def test_the_transcript_holds_for_both_providers(everything: dict[str, Any]) -> None:
    _, result, _ = await run(everything, [[EXPAND], [ECHO, NOTE], "done"])
    validate_transcript(result.transcript)


async def test_an_mcp_tool_called_while_collapsed_points_to_the_container(everything: dict[str, Any]) -> None:
    _, result, server = await run(everything, [[ECHO], "done"])
    assert (results(result)["c2"], server.sent) == (
        (
            ResultType.ERROR,
            "'echo' belongs to 'everything', which is collapsed; call 'everything' first to make its tools available.",
        ),
        0,
    )
