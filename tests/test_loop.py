from __future__ import annotations

from contextlib import aclosing
from typing import Any

import anyio
import pytest

from toolwire import (
    Agent,
    Cancellation,
    ConsentAnswer,
    ConsentRequest,
    InvocationContext,
    PermissionPolicy,
    ResultType,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    tool,
)
from toolwire.errors import ProviderError
from toolwire.loop import ModelRequestStarted, RunFinished, RunResult, TrimHistory
from toolwire.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from toolwire.models import ModelRequest, TextDelta
from toolwire.pipeline import ConsentRequested, Next, ToolCallFinished, ToolCallStarted, ToolProgress
from toolwire.store import LedgerEntry
from toolwire.store.memory import MemoryStore
from toolwire.testing import FunctionModel, ScriptedModel, validate_transcript


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


async def run(agent: Agent, prompt: str = "go", thread: str | None = None, **options: Any) -> RunResult:
    result = await agent.run(prompt, thread=thread, **options)
    validate_transcript(result.transcript)  # every path leaves a transcript both providers accept
    return result


@tool
async def get_weather(city: str) -> dict[str, Any]:
    return {"city": city, "celsius": 21}


@tool
async def finish(summary: str) -> ToolResult:
    return ToolResult.ok(None, {"summary": summary}, message=summary, terminal=True)


@tool
async def explode() -> None:
    raise ToolError("broken for good", needs_followup=False)


@tool
async def flaky() -> None:
    raise ValueError("still broken")


def results_of(request: ModelRequest) -> list[ToolResultMessage]:
    return [message for message in request.messages if isinstance(message, ToolResultMessage)]


# -- ending paths ------------------------------------------------------------------------------


async def test_text_answer_ends_the_run():
    result = await run(Agent(ScriptedModel(["Hello!"])))
    assert (result.reason, result.output) == ("answer", "Hello!")
    assert result.transcript == [UserMessage("go"), AssistantMessage("Hello!")]


async def test_tool_results_go_back_to_the_model_before_the_answer():
    model = ScriptedModel([[call("get_weather", "c1", city="Paris")], "21 degrees."])
    result = await run(Agent(model, tools=[get_weather]))
    assert result.output == "21 degrees."
    [sent] = results_of(model.requests[1])
    assert (sent.call_id, sent.result.data) == ("c1", {"city": "Paris", "celsius": 21})


async def test_model_is_offered_the_tools_and_instructions():
    model = ScriptedModel(["ok"])
    await run(Agent(model, tools=[get_weather], instructions="Be brief."))
    request = model.requests[0]
    assert (request.system, [tool.name for tool in request.tools]) == ("Be brief.", ["get_weather"])


async def test_terminal_result_ends_the_run_after_its_batch():
    model = ScriptedModel([[call("finish", "c1", summary="All done."), call("get_weather", "c2", city="Oslo")]])
    result = await run(Agent(model, tools=[finish, get_weather]))
    assert (result.reason, result.output) == ("terminal_result", "All done.")
    assert [message.result.type for message in result.transcript if isinstance(message, ToolResultMessage)] == [
        ResultType.SUCCESS,
        ResultType.SUCCESS,
    ]


async def test_failure_without_followup_is_terminal():
    result = await run(Agent(ScriptedModel([[call("explode", "c1")]]), tools=[explode]))
    assert result.reason == "terminal_result"


async def test_filter_terminate_ends_the_run():
    async def stop(ctx: InvocationContext, call_next: Next) -> None:
        ctx.terminate = True
        await call_next(ctx)

    model = ScriptedModel([[call("get_weather", "c1", city="Rome")]])
    result = await run(Agent(model, tools=[get_weather], filters=[stop]))
    assert result.reason == "terminate"


async def test_request_limit_ends_the_run_with_a_reason():
    model = FunctionModel(lambda request: [call("get_weather", f"c{request.request_index}", city="Rome")])
    result = await run(Agent(model, tools=[get_weather], max_requests=3))
    assert (result.reason, result.detail) == ("limit", "the run reached its limit of 3 model requests")
    assert len(model.requests) == 3


