"""The contract every toolset keeps: the same rules apply to every toolset's calls.

Each test runs once per toolset kind: function tools (`Toolbox`), client tools (`ClientToolset`,
with a `FakeClient` answering), a `Toolbox` offered `Collapsed` (the model expands it first), and
an MCP server's tools (`MCPToolset` over stdio, the one-tool server in `mcp_lookup_server.py`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import Agent, InvocationContext, PermissionPolicy, ResultType, Toolbox, ToolCall, ToolResult, tool
from toolwire.client_tools import ClientToolsConfig
from toolwire.interop.mcp import MCPToolset
from toolwire.messages import ToolResultMessage
from toolwire.pipeline import Filter, Next
from toolwire.policy import ConsentRequest
from toolwire.store import CallState
from toolwire.testing import Behaviour, FakeClient, ScriptedModel
from toolwire.toolsets.collapsed import Collapsed

LOOKUP_SERVER = Path(__file__).resolve().parent / "mcp_lookup_server.py"
"""The `mcp` kind's server: `lookup` over stdio."""

DEADLINE = 0.05
"""Seconds a call may take in the deadline test (the tool never answers)."""

GROUP: dict[str, Any] = {
    "name": "Data",
    "description": "Data tools",
    "startCollapsed": False,
    "tools": [
        {
            "name": "lookup",
            "description": "Look up a key",
            "parametersSchema": {
                "type": "object",
                "properties": {"key": {"type": "string"}},
                "required": ["key"],
                "additionalProperties": False,
            },
        }
    ],
}


@dataclass
class Kind:
    """One toolset kind: how to build an agent over it and run a prompt."""

    name: str
    ran: list[str] = field(default_factory=list[str])
    """The keys the tool was run with."""
    prelude: tuple[ToolCall, ...] = ()
    """Calls the model makes first to reach the tool (expanding a container)."""
    ran_file: Path | None = None
    """Where the MCP server writes the keys it was run with (the `mcp` kind)."""

    def tools(self, *, hang: bool) -> Toolbox:
        ran = self.ran

        if hang:

            @tool(timeout=DEADLINE)
            async def lookup(key: str) -> str:
                """Look up a key."""
                ran.append(key)
                await anyio.sleep(math.inf)  # never answers: the deadline ends the call
                return key

        else:

            @tool
            async def lookup(key: str) -> str:
                """Look up a key."""
                ran.append(key)
                return f"value of {key}"

        return Toolbox([lookup])

    def agent(
        self,
        turns: Sequence[Any],
        *,
        policy: PermissionPolicy | None = None,
        filters: Sequence[Filter] = (),
        hang: bool = False,
    ) -> Agent:
        script = [[call] for call in self.prelude] + list(turns)
        model = ScriptedModel(script)
        if self.name == "client":
            config = ClientToolsConfig(invoke_timeout=DEADLINE if hang else 30.0)
            return Agent(model, policy=policy, filters=filters, client_tools=config)
        if self.name == "mcp":
            assert self.ran_file is not None
            env = {"TOOLWIRE_RAN_FILE": str(self.ran_file), **({"TOOLWIRE_HANG": "1"} if hang else {})}
            server = MCPToolset(
                sys.executable, [str(LOOKUP_SERVER)], env=env, tools=["lookup"], timeout=DEADLINE if hang else None
            )
            return Agent(model, tools=[server], policy=policy, filters=filters)
        toolbox = self.tools(hang=hang)
        toolset = Collapsed(toolbox, name="Data", description="Data tools") if self.name == "collapsed" else toolbox
        return Agent(model, tools=[toolset], policy=policy, filters=filters)

    @asynccontextmanager
    async def running(self, agent: Agent, *, hang: bool = False) -> AsyncIterator[Any]:
        """Yields `run(prompt)`: a run of `agent` with this kind's tools reachable."""
        if self.name == "mcp":
            assert self.ran_file is not None
            async with agent:
                yield lambda prompt: agent.run(prompt)
            self.ran.extend(self.ran_file.read_text(encoding="utf-8").split() if self.ran_file.exists() else [])
            return
        if self.name != "client":
            yield lambda prompt: agent.run(prompt)
            return

        def lookup(arguments: dict[str, Any]) -> str:
            self.ran.append(arguments["key"])
            return f"value of {arguments['key']}"

        async with FakeClient(agent, handlers={"lookup": lookup}) as client:
            if hang:
                client.behave("lookup", Behaviour(delay=math.inf))
            yield lambda prompt: agent.run(prompt, client_tool_groups=[GROUP], client=client)


