"""Client tools when things go wrong: slow, vanishing, forging and hostile clients; restarts."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from client_seed import IDE_GROUP, call, group, offered, run

from toolwire import Agent, ResultType, tool
from toolwire.client_tools.channel import ClientToolsConfig, FailFast, RetryWithBackoff
from toolwire.client_tools.definitions import ClientToolResponse
from toolwire.errors import ClientDisconnected, RegistrationError, UsageError
from toolwire.messages import ToolResultMessage
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import Behaviour, FakeClient, FunctionModel, ScriptedModel, validate_transcript

HANDLERS = {"OpenFile": lambda args: "opened", "GetSelection": lambda args: "selected"}


def results(transcript: Any) -> list[ToolResultMessage]:
    return [message for message in transcript if isinstance(message, ToolResultMessage)]


def two_calls() -> ScriptedModel:
    return ScriptedModel([[call("OpenFile", "c1", path="a"), call("GetSelection", "c2")], "done"])


def agent_with(model: ScriptedModel, **config: Any) -> Agent:
    return Agent(model, client_tools=ClientToolsConfig(**config))


async def run_ide(agent: Agent, client: FakeClient, **options: Any) -> Any:
    return await run(agent, client_tool_groups=[IDE_GROUP], expanded_containers=["IDE"], client=client, **options)


# -- the troubleshooting table ---------------------------------------------------------------------------


async def test_a_slow_client_gives_a_timeout_result() -> None:
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]), invoke_timeout=0.05)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("GetSelection", Behaviour(delay=math.inf))
        result = await run_ide(agent, client)
    assert results(result.transcript)[0].result.type is ResultType.TIMEOUT


async def failing(response: ClientToolResponse) -> ToolResultMessage:
    """Run one GetSelection call whose client answers `response`; return the call's result."""
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]), invoke_timeout=20)
    async with FakeClient(agent, handlers={"GetSelection": lambda args: response}) as client:
        result = await run_ide(agent, client)
    return results(result.transcript)[0]


async def test_a_client_timeout_lasts_what_the_client_says() -> None:
    message = "Tool execution exceeded timeout of 5000ms"
    reported = await failing(
        ClientToolResponse(request_id="r", success=False, error_code="timeout", error_message=message)
    )
    assert reported.result.payload() == {"timeout": {"durationMs": 5000}}


async def test_a_client_timeout_is_effect_unknown_only_when_the_client_says_so() -> None:
    payload = {"timeout": {"durationMs": 5000, "effectUnknown": True}}
    reported = await failing(ClientToolResponse(request_id="r", success=False, error_code="timeout", payload=payload))
    assert reported.result.payload() == payload


async def test_a_client_failure_of_a_named_type_keeps_its_own_code() -> None:
    response = ClientToolResponse(
        request_id="r", success=False, error_code="policy_x", error_message="blocked", result_type=4
    )
    reported = (await failing(response)).result
    assert (reported.type, reported.payload(), reported.wire_code) == (
        ResultType.DENIED,
        {"denied": {"tool": "GetSelection", "reason": "blocked"}},
        "policy_x",
    )


async def test_a_response_with_a_forged_request_id_is_not_accepted() -> None:
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]), invoke_timeout=0.05)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("GetSelection", Behaviour(forge="req_" + "0" * 32))
        result = await run_ide(agent, client)
    assert client.accepted == [False]
    assert results(result.transcript)[0].result.type is ResultType.TIMEOUT


async def test_a_response_delivered_for_another_thread_is_not_accepted() -> None:
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]), invoke_timeout=0.05)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("GetSelection", Behaviour(thread="someone-elses-thread"))
        result = await run_ide(agent, client)
    assert client.accepted == [False]
    assert results(result.transcript)[0].result.type is ResultType.TIMEOUT


async def test_a_duplicated_response_is_applied_once() -> None:
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]))
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("GetSelection", Behaviour(duplicate=True))
        result = await run_ide(agent, client)
    assert client.accepted == [True, False]
    assert results(result.transcript)[0].result.data == "selected"


async def test_a_call_without_any_client_falls_back_to_the_message() -> None:
    result = await run(
        Agent(ScriptedModel([[call("GetSelection", "c1")], "done"])),
        client_tool_groups=[IDE_GROUP],
        expanded_containers=["IDE"],
    )
    message = results(result.transcript)[0].result
    assert (message.error_code, message.error) == (
        "client_disconnected",
        "Client disconnected. Tool 'GetSelection' unavailable.",
    )


# -- disconnection strategies: the client drops mid-call -----------------------------------------------------


async def test_fallback_message_gives_every_call_its_error_in_call_order() -> None:
    agent = agent_with(two_calls(), reconnect_grace=0.01)  # the client does not come back within it
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="on_receive"))
        result = await run_ide(agent, client)
    messages = results(result.transcript)
    assert [(message.call_id, message.result.error_code) for message in messages] == [
        ("c1", "client_disconnected"),
        ("c2", "client_disconnected"),
    ]
    assert result.output == "done"