async def test_tool_call_limit_cancels_the_calls_past_it():
    model = ScriptedModel([[call("get_weather", f"c{i}", city="Rome") for i in range(3)]])
    result = await run(Agent(model, tools=[get_weather], max_tool_calls=2))
    outcomes = [message.result for message in result.transcript if isinstance(message, ToolResultMessage)]
    assert [outcome.type for outcome in outcomes] == [ResultType.SUCCESS, ResultType.SUCCESS, ResultType.CANCELED]
    assert outcomes[2].payload()["canceled"]["by"] == "system"
    assert (result.reason, result.detail) == ("limit", "the run reached its limit of 2 tool calls")


async def test_cancel_during_a_tool_call_gives_canceled_results():
    started = anyio.Event()

    @tool
    async def get_slow() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    model = ScriptedModel([[call("get_slow", "c1"), call("get_weather", "c2", city="Rome")]])
    cancellation = Cancellation()
    results: list[RunResult] = []

    async def go() -> None:
        results.append(await run(Agent(model, tools=[get_slow, get_weather]), cancellation=cancellation))

    async with anyio.create_task_group() as group:
        group.start_soon(go)
        await started.wait()
        cancellation.cancel("Stop pressed")
    [result] = results
    assert (result.reason, result.detail) == ("canceled", "Stop pressed")
    first = result.transcript[2]
    assert isinstance(first, ToolResultMessage)
    assert first.result.payload() == {"canceled": {"reason": "Stop pressed", "by": "user"}}
    assert len(model.requests) == 1


async def test_cancel_while_the_model_streams():
    streaming = anyio.Event()

    async def slow_model(request: ModelRequest) -> str:
        streaming.set()
        await anyio.sleep_forever()
        return "never"

    cancellation = Cancellation()
    results: list[RunResult] = []

    async def go() -> None:
        results.append(await run(Agent(FunctionModel(slow_model)), cancellation=cancellation))

    async with anyio.create_task_group() as group:
        group.start_soon(go)
        await streaming.wait()
        cancellation.cancel()
    assert results[0].reason == "canceled"
    assert results[0].transcript == [UserMessage("go")]


async def test_provider_error_propagates_and_keeps_the_transcript_valid():
    async def unreachable(request: ModelRequest) -> str:
        raise ProviderError("test", "connection refused")

    agent = Agent(FunctionModel(unreachable))
    with pytest.raises(ProviderError):
        await agent.run("hello", thread="t1")
    validate_transcript(await agent.store.load_messages("t1"))


# -- batches -----------------------------------------------------------------------------------


async def test_results_keep_the_model_order_when_the_first_call_is_slower():
    second_done = anyio.Event()

    @tool
    async def get_first() -> str:
        await second_done.wait()  # finishes only after the second call has finished
        return "first"

    @tool
    async def get_second() -> str:
        second_done.set()
        return "second"

    model = ScriptedModel([[call("get_first", "a"), call("get_second", "b")], "done"])
    with anyio.fail_after(5):
        await run(Agent(model, tools=[get_first, get_second]))
    assert [(message.call_id, message.result.data) for message in results_of(model.requests[1])] == [
        ("a", "first"),
        ("b", "second"),
    ]


async def test_model_is_asked_again_only_when_the_whole_batch_has_results():
    def model(request: ModelRequest) -> list[ToolCall] | str:
        if request.request_index == 0:
            return [call("get_weather", f"c{i}", city=str(i)) for i in range(4)]
        assert [message.call_id for message in results_of(request)] == ["c0", "c1", "c2", "c3"]
        return "done"

    assert (await run(Agent(FunctionModel(model), tools=[get_weather]))).output == "done"


async def test_duplicate_call_ids_from_the_model_are_replaced():
    model = ScriptedModel([[call("get_weather", "same", city="A"), call("get_weather", "same", city="B")], "ok"])
    result = await run(Agent(model, tools=[get_weather]))
    assistant = result.transcript[1]
    assert isinstance(assistant, AssistantMessage)
    ids = [tool_call.id for tool_call in assistant.tool_calls]
    assert ids[0] == "same" and ids[1].startswith("call_")


