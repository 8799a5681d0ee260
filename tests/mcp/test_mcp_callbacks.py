"""What an MCP server sends during a call: progress becomes `ToolProgress` events, questions go to consent.

Questions are asked by `asking_server.py` (a Python `MCPServer`) on both protocol generations:
`--legacy` serves 2025-11-25 (`elicitation/create` requests), without it 2026-07-28
(`input_required` rounds of the call); and by server-everything's `trigger-elicitation-request`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import Agent, ConsentAnswer, ConsentRequest, PermissionPolicy, ResultType, ToolCall, ToolResult
from toolwire.interop.mcp import MCPToolset
from toolwire.interop.mcp.callbacks import CallRouter
from toolwire.messages import ToolResultMessage
from toolwire.pipeline import ConsentRequested, ToolProgress
from toolwire.testing import ScriptedModel
from toolwire.tools import ToolContext

ASKING_SERVER = Path(__file__).resolve().with_name("asking_server.py")


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def asking(generation: str, **options: Any) -> MCPToolset:
    legacy = ["--legacy"] if generation == "2025-11-25" else []
    return MCPToolset(sys.executable, [str(ASKING_SERVER), *legacy], **options)


class Person:
    """A consent handler that answers every question the same way and keeps what it was asked."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.asked: list[ConsentRequest] = []

    async def __call__(self, request: ConsentRequest) -> bool:
        self.asked.append(request)
        return self.answer


async def result(toolset: MCPToolset, tool_call: ToolCall, policy: PermissionPolicy | None = None) -> ToolResult:
    agent = Agent(ScriptedModel([[tool_call], "done"]), tools=[toolset], policy=policy)
    async with agent:
        run = await agent.run("go")
    [message] = [m for m in run.transcript if isinstance(m, ToolResultMessage)]
    return message.result


GENERATIONS = pytest.mark.parametrize("generation", ["2025-11-25", "2026-07-28"])


# -- progress ----------------------------------------------------------------------------------


async def test_a_streamed_run_yields_the_servers_progress_for_the_call(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    model = ScriptedModel([[call("trigger-long-running-operation", duration=0.3, steps=3)], "done"])
    async with Agent(model, tools=[toolset]) as agent:
        events = [event async for event in agent.stream("go")]
    progress = [(event.call.id, event.progress, event.total) for event in events if isinstance(event, ToolProgress)]
    assert progress == [("c1", 1, 3), ("c1", 2, 3), ("c1", 3, 3)]


async def test_a_call_that_no_one_hears_asks_the_server_for_no_progress() -> None:
    router = CallRouter(lambda: "server")
    with router.calling(ToolContext("c1", "t")) as progress:
        assert progress is None  # the SDK then sends no progress token
    heard: list[tuple[float, float | None, str | None]] = []
    with router.calling(ToolContext("c1", "t", progress=lambda *report: heard.append(report))) as progress:
        assert progress is not None
        await progress(1, 3, "one")
    assert heard == [(1, 3, "one")]


# -- questions (elicitation) -------------------------------------------------------------------


@GENERATIONS
async def test_the_fixture_serves_the_generation(generation: str) -> None:
    assert (await result(asking(generation), call("generation"))).data == generation


@GENERATIONS
async def test_a_question_answered_yes_is_accepted(generation: str) -> None:
    policy = PermissionPolicy(consent=Person(True))
    assert (await result(asking(generation), call("delete", path="/tmp/x"), policy)).data == "accept"


@GENERATIONS
async def test_a_question_answered_no_is_declined(generation: str) -> None:
    policy = PermissionPolicy(consent=Person(False))
    assert (await result(asking(generation), call("delete", path="/tmp/x"), policy)).data == "decline"


@GENERATIONS
async def test_a_question_with_no_one_to_ask_is_declined(generation: str) -> None:
    assert (await result(asking(generation), call("delete", path="/tmp/x"))).data == "decline"


@GENERATIONS
async def test_the_question_is_put_to_the_person_for_the_call(generation: str) -> None:
    person = Person(True)
    await result(asking(generation), call("delete", path="/tmp/x"), PermissionPolicy(consent=person))
    assert [(r.call.id, r.tool, r.reason) for r in person.asked] == [
        ("c1", "delete", "MCP server 'asking-server' asks: Delete /tmp/x?")
    ]


@GENERATIONS
async def test_a_yes_to_a_boolean_form_sets_its_field(generation: str) -> None:
    policy = PermissionPolicy(consent=Person(True))
    assert (await result(asking(generation), call("sign"), policy)).data == "accept agree=True"


@GENERATIONS
async def test_a_form_with_a_text_field_is_declined_without_asking(generation: str) -> None:
    person = Person(True)
    answered = await result(asking(generation), call("register"), PermissionPolicy(consent=person))
    assert (answered.data, person.asked) == ("decline", [])


async def test_a_streamed_run_shows_the_question_as_a_consent_request() -> None:
    model = ScriptedModel([[call("delete", path="/tmp/x")], "done"])
    async with Agent(model, tools=[asking("2025-11-25")], policy=PermissionPolicy(consent=Person(True))) as agent:
        events = [event async for event in agent.stream("go")]
    assert [event.request.call.id for event in events if isinstance(event, ConsentRequested)] == ["c1"]


async def test_a_question_still_open_when_the_call_times_out_is_withdrawn() -> None:
    withdrawn = anyio.Event()

    async def never(request: ConsentRequest) -> ConsentAnswer:
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()
        raise AssertionError("unreachable")

    toolset = asking("2025-11-25", timeout=0.5)
    answered = await result(toolset, call("delete", path="/tmp/x"), PermissionPolicy(consent=never))
    with anyio.fail_after(10):
        await withdrawn.wait()
    assert answered.type is ResultType.TIMEOUT


async def test_server_everythings_rich_form_is_declined_without_asking(everything: dict[str, Any]) -> None:
    person = Person(True)
    answered = await result(
        MCPToolset(**everything), call("trigger-elicitation-request"), PermissionPolicy(consent=person)
    )
    assert ("User declined" in str(answered.data), person.asked) == (True, [])


async def test_without_elicitation_the_capability_is_not_declared(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, elicitation=False)
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert "trigger-elicitation-request" not in toolset.toolbox