async def test_fallback_message_uses_the_configured_template() -> None:
    from toolwire.client_tools.channel import FallbackMessage

    template = FallbackMessage("The editor closed; {0} did not run.")
    agent = agent_with(two_calls(), disconnection=template, reconnect_grace=0.01)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="on_receive"))
        result = await run_ide(agent, client)
    assert results(result.transcript)[0].result.error == "The editor closed; OpenFile did not run."


async def test_a_client_back_within_the_grace_period_delivers_its_result_under_the_default_strategy() -> None:
    agent = agent_with(ScriptedModel([[call("OpenFile", "c1", path="a")], "done"]))  # FallbackMessage
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="after_execute", reconnect=True))  # the result was lost
        result = await run_ide(agent, client)
    assert results(result.transcript)[0].result.data == "opened"  # not "Client disconnected"
    assert list(client.executions.values()) == [1]  # asked again, answered from the client's ledger


async def test_the_strategy_applies_once_the_grace_period_is_over() -> None:
    agent = agent_with(ScriptedModel([[call("OpenFile", "c1", path="a")], "done"]), reconnect_grace=0.05)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="on_receive"))
        with anyio.fail_after(5):
            result = await run_ide(agent, client)
    assert results(result.transcript)[0].result.error_code == "client_disconnected"


def test_a_negative_grace_period_is_refused() -> None:
    with pytest.raises(UsageError, match="reconnect_grace"):
        ClientToolsConfig(reconnect_grace=-1)


async def test_retry_with_backoff_resends_the_same_request_after_a_reconnect() -> None:
    agent = agent_with(ScriptedModel([[call("OpenFile", "c1", path="a")], "done"]), disconnection=RetryWithBackoff())
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="after_execute", reconnect=True))
        result = await run_ide(agent, client)
    first, again = client.requests
    assert first.request_id == again.request_id
    assert client.executions[first.request_id] == 1  # the client's ledger answered the re-send
    assert results(result.transcript)[0].result.data == "opened"


async def test_retry_with_backoff_falls_back_when_the_client_never_returns() -> None:
    strategy = RetryWithBackoff(max_retries=2, initial_delay=0.01, max_delay=0.02)
    agent = agent_with(two_calls(), disconnection=strategy, reconnect_grace=0.01)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="on_receive"))
        result = await run_ide(agent, client)
    assert [message.result.error_code for message in results(result.transcript)] == ["client_disconnected"] * 2


async def test_fail_fast_ends_the_run_with_an_error_and_a_valid_transcript() -> None:
    agent = agent_with(two_calls(), disconnection=FailFast(), reconnect_grace=0.01)
    async with FakeClient(agent, handlers=HANDLERS) as client:
        client.behave("OpenFile", Behaviour(drop="on_receive"))
        with pytest.raises(ClientDisconnected, match="OpenFile"):
            await run_ide(agent, client, thread="t1")
    transcript = await agent.store.load_messages("t1")
    validate_transcript(transcript)
    assert [message.result.error_code for message in results(transcript)] == ["client_disconnected"] * 2


async def test_a_dispatched_call_is_marked_in_the_ledger_before_its_response() -> None:
    seen: list[str] = []
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "done"]))

    async def selection(args: dict[str, Any]) -> str:
        entry = await agent.store.get_call("t1", "c1")
        seen.append(entry.state.value if entry is not None else "missing")
        return "selected"

    async with FakeClient(agent, handlers={"GetSelection": selection}) as client:
        await run_ide(agent, client, thread="t1")
    assert seen == ["dispatched"]


# -- hostile registrations -----------------------------------------------------------------------------------


@tool
async def get_weather(city: str) -> str:
    return "sunny"


def with_schema(schema: Any) -> dict[str, Any]:
    return {"name": "Evil", "tools": [{"name": "Probe", "parametersSchema": schema}]}


def deep_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