async def test_a_call_id_used_in_an_earlier_run_of_the_thread_is_replaced():
    model = ScriptedModel(
        [[call("get_weather", "same", city="A")], "ok", [call("get_weather", "same", city="B")], "ok"]
    )
    agent = Agent(model, tools=[get_weather])
    await run(agent, "first", thread="t1")
    second = await run(agent, "second", thread="t1")
    assistant = second.new_messages[1]
    assert isinstance(assistant, AssistantMessage) and assistant.tool_calls[0].id.startswith("call_")


async def test_a_thread_made_again_under_its_id_has_its_own_call_ids():
    # The runner keeps each thread's call ids between runs: a thread deleted and written anew is read anew.
    script = [[call("get_weather", "kept", city="A")], "ok", "ok", [call("get_weather", "new", city="B")], "ok"]
    agent = Agent(ScriptedModel(script), tools=[get_weather])
    await run(agent, "first", thread="t1")
    await run(agent, "again", thread="t1")  # (it knows the thread's ids up to the first run's "ok")
    await agent.store.delete_thread("t1")
    await agent.store.append_messages("t1", [UserMessage("earlier"), AssistantMessage("", (call("x", "new"),))])
    await agent.store.append_messages("t1", [ToolResultMessage("x", ToolResult.ok("new", 1)), AssistantMessage("ok")])
    second = await run(agent, "second", thread="t1")
    assistant = second.new_messages[1]
    assert isinstance(assistant, AssistantMessage) and assistant.tool_calls[0].id != "new"


# -- self-correction ---------------------------------------------------------------------------


async def test_invalid_arguments_go_back_and_the_model_corrects_itself():
    model = ScriptedModel([[call("get_weather", "c1", town="Paris")], [call("get_weather", "c2", city="Paris")], "ok"])
    result = await run(Agent(model, tools=[get_weather]))
    [error] = results_of(model.requests[1])
    assert (error.result.error_code, error.result.needs_followup) == ("invalid_parameters", True)
    assert result.reason == "answer"


async def test_retry_budget_stops_a_model_that_repeats_a_failing_call():
    model = FunctionModel(lambda request: [call("flaky", f"c{request.request_index}")])
    result = await run(Agent(model, tools=[flaky], retry_budget=2))
    assert (result.reason, result.detail) == ("limit", "'flaky' failed 3 times (retry budget 2)")
    assert len(model.requests) == 3


async def test_unknown_tool_does_not_end_the_run():
    result = await run(Agent(ScriptedModel([[call("get_wether", "c1")], "sorry"]), tools=[get_weather]))
    assert result.reason == "answer"


# -- threads -----------------------------------------------------------------------------------


async def test_thread_continues_with_its_history():
    model = ScriptedModel(["first", "second"])
    agent = Agent(model)
    one = await run(agent, "hi", thread="t1")
    await run(agent, "again", thread=one.thread_id)
    assert model.requests[1].messages == (UserMessage("hi"), AssistantMessage("first"), UserMessage("again"))


async def test_runs_of_different_threads_proceed_concurrently():
    arrived = 0
    both = anyio.Event()

    @tool
    async def get_meeting() -> str:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await both.wait()  # only returns once both threads' calls are running
        return "met"

    agent = Agent(
        FunctionModel(lambda r: "done" if results_of(r) else [call("get_meeting", f"c-{id(r)}")]), tools=[get_meeting]
    )
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run, agent, "a", "t1")
            group.start_soon(run, agent, "b", "t2")
    assert arrived == 2


async def test_runs_of_one_thread_take_turns():
    order: list[str] = []

    async def model(request: ModelRequest) -> str:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        order.append(f"start {last.content}")
        await anyio.lowlevel.checkpoint()
        order.append(f"end {last.content}")
        return "ok"

    agent = Agent(FunctionModel(model))
    async with anyio.create_task_group() as group:
        group.start_soon(run, agent, "a", "t1")
        group.start_soon(run, agent, "b", "t1")
    assert order in (["start a", "end a", "start b", "end b"], ["start b", "end b", "start a", "end a"])


