"""What an MCP server sends during a call: progress notifications become the run's `ToolProgress` events."""

from __future__ import annotations

from typing import Any

from toolwire import Agent, ToolCall
from toolwire.interop.mcp import MCPToolset
from toolwire.pipeline import ToolProgress
from toolwire.testing import ScriptedModel


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


async def test_a_streamed_run_yields_the_servers_progress_for_the_call(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    model = ScriptedModel([[call("trigger-long-running-operation", duration=0.3, steps=3)], "done"])
    async with Agent(model, tools=[toolset]) as agent:
        events = [event async for event in agent.stream("go")]
    progress = [(event.call.id, event.progress, event.total) for event in events if isinstance(event, ToolProgress)]
    assert progress == [("c1", 1, 3), ("c1", 2, 3), ("c1", 3, 3)]