@pytest.fixture(params=["toolbox", "client", "collapsed", "mcp"])
def kind(request: pytest.FixtureRequest, tmp_path: Path) -> Kind:
    prelude = (ToolCall(id="c0", name="Data", arguments={}),) if request.param == "collapsed" else ()
    return Kind(request.param, prelude=prelude, ran_file=tmp_path / "ran")


def lookup(call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name="lookup", arguments=arguments or {"key": "k"})


async def outcome(kind: Kind, turns: Sequence[Any], *, hang: bool = False, **options: Any) -> tuple[Agent, Any]:
    agent = kind.agent(turns, hang=hang, **options)
    async with kind.running(agent, hang=hang) as run:
        result = await run("go")
    return agent, result


def result_of(result: Any, call_id: str = "c1") -> ToolResult:
    [message] = [m for m in result.transcript if isinstance(m, ToolResultMessage) and m.call_id == call_id]
    return message.result


# -- what the model sees ---------------------------------------------------------------------------


async def test_the_model_sees_the_tools_definition(kind: Kind) -> None:
    agent, _ = await outcome(kind, [[lookup()], "done"])
    model = agent.model
    assert isinstance(model, ScriptedModel)
    request = model.requests[len(kind.prelude)]
    [definition] = [d for d in request.tools if d.name == "lookup"]
    assert definition.parameters["properties"]["key"]["type"] == "string"


# -- a call runs, once ------------------------------------------------------------------------------


async def test_a_call_ends_in_exactly_one_success_result(kind: Kind) -> None:
    _, result = await outcome(kind, [[lookup()], "done"])
    messages = [m for m in result.transcript if isinstance(m, ToolResultMessage) and m.call_id == "c1"]
    assert [(m.result.type, m.result.data) for m in messages] == [(ResultType.SUCCESS, "value of k")]


async def test_a_call_is_terminal_in_the_ledger(kind: Kind) -> None:
    agent, result = await outcome(kind, [[lookup()], "done"])
    entry = await agent.store.get_call(result.thread_id, "c1")
    assert entry is not None and entry.state is CallState.TERMINAL


async def test_a_call_runs_the_tool_once(kind: Kind) -> None:
    await outcome(kind, [[lookup()], "done"])
    assert kind.ran == ["k"]


# -- the policy ---------------------------------------------------------------------------------------


async def test_a_denied_call_gets_denied(kind: Kind) -> None:
    _, result = await outcome(kind, [[lookup()], "done"], policy=PermissionPolicy(deny=["lookup"]))
    assert result_of(result).type is ResultType.DENIED


async def test_a_denied_call_does_not_run(kind: Kind) -> None:
    await outcome(kind, [[lookup()], "done"], policy=PermissionPolicy(deny=["lookup"]))
    assert kind.ran == []


async def test_an_ask_policy_asks_for_consent(kind: Kind) -> None:
    asked: list[str] = []

    async def consent(request: ConsentRequest) -> bool:
        asked.append(request.call.name)
        return True

    await outcome(kind, [[lookup()], "done"], policy=PermissionPolicy(ask=["lookup"], consent=consent))
    assert asked == ["lookup"]


# -- filters ------------------------------------------------------------------------------------------


async def test_a_filter_sees_the_call(kind: Kind) -> None:
    seen: list[str] = []

    async def watch(ctx: InvocationContext, call_next: Next) -> None:
        seen.append(ctx.tool_call.name)
        await call_next(ctx)

    await outcome(kind, [[lookup()], "done"], filters=[watch])
    assert seen == ["lookup"]


async def test_a_filter_can_change_the_result(kind: Kind) -> None:
    async def change(ctx: InvocationContext, call_next: Next) -> None:
        await call_next(ctx)
        ctx.result = ToolResult.ok(ctx.tool_call.id, "changed")

    _, result = await outcome(kind, [[lookup()], "done"], filters=[change])
    assert result_of(result).data == "changed"


# -- failures the model sees ----------------------------------------------------------------------------


async def test_a_call_past_its_deadline_times_out(kind: Kind) -> None:
    _, result = await outcome(kind, [[lookup()], "done"], hang=True)
    assert result_of(result).type is ResultType.TIMEOUT


async def test_invalid_arguments_give_an_error(kind: Kind) -> None:
    _, result = await outcome(kind, [[lookup(key=5)], "done"])
    assert result_of(result).error_code == "invalid_parameters"


async def test_invalid_arguments_do_not_run_the_tool(kind: Kind) -> None:
    await outcome(kind, [[lookup(key=5)], "done"])
    assert kind.ran == []


async def test_an_unknown_tool_gives_unknown_tool(kind: Kind) -> None:
    _, result = await outcome(kind, [[ToolCall(id="c1", name="nope", arguments={})], "done"])
    assert result_of(result).error_code == "unknown_tool"