async def test_waiting_runs_of_one_thread_go_in_arrival_order():
    order: list[str] = []
    gate = anyio.Event()

    async def model(request: ModelRequest) -> str:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        order.append(last.content)
        await gate.wait()
        return "ok"

    agent = Agent(FunctionModel(model))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for prompt in ("a", "b", "c"):
                group.start_soon(run, agent, prompt, "t1")
                await anyio.wait_all_tasks_blocked()
            gate.set()
    assert order == ["a", "b", "c"]


async def test_a_run_cancelled_while_waiting_for_its_thread_does_not_block_it():
    gate = anyio.Event()

    async def model(request: ModelRequest) -> str:
        await gate.wait()
        return "ok"

    agent = Agent(FunctionModel(model))
    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run, agent, "first", "t1")
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as waiter:
                waiter.cancel()
                await run(agent, "second", thread="t1")  # waits behind "first", then is cancelled
            gate.set()
        after = await run(agent, "third", thread="t1")
    assert waiter.cancelled_caught
    assert after.output == "ok"


async def test_a_run_that_fails_hands_its_thread_to_the_next():
    def model(request: ModelRequest) -> str:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        if last.content == "fail":
            raise RuntimeError("the model broke")
        return "ok"

    agent = Agent(FunctionModel(model))
    with pytest.raises(RuntimeError, match="the model broke"):
        await run(agent, "fail", thread="t1")
    with anyio.fail_after(5):
        after = await run(agent, "again", thread="t1")
    assert after.output == "ok"


async def test_crashed_batch_is_closed_as_canceled_by_system_on_the_next_run():
    store = MemoryStore()
    pending = call("get_weather", "c1", city="Rome")
    await store.create_thread("t1")
    await store.append_messages("t1", [UserMessage("hi"), AssistantMessage("", (pending,))])
    await store.record_calls([LedgerEntry(thread_id="t1", call=pending, request_index=0)])
    result = await run(Agent(ScriptedModel(["recovered"]), tools=[get_weather], store=store), "again", thread="t1")
    closed = result.transcript[2]
    assert isinstance(closed, ToolResultMessage)
    assert closed.result.payload()["canceled"]["by"] == "system"
    assert await store.open_calls("t1") == []


async def test_recovery_uses_a_result_the_ledger_already_has():
    store = MemoryStore()
    done = call("get_weather", "c1", city="Rome")
    await store.create_thread("t1")
    await store.append_messages("t1", [UserMessage("hi"), AssistantMessage("", (done,))])
    await store.record_calls([LedgerEntry(thread_id="t1", call=done, request_index=0)])
    await store.complete_call("t1", "c1", ToolResult.ok("c1", "sunny"))
    result = await run(Agent(ScriptedModel(["ok"]), tools=[get_weather], store=store), "again", thread="t1")
    closed = result.transcript[2]
    assert isinstance(closed, ToolResultMessage) and closed.result.data == "sunny"


# -- history budget ----------------------------------------------------------------------------


async def test_trim_history_drops_whole_turns_and_keeps_calls_with_results():
    history: list[Message] = [
        UserMessage("one " * 50),
        AssistantMessage("", (call("get_weather", "c1", city="A"),)),
        ToolResultMessage("get_weather", ToolResult.ok("c1", "x" * 200)),
        AssistantMessage("answer one"),
        UserMessage("two"),
        AssistantMessage("", (call("get_weather", "c2", city="B"),)),
        ToolResultMessage("get_weather", ToolResult.ok("c2", "y")),
    ]
    kept = await TrimHistory(60)(history)
    assert list(kept) == history[4:]
    validate_transcript(kept)


async def test_trim_history_keeps_everything_that_fits():
    history = [UserMessage("a"), AssistantMessage("b"), UserMessage("c")]
    assert list(await TrimHistory(10_000)(history)) == history


async def test_agent_sends_the_trimmed_history():
    model = ScriptedModel(["x" * 400, "ok"])
    agent = Agent(model, history=TrimHistory(50))
    first = await run(agent, "first question")
    await run(agent, "second", thread=first.thread_id)
    assert model.requests[1].messages == (UserMessage("second"),)


# -- streaming ---------------------------------------------------------------------------------


