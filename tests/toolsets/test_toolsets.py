"""The `Toolset` seam beyond the contract: how an agent takes toolsets, binds them and stays cheap."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence

import pytest

from toolwire import Agent, Toolbox, ToolCall, ToolResult, tool
from toolwire.errors import UsageError
from toolwire.messages import ToolDefinition, ToolResultMessage
from toolwire.store import LedgerEntry
from toolwire.testing import ScriptedModel
from toolwire.tools import ToolContext
from toolwire.toolsets import BoundToolset, RunScope, Toolset
from toolwire.toolsets.collapsed import Collapsed


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def echo(text: str) -> str:
    """Say it back."""
    return text


class Counting:
    """A toolset that counts its lifetime and run hooks (and offers one toolbox)."""

    def __init__(self, toolbox: Toolbox) -> None:
        self.toolbox = toolbox
        self.events: list[str] = []

    async def setup(self) -> None:
        self.events.append("setup")

    async def teardown(self) -> None:
        self.events.append("teardown")

    async def bind(self, scope: RunScope) -> BoundToolset | None:
        self.events.append("bind")
        return _CountingRun(self)

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        return None


class _CountingRun:
    def __init__(self, outer: Counting) -> None:
        self.outer = outer

    def definitions(self) -> Sequence[ToolDefinition]:
        return self.outer.toolbox.definitions()

    def instructions(self) -> Sequence[str]:
        return ["Use echo."]

    def tools(self) -> Toolbox:
        return self.outer.toolbox

    def answer(self, call: ToolCall) -> ToolResult | None:
        return None

    def remote(self, call: ToolCall) -> None:
        return None

    async def after_batch(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        self.outer.events.append(f"after {len(calls)}")

    def resume(self, entries: Sequence[LedgerEntry]) -> list[str]:
        return []

    async def end_run(self) -> None:
        self.outer.events.append("end")


def results(transcript: Sequence[object]) -> list[ToolResult]:
    return [message.result for message in transcript if isinstance(message, ToolResultMessage)]


def test_a_toolbox_is_a_toolset() -> None:
    assert isinstance(Toolbox([ping]), Toolset)


def test_functions_go_in_the_agents_toolbox_beside_the_toolsets() -> None:
    other = Toolbox([echo])
    agent = Agent(ScriptedModel(["done"]), tools=[ping, other])
    assert (agent.toolbox.names, agent.toolsets.toolsets[1:-1]) == (["ping"], (other,))


async def test_the_model_sees_every_toolsets_tools_in_order() -> None:
    model = ScriptedModel(["done"])
    await Agent(model, tools=[ping, Toolbox([echo])]).run("go")
    assert [definition.name for definition in model.requests[0].tools] == ["ping", "echo"]


async def test_a_call_runs_in_the_toolset_that_has_the_tool() -> None:
    model = ScriptedModel([[ToolCall(id="c1", name="echo", arguments={"text": "hi"})], "done"])
    result = await Agent(model, tools=[ping, Toolbox([echo])]).run("go")
    assert results(result.transcript)[0].data == "hi"


async def test_a_toolsets_instructions_join_the_system_prompt() -> None:
    model = ScriptedModel(["done"])
    await Agent(model, tools=[Counting(Toolbox([echo]))], instructions="Be brief.").run("go")
    assert model.requests[0].system == "Be brief.\n\nUse echo."


async def test_a_bound_toolset_hears_each_batch_and_the_end_of_the_run() -> None:
    counting = Counting(Toolbox([echo]))
    model = ScriptedModel([[ToolCall(id="c1", name="echo", arguments={"text": "hi"})], "done"])
    await Agent(model, tools=[counting]).run("go")
    assert counting.events == ["bind", "after 1", "end"]


async def test_async_with_agent_sets_the_toolsets_up_and_tears_them_down() -> None:
    counting = Counting(Toolbox([echo]))
    async with Agent(ScriptedModel(["done"]), tools=[counting]):
        pass
    assert counting.events == ["setup", "teardown"]


def test_added_toolsets_come_after_the_agents_and_before_the_client_tools() -> None:
    given, added = Toolbox([echo]), Counting(Toolbox())
    agent = Agent(ScriptedModel(["done"]), tools=[ping, given])
    agent.add_toolsets([added])
    assert agent.toolsets.toolsets[1:] == (given, added, agent.client_toolset)


async def test_the_model_sees_an_added_toolsets_tools() -> None:
    model = ScriptedModel(["done"])
    agent = Agent(model, tools=[ping])
    agent.add_toolsets([Toolbox([echo])])
    await agent.run("go")
    assert [definition.name for definition in model.requests[0].tools] == ["ping", "echo"]


async def test_async_with_agent_sets_added_toolsets_up_and_tears_them_down() -> None:
    counting = Counting(Toolbox([echo]))
    agent = Agent(ScriptedModel(["done"]))
    agent.add_toolsets([counting])
    async with agent:
        pass
    assert counting.events == ["setup", "teardown"]


async def test_toolsets_cannot_be_added_to_an_agent_that_is_set_up() -> None:
    agent = Agent(ScriptedModel(["done"]))
    async with agent:
        with pytest.raises(UsageError, match=r"add toolsets before the agent is set up \(before `async with agent`\)"):
            agent.add_toolsets([Toolbox([echo])])


async def test_a_collapsed_toolset_offers_only_its_container_first() -> None:
    model = ScriptedModel(["done"])
    await Agent(model, tools=[Collapsed(Toolbox([ping, echo]), name="Basics", description="Basic tools")]).run("go")
    [container] = model.requests[0].tools
    assert (container.name, container.description) == ("Basics", "Basic tools (2 tools)")


async def test_expanding_a_collapsed_toolset_answers_like_a_client_group() -> None:
    model = ScriptedModel([[ToolCall(id="c1", name="Basics", arguments={})], "done"])
    result = await Agent(model, tools=[Collapsed(Toolbox([ping, echo]), name="Basics")]).run("go")
    assert results(result.transcript)[0].data == "Basics expanded. Available functions: ping, echo"


async def test_a_tool_of_a_collapsed_toolset_points_to_its_container() -> None:
    model = ScriptedModel([[ToolCall(id="c1", name="ping", arguments={})], "done"])
    result = await Agent(model, tools=[Collapsed(Toolbox([ping]), name="Basics")]).run("go")
    assert results(result.transcript)[0].error == (
        "'ping' belongs to 'Basics', which is collapsed; call 'Basics' first to make its tools available."
    )


def test_a_run_without_client_tools_loads_neither_the_session_nor_the_definitions() -> None:
    # No `toolwire.testing` here: its fake client loads the definitions itself.
    script = textwrap.dedent(
        """
        import sys, anyio
        from toolwire import Agent, ToolCall, tool
        from toolwire.models import ModelResponse

        class Model:
            name = "inline"
            ping = ToolCall(id="c1", name="ping", arguments={})
            turns = [ModelResponse(tool_calls=(ping,)), ModelResponse(text="done")]

            async def stream(self, request):
                yield self.turns.pop(0)

        @tool
        def ping() -> str:
            return "pong"

        anyio.run(Agent(Model(), tools=[ping]).run, "go")
        print(sorted(m for m in sys.modules if m.startswith("toolwire.client_tools.")))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = done.stdout.strip()
    assert "session" not in loaded and "definitions" not in loaded, loaded


async def test_a_client_tool_proxy_is_a_tool_built_through_its_constructor() -> None:
    from toolwire.client_tools.definitions import ClientTool
    from toolwire.client_tools.session import ClientToolProxy
    from toolwire.client_tools.validation import ArgumentValidator

    sent: list[tuple[str, dict[str, object]]] = []

    class Session:
        async def invoke(self, proxy: ClientToolProxy, call_id: str, arguments: dict[str, object]) -> ToolResult:
            sent.append((call_id, arguments))
            return ToolResult.ok(call_id, "done")

    definition = ClientTool.from_dict({"name": "Open", "parametersSchema": {"type": "object"}})
    proxy = ClientToolProxy(definition, ArgumentValidator.permissive(), Session(), 5.0)  # type: ignore[arg-type]
    # A client argument may be called `context`: the call's context travels beside the arguments.
    await proxy.with_context(ToolContext("c1", "Open"))(context="mine")
    assert sent == [("c1", {"context": "mine"})]
