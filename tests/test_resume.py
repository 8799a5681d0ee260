"""`Agent.resume` after a stopped process: decided outcomes stay, consent is asked again, attempts are counted.

"The process stops" is a cancel scope around the run: nothing more is written, as after kill -9
(the real kill -9 of a server is in tests/server/test_crash_points.py).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import Agent, Cancellation, ConsentAnswer, ConsentRequest, ResultType, ToolCall, tool
from toolwire.messages import ToolResultMessage
from toolwire.store import CallState, RunRecord
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import Behaviour, FakeClient, FunctionModel, validate_transcript

GROUP: dict[str, Any] = {
    "name": "Files",
    "description": "The user's files",
    "startCollapsed": False,
    "tools": [
        {"name": "OpenFile", "description": "Open a file", "parametersSchema": {"type": "object"}},
        {
            "name": "DeleteFile",
            "description": "Delete a file",
            "requiresPermission": True,
            "parametersSchema": {"type": "object"},
        },
    ],
}
HANDLERS = {"OpenFile": lambda args: "opened", "DeleteFile": lambda args: "deleted"}


def script(*batch: ToolCall) -> Callable[[Any], Any]:
    def answer(request: Any) -> Any:
        done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        return list(batch) if not done else "; ".join(f"{m.call_id}={m.result.type.name}" for m in done)

    return answer


def agent_on(store: SqliteStore, model: Callable[[Any], Any], **options: Any) -> Agent:
    return Agent(FunctionModel(model), store=store, **options)


async def stopped_while(agent: Agent, client: FakeClient, condition: Callable[[], Awaitable[object]]) -> None:
    """Run "go" in thread t1 and stop the process once `condition` returned."""
    with anyio.CancelScope() as process:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: agent.run("go", thread="t1", client_tool_groups=[GROUP], client=client))
            await condition()
            process.cancel()


async def test_a_run_that_ended_without_an_answer_is_not_resumed(tmp_path: Path) -> None:
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(ToolCall(id="c1", name="OpenFile", arguments={})))
        async with FakeClient(agent, handlers=HANDLERS) as client:
            client.behave("OpenFile", Behaviour(delay=math.inf))
            stop = Cancellation()
            async with anyio.create_task_group() as group:
                group.start_soon(
                    lambda: agent.run("go", thread="t1", client_tool_groups=[GROUP], client=client, cancellation=stop)
                )
                await client.wait_for_requests()
                stop.cancel("the user pressed stop")
        assert not await agent.unfinished("t1")
        assert await agent.resume("t1") is None


async def test_a_denial_decided_before_the_stop_stays_a_denial(tmp_path: Path) -> None:
    batch = (
        ToolCall(id="c_delete", name="DeleteFile", arguments={}),
        ToolCall(id="c_open", name="OpenFile", arguments={}),
    )
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch))
        async with FakeClient(agent, handlers=HANDLERS, consent=False) as client:
            client.behave("OpenFile", Behaviour(delay=math.inf))
            await stopped_while(agent, client, client.wait_for_requests)
        assert len(client.consent_requests) == 1
        entry = await store.get_call("t1", "c_delete")
        assert entry is not None and entry.result is not None and entry.result.type is ResultType.DENIED

    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch))
        async with FakeClient(agent, handlers=HANDLERS, consent=True) as client:
            result = await agent.resume("t1", client=client)
    assert result is not None and result.output == "c_delete=DENIED; c_open=SUCCESS"
    assert client.consent_requests == []  # not asked again: it was decided
    assert [request.call_id for request in client.requests] == ["c_open"]
    validate_transcript(result.transcript)


class Hesitant(FakeClient):
    """A client whose user never answers the consent prompt."""

    asking = anyio.Event()

    async def consent(self, request: ConsentRequest) -> bool | ConsentAnswer:
        self.consent_requests.append(request)
        self.asking.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_call_whose_consent_was_being_asked_is_asked_again(tmp_path: Path) -> None:
    batch = (ToolCall(id="c_delete", name="DeleteFile", arguments={}),)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch))
        async with Hesitant(agent, handlers=HANDLERS) as hesitant:
            hesitant.asking = anyio.Event()
            await stopped_while(agent, hesitant, hesitant.asking.wait)  # the process dies while asking
        assert hesitant.requests == []

    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch))
        async with FakeClient(agent, handlers=HANDLERS, consent=True) as client:
            result = await agent.resume("t1", client=client)
    assert [request.call.id for request in client.consent_requests] == ["c_delete"]  # asked again, then run
    assert result is not None and result.output == "c_delete=SUCCESS"
    assert list(client.executions.values()) == [1]


def shell(command: str) -> str:
    """Run a command (pretend)."""
    return f"ran {command}"


async def test_a_function_tool_waiting_for_consent_is_in_the_ledger_as_awaiting_approval(tmp_path: Path) -> None:
    batch = (ToolCall(id="c_shell", name="shell", arguments={"command": "ls"}),)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch), tools=[tool(mode="local")(shell)])
        async with Hesitant(agent, handlers=HANDLERS) as hesitant:
            hesitant.asking = anyio.Event()
            await stopped_while(agent, hesitant, hesitant.asking.wait)
        entry = await store.get_call("t1", "c_shell")
    assert entry is not None and entry.state is CallState.AWAITING_APPROVAL


async def test_a_function_tool_whose_consent_was_being_asked_is_asked_again_not_canceled(tmp_path: Path) -> None:
    batch = (ToolCall(id="c_shell", name="shell", arguments={"command": "ls"}),)
    local_shell = tool(mode="local")(shell)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch), tools=[local_shell])
        async with Hesitant(agent, handlers=HANDLERS) as hesitant:
            hesitant.asking = anyio.Event()
            await stopped_while(agent, hesitant, hesitant.asking.wait)

    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch), tools=[local_shell])
        async with FakeClient(agent, handlers=HANDLERS, consent=True) as client:
            result = await agent.resume("t1", client=client)
    assert [request.call.id for request in client.consent_requests] == ["c_shell"]
    assert result is not None and result.output == "c_shell=SUCCESS"
    validate_transcript(result.transcript)


async def test_a_function_tool_allowed_before_the_stop_is_canceled_not_run_again(tmp_path: Path) -> None:
    started = anyio.Event()

    async def slow_shell(command: str) -> str:
        """Run a command slowly (pretend)."""
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    batch = (ToolCall(id="c_shell", name="slow_shell", arguments={"command": "ls"}),)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch), tools=[tool(mode="local")(slow_shell)])
        async with FakeClient(agent, handlers=HANDLERS, consent=True) as client:
            await stopped_while(agent, client, started.wait)  # approved, running, then the process dies
        entry = await store.get_call("t1", "c_shell")
        assert entry is not None and entry.state is CallState.DISPATCHED
        result = await agent.resume("t1")
    assert result is not None and result.output == "c_shell=CANCELED"


async def test_each_resume_counts_and_the_run_is_closed_after_the_limit(tmp_path: Path) -> None:
    batch = (ToolCall(id="c_open", name="OpenFile", arguments={}),)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch), max_resume_attempts=2)
        async with FakeClient(agent, handlers=HANDLERS) as client:
            client.behave("OpenFile", *[Behaviour(delay=math.inf)] * 3)
            await stopped_while(agent, client, client.wait_for_requests)
            for attempt in (1, 2):  # each resume stops too (the process dies again)
                with anyio.CancelScope() as process:
                    async with anyio.create_task_group() as group:
                        group.start_soon(lambda: agent.resume("t1", client=client))
                        await anyio.wait_all_tasks_blocked()
                        process.cancel()
                assert await store.load_run("t1") == RunRecord(resume_attempts=attempt)
            result = await agent.resume("t1", client=client)
        assert result is not None and result.reason == "canceled"
        assert result.detail == "the run could not be resumed (2 attempts did not finish); it was closed"
        [closed] = [m.result for m in result.transcript if isinstance(m, ToolResultMessage)]
        assert closed.payload()["canceled"]["by"] == "system"
        assert not await agent.unfinished("t1")
        validate_transcript(result.transcript)


async def test_a_resumed_run_that_finishes_forgets_its_attempts(tmp_path: Path) -> None:
    batch = (ToolCall(id="c_open", name="OpenFile", arguments={}),)
    async with SqliteStore.in_directory(tmp_path) as store:
        agent = agent_on(store, script(*batch))
        async with FakeClient(agent, handlers=HANDLERS) as client:
            client.behave("OpenFile", Behaviour(delay=math.inf))
            await stopped_while(agent, client, client.wait_for_requests)
        async with FakeClient(agent, handlers=HANDLERS) as client:
            result = await agent.resume("t1", client=client)
        assert result is not None and result.output == "c_open=SUCCESS"
        assert await store.load_run("t1") == RunRecord()


@pytest.mark.parametrize("max_resume_attempts", [0, -1])
def test_max_resume_attempts_must_be_positive(max_resume_attempts: int) -> None:
    from toolwire.errors import UsageError
    from toolwire.testing import ScriptedModel

    with pytest.raises(UsageError, match="max_resume_attempts >= 1"):
        Agent(ScriptedModel(["hi"]), max_resume_attempts=max_resume_attempts)