async def test_stream_yields_typed_events_in_order():
    model = ScriptedModel([[call("get_weather", "c1", city="Rome")], "Sunny."])
    events = [event async for event in Agent(model, tools=[get_weather]).stream("go")]
    kinds = [type(event).__name__ for event in events]
    assert kinds == [
        "ModelRequestStarted",
        "ToolCallStarted",
        "ToolCallFinished",
        "ModelRequestStarted",
        "TextDelta",
        "RunFinished",
    ]
    started, finished, last = events[1], events[2], events[-1]
    assert isinstance(started, ToolCallStarted) and (started.mode, started.decision) == ("read", "allow")
    assert isinstance(finished, ToolCallFinished) and finished.result.type is ResultType.SUCCESS
    assert finished.duration_ms >= 0
    assert isinstance(last, RunFinished) and last.result.output == "Sunny."
    validate_transcript(last.result.transcript)


async def test_stream_reports_consent_requests():
    @tool
    def shell_run(command: str) -> str:
        return command

    async def yes(request: ConsentRequest) -> bool:
        return True

    model = ScriptedModel([[call("shell_run", "c1", command="ls")], "done"])
    agent = Agent(model, tools=[shell_run], policy=PermissionPolicy(consent=yes))
    events = [event async for event in agent.stream("go")]
    [consent] = [event for event in events if isinstance(event, ConsentRequested)]
    assert consent.request.tool == "shell_run"


async def test_stream_yields_a_tools_progress_between_its_start_and_its_end():
    @tool
    async def get_pages(ctx: ToolContext) -> int:
        for page in (1, 2):
            ctx.report_progress(page, 2, f"page {page}")
        return 2

    model = ScriptedModel([[call("get_pages", "c1")], "done"])
    events = [event async for event in Agent(model, tools=[get_pages]).stream("go")]
    kinds = [type(event).__name__ for event in events[1:5]]
    assert kinds == ["ToolCallStarted", "ToolProgress", "ToolProgress", "ToolCallFinished"]
    assert events[3] == ToolProgress(events[1].call, 2, 2, "page 2")  # pyright: ignore[reportAttributeAccessIssue]


async def test_a_tool_reporting_progress_without_a_listener_runs():
    @tool
    async def get_pages(ctx: ToolContext) -> int:
        ctx.report_progress(1)
        return 1

    result = await run(Agent(ScriptedModel([[call("get_pages", "c1")], "done"]), tools=[get_pages]))
    assert result.output == "done"


async def test_leaving_the_stream_early_cancels_the_run():
    @tool
    async def get_slow() -> str:
        await anyio.sleep_forever()
        return "never"

    agent = Agent(ScriptedModel([[call("get_slow", "c1")]]), tools=[get_slow])
    async with aclosing(agent.stream("go", thread="t1")) as events:
        async for event in events:
            if isinstance(event, ToolCallStarted):
                break
    transcript = await agent.store.load_messages("t1")
    validate_transcript(transcript)
    last = transcript[-1]
    assert isinstance(last, ToolResultMessage) and last.result.type is ResultType.CANCELED


async def test_stream_yields_each_event_while_the_run_waits():
    go_on = anyio.Event()

    @tool
    async def get_go_ahead() -> str:
        await go_on.wait()  # set by the consumer once it saw this call start
        return "ok"

    agent = Agent(ScriptedModel([[call("get_go_ahead", "c1")], "done"]), tools=[get_go_ahead])
    seen: list[str] = []
    async for event in agent.stream("go"):
        seen.append(type(event).__name__)
        if isinstance(event, ToolCallStarted):
            go_on.set()
    assert seen[-1] == "RunFinished" and "ToolCallFinished" in seen


async def test_a_failing_run_raises_its_own_error_from_the_stream():
    async def unreachable(request: ModelRequest) -> str:
        raise ProviderError("m", "down")

    with pytest.raises(ProviderError, match="down"):
        async for _event in Agent(FunctionModel(unreachable)).stream("go"):
            pass


async def test_stream_text_deltas_come_before_the_end():
    events = [event async for event in Agent(ScriptedModel(["Hi"])).stream("go")]
    assert isinstance(events[0], ModelRequestStarted)
    assert events[1] == TextDelta("Hi")