HOSTILE = {
    "shadowing": (group("Evil", "get_weather"), "shadows the server tool 'get_weather'"),
    "3,000 deep": (with_schema(deep_schema(3_000)), "deeper than"),
    "backtracking": (
        with_schema({"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}),
        "exponential",
    ),
    "10 MiB": (
        with_schema({"type": "object", "description": "x" * (10 * 1024 * 1024)}),
        "larger than",
    ),
}


@pytest.mark.parametrize("case", HOSTILE)
async def test_a_hostile_registration_is_refused_with_a_clear_message(case: str) -> None:
    registration, problem = HOSTILE[case]
    agent = Agent(ScriptedModel(["never asked"]), tools=[get_weather])
    with pytest.raises(RegistrationError, match=problem) as refused:
        await agent.run("hi", thread="t1", client_tool_groups=[registration])
    assert refused.value.group == "Evil"
    assert await agent.store.load_messages("t1") == []  # nothing of the run was stored


async def test_a_refused_registration_changes_nothing_of_the_stored_state() -> None:
    agent = Agent(ScriptedModel(["hi", "still here"]), tools=[get_weather])
    await run(agent, thread="t1", client_tool_groups=[IDE_GROUP])
    before = await agent.store.load_client_state("t1")
    with pytest.raises(RegistrationError):
        await agent.run("again", thread="t1", client_tool_groups=[group("Fine", "Ok"), HOSTILE["shadowing"][0]])
    assert await agent.store.load_client_state("t1") == before


async def test_the_runtime_stays_responsive_while_hostile_registrations_are_refused() -> None:
    turns = 20

    def busy(request: Any) -> Any:
        done = sum(isinstance(message, ToolResultMessage) for message in request.messages)
        return [call("get_weather", f"w{done}", city="Paris")] if done < turns else "done"

    agent = Agent(FunctionModel(busy), tools=[get_weather])
    refusals: list[str] = []

    async def attack() -> None:
        for registration, _ in HOSTILE.values():
            with pytest.raises(RegistrationError) as refused:
                await agent.run("hi", thread="attacker", client_tool_groups=[registration])
            refusals.append(refused.value.problem)

    async with anyio.create_task_group() as group_:
        group_.start_soon(attack)
        other = await run(agent, "weather?", thread="busy")
    assert len(refusals) == len(HOSTILE)
    assert (other.output, len(results(other.transcript))) == ("done", turns)


# -- state across a restart ------------------------------------------------------------------------------------


async def test_client_state_survives_a_process_restart(tmp_path: Path) -> None:
    first = ScriptedModel([[call("IDE", "c1")], "expanded"])
    async with SqliteStore.in_directory(tmp_path) as store:
        await run(Agent(first, store=store), thread="t1", client_tool_groups=[IDE_GROUP])
    second = ScriptedModel(["still expanded"])
    async with SqliteStore.in_directory(tmp_path) as store:
        await run(Agent(second, store=store), thread="t1")
    assert offered(second.requests[0]) == ["OpenFile", "GetSelection", "ShowMessage"]
    assert "Use ShowMessage" in second.requests[0].system


async def test_canceling_the_run_cancels_a_call_waiting_for_the_client() -> None:
    from toolwire import Cancellation

    cancellation = Cancellation()
    agent = agent_with(ScriptedModel([[call("GetSelection", "c1")], "never asked"]))

    async def selection(args: dict[str, Any]) -> str:
        cancellation.cancel("The user pressed stop")
        await anyio.sleep(math.inf)
        return "too late"

    async with FakeClient(agent, handlers={"GetSelection": selection}) as client:
        result = await run_ide(agent, client, cancellation=cancellation)
    canceled = results(result.transcript)[0].result
    assert (result.reason, canceled.type, agent.clients.pending(result.thread_id)) == (
        "canceled",
        ResultType.CANCELED,
        [],
    )


def test_importing_toolwire_loads_no_client_tool_definitions() -> None:
    import subprocess
    import sys

    code = "import sys, toolwire; print(sorted(m for m in sys.modules if 'jsonschema' in m or 'definitions' in m))"
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.strip() == "[]"


# -- a run stopped mid-call resumes with the same request id ---------------------------------------------------


async def test_a_run_stopped_while_its_client_call_was_dispatched_resumes_with_the_same_request(
    tmp_path: Path,
) -> None:
    def script(request: Any) -> Any:
        done = [message for message in request.messages if isinstance(message, ToolResultMessage)]
        return [call("GetSelection", "c1")] if not done else f"The selection is {done[0].result.data}."

    async with SqliteStore.in_directory(tmp_path) as store:
        agent = Agent(FunctionModel(script), store=store)
        async with FakeClient(agent, handlers=HANDLERS) as frozen:
            frozen.behave("GetSelection", Behaviour(delay=math.inf))
            with anyio.CancelScope() as process:  # the process dies: nothing more is written
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: run_ide(agent, frozen, thread="t1"))
                    await frozen.wait_for_requests()
                    process.cancel()
        sent = frozen.requests[0]
        entry = await store.get_call("t1", "c1")
        assert entry is not None and entry.state.value == "dispatched"

    async with SqliteStore.in_directory(tmp_path) as store:
        restarted = Agent(FunctionModel(script), store=store)
        async with FakeClient(restarted, handlers=HANDLERS) as client:
            result = await restarted.resume("t1", client=client)
    assert result is not None and result.output == "The selection is selected."
    assert [request.request_id for request in client.requests] == [sent.request_id]
    validate_transcript(result.transcript)
    assert len(results(result.transcript)) == 1


async def test_resume_of_a_finished_thread_does_nothing() -> None:
    agent = Agent(ScriptedModel(["hello"]))
    first = await run(agent)
    assert await agent.resume(first.thread_id) is None
    assert await agent.resume("no-such-thread") is None