@tool
async def get_answer(ctx: ToolContext) -> list[object]:
    answer = await ctx.ask("Go on?")
    return [answer.allow, answer.reason]


async def test_a_tools_question_goes_to_the_consent_handler_with_the_call() -> None:
    asked: list[ConsentRequest] = []

    async def yes(request: ConsentRequest) -> bool:
        asked.append(request)
        return True

    model = ScriptedModel([[call("get_answer", "c1")], "done"])
    await run(Agent(model, tools=[get_answer], policy=PermissionPolicy(consent=yes)))
    assert [(request.call.id, request.reason, request.allow_always) for request in asked] == [("c1", "Go on?", False)]


async def test_a_tools_question_answered_no_is_no() -> None:
    async def no(request: ConsentRequest) -> ConsentAnswer:
        return ConsentAnswer(False, "not now")

    model = ScriptedModel([[call("get_answer", "c1")], "done"])
    result = await run(Agent(model, tools=[get_answer], policy=PermissionPolicy(consent=no)))
    assert result.transcript[2].result.data == [False, "not now"]  # type: ignore[union-attr]


async def test_a_tools_question_with_no_one_to_ask_is_no() -> None:
    model = ScriptedModel([[call("get_answer", "c1")], "done"])
    result = await run(Agent(model, tools=[get_answer]))
    assert result.transcript[2].result.data == [False, "no one is available to answer"]  # type: ignore[union-attr]


async def test_a_tools_question_is_a_consent_requested_event() -> None:
    async def yes(request: ConsentRequest) -> bool:
        return True

    model = ScriptedModel([[call("get_answer", "c1")], "done"])
    agent = Agent(model, tools=[get_answer], policy=PermissionPolicy(consent=yes))
    events = [event async for event in agent.stream("go")]
    assert [event.request.reason for event in events if isinstance(event, ConsentRequested)] == ["Go on?"]


async def test_a_tools_question_goes_to_the_threads_client() -> None:
    from toolwire.client_tools.definitions import ClientToolRequest

    class Person:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def send(self, request: ClientToolRequest) -> None:
            raise AssertionError("no client tool is called")

        async def consent(self, request: ConsentRequest) -> bool:
            self.asked.append(request.reason)
            return True

    person = Person()
    await run(Agent(ScriptedModel([[call("get_answer", "c1")], "done"]), tools=[get_answer]), client=person)
    assert person.asked == ["Go on?"]


async def test_consent_for_a_server_tool_goes_to_the_threads_client() -> None:
    from toolwire.client_tools.definitions import ClientToolRequest

    class Person:
        def __init__(self) -> None:
            self.asked: list[ConsentRequest] = []

        async def send(self, request: ClientToolRequest) -> None:
            raise AssertionError("no client tool is called")

        async def consent(self, request: ConsentRequest) -> bool:
            self.asked.append(request)
            return True

    @tool(mode="local")
    async def local_clean() -> str:
        return "cleaned"

    person = Person()
    model = ScriptedModel([[call("local_clean", "c1")], "done"])
    result = await run(Agent(model, tools=[local_clean]), client=person)
    assert [request.tool for request in person.asked] == ["local_clean"]
    assert result.transcript[2].result.data == "cleaned"  # type: ignore[union-attr]


async def test_answer_runs_on_the_prompt_the_caller_stored_without_storing_it_again() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel(["Hi."]), store=store)
    await store.create_thread("t1")
    await store.append_messages("t1", [UserMessage("hello")])
    result = await agent.answer("t1")
    assert result.output == "Hi."
    assert await store.load_messages("t1") == [UserMessage("hello"), AssistantMessage("Hi.")]


async def test_answer_refuses_a_transcript_that_does_not_end_with_a_users_message() -> None:
    store = MemoryStore()
    agent = Agent(ScriptedModel(["Hi."]), store=store)
    await store.create_thread("t1")
    await store.append_messages("t1", [UserMessage("hello"), AssistantMessage("Hi.")])
    with pytest.raises(RuntimeError, match="does not end with a user's message"):
        await agent.answer("t1")
