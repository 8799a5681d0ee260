from __future__ import annotations

import logging
import math
import re
import threading
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from toolwire import (
    Agent,
    Cancellation,
    ConsentAnswer,
    ConsentRequest,
    InvocationContext,
    PermissionPolicy,
    Pipeline,
    ResultType,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    guard,
    invoke,
    invoke_batch,
    tool,
)
from toolwire.messages import ToolResultMessage
from toolwire.models.openai import OpenAIModel
from toolwire.pipeline import Filter, Next, ToolCallFinished, ToolProgress
from toolwire.policy import MemoryApprovalStore
from toolwire.testing import ScriptedModel


class Weather(BaseModel):
    city: str
    celsius: float


executions: list[str] = []


@tool
async def add(a: int, b: int) -> int:
    executions.append("add")
    return a + b


@tool
def add_sync(a: int, b: int) -> int:
    return a + b


@tool
async def get_weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@tool
async def explode(message: str) -> None:
    raise ValueError(message)


@tool
async def refuse(code: str, terminal: bool = False) -> None:
    raise ToolError("The calendar is read-only", code=code, error_type="ReadOnly", terminal=terminal)


@tool(timeout=0.01)
async def hang() -> None:
    await anyio.sleep_forever()


release = threading.Event()


@tool(timeout=0.01)
def hang_sync(ctx: ToolContext) -> str:
    release.wait(5)
    return "finished late" if ctx.cancelled else "finished"


@tool
def shell_run(command: str) -> str:
    return f"ran {command}"


@tool
def delete_note(note_id: str) -> str:
    return f"deleted {note_id}"


@tool
async def returns_result(note: str) -> ToolResult:
    return ToolResult.ok("someone-else", {"note": note}, message="Saved.")


@tool
async def returns_object() -> Any:
    return object()


@tool
async def big() -> str:
    return "x" * 300_000


@tool
async def whoami(ctx: ToolContext) -> dict[str, str | None]:
    return {"call": ctx.call_id, "thread": ctx.thread_id, "tool": ctx.tool_name}


toolbox = Toolbox(
    [
        add,
        add_sync,
        get_weather,
        explode,
        refuse,
        hang,
        hang_sync,
        shell_run,
        delete_note,
        returns_result,
        returns_object,
        big,
        whoami,
    ]
)


def call_of(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


async def run(name: str, **arguments: Any) -> ToolResult:
    call = call_of(name, **arguments)
    result = await invoke(call, toolbox)
    assert result.call_id == call.id  # every call gets its own result, bound by id
    return result


# -- the outcomes ------------------------------------------------------------------------------


async def test_success_carries_the_value():
    result = await run("add", a=1, b=2)
    assert (result.type, result.payload()) == (ResultType.SUCCESS, 3)


async def test_pydantic_model_return_becomes_json():
    assert (await run("get_weather", city="Paris")).data == {"city": "Paris", "celsius": 21.5}


async def test_tool_result_return_is_bound_to_the_call():
    result = await run("returns_result", note="n")
    assert (result.call_id, result.data, result.message) == ("c1", {"note": "n"}, "Saved.")


async def test_unknown_tool_names_valid_tools():
    result = await run("ad", a=1)
    assert (result.type, result.error_code) == (ResultType.ERROR, "unknown_tool")
    assert result.error is not None and result.error.startswith("Unknown tool 'ad'. Available tools include: add,")
    assert result.needs_followup


async def test_invalid_parameters_name_the_problem():
    result = await run("add", a="one", b=2)
    assert (result.type, result.error_code) == (ResultType.ERROR, "invalid_parameters")
    assert result.error == (
        "Invalid arguments for tool 'add': 'a': Input should be a valid integer, "
        "unable to parse string as an integer (got 'one')"
    )


async def test_invalid_parameters_do_not_run_the_tool():
    executions.clear()
    await run("add", a=1)
    assert executions == []


async def test_oversized_arguments_are_invalid():
    call = call_of("shell_run", command="x" * 20_000)
    result = await invoke(call, toolbox, max_argument_bytes=16 * 1024)
    assert result.error_code == "invalid_parameters"
    assert "larger than 16384 bytes" in (result.error or "")


# -- unexpected exceptions: the model and the clients see their type and an error id, the log the rest -----

SECRET = "database password=hunter2 exploded"


class IsErrorId:
    """Equal to the text an unexpected exception of type `name` is shown as: its type and an error id."""

    def __init__(self, name: str, *, within: str = "{}") -> None:
        shown = rf"{name} \(error id e_[0-9a-f]{{8}}\)"
        self.pattern = re.compile(re.escape(within).replace(re.escape("{}"), shown))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.pattern.fullmatch(other) is not None

    def __repr__(self) -> str:
        return f"IsErrorId({self.pattern.pattern!r})"


async def test_exception_becomes_execution_error_with_its_type_and_an_error_id():
    result = await run("explode", message="disk on fire")
    assert result.payload() == {
        "error": {"message": IsErrorId("ValueError"), "code": "execution_error", "type": "ValueError"}
    }
    assert result.needs_followup


async def explode_with_a_secret(**options: Any) -> ToolResult:
    @tool
    async def query() -> None:
        raise RuntimeError(SECRET)

    return await invoke(call_of("query"), Toolbox([query]), **options)


async def test_an_unexpected_exceptions_text_does_not_reach_the_model():
    result = await explode_with_a_secret()
    assert result.error == IsErrorId("RuntimeError")


async def test_an_unexpected_exceptions_text_goes_to_the_log_under_its_error_id(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.ERROR, logger="toolwire.pipeline"):
        result = await explode_with_a_secret()
    [record] = caplog.records
    error_id = re.findall(r"e_[0-9a-f]{8}", result.error or "")
    assert error_id and error_id[0] in record.getMessage() and SECRET in caplog.text


async def test_expose_errors_shows_the_exceptions_text():
    result = await explode_with_a_secret(expose_errors=True)
    assert result.error == f"RuntimeError: {SECRET}"


async def test_toolwire_expose_errors_in_the_environment_shows_the_text(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLWIRE_EXPOSE_ERRORS", "1")
    result = await explode_with_a_secret()
    assert result.error == f"RuntimeError: {SECRET}"


async def test_an_explicit_expose_errors_false_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLWIRE_EXPOSE_ERRORS", "1")
    result = await explode_with_a_secret(expose_errors=False)
    assert result.error == IsErrorId("RuntimeError")


async def test_a_failing_filters_text_does_not_reach_the_model():
    async def broken(ctx: InvocationContext, call_next: Next) -> None:
        raise RuntimeError(SECRET)

    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[broken])
    assert result.error == IsErrorId("RuntimeError", within="A filter failed while running 'add': {}")


async def test_an_agents_expose_errors_reaches_its_pipeline():
    model = ScriptedModel([[call_of("explode", message=SECRET)], "done"])
    run_result = await Agent(model, tools=toolbox, expose_errors=True).run("go")
    [message] = [m for m in run_result.transcript if isinstance(m, ToolResultMessage)]
    assert message.result.error == f"ValueError: {SECRET}"


async def test_tool_error_sets_its_own_code_and_type():
    result = await run("refuse", code="read_only")
    assert result.payload() == {
        "error": {"message": "The calendar is read-only", "code": "read_only", "type": "ReadOnly"}
    }
    assert result.needs_followup and not result.terminal


async def test_tool_error_can_end_the_run():
    result = await run("refuse", code="read_only", terminal=True)
    assert result.terminal and not result.needs_followup


async def test_non_json_return_is_an_error():
    result = await run("returns_object")
    assert result.error_code == "execution_error"
    assert "returned a value that is not JSON (object)" in (result.error or "")


async def test_result_too_large():
    result = await run("big")
    assert (result.type, result.error_code) == (ResultType.ERROR, "result_too_large")


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("é" * 90, True),  # 180 bytes of JSON: the size is counted, not guessed
        ("x" * 199, False),  # 201 bytes with its quotes
        ("\x01" * 40, False),  # 6 bytes each once escaped
        (10**250, False),  # an int is its own JSON form, but not always a small one
        (2**63, True),
        (1.5, True),
        (None, True),
    ],
)
async def test_the_result_size_limit_counts_the_json_of_plain_values(value: Any, allowed: bool):
    @tool
    async def get_value() -> Any:
        return value

    pipeline = Pipeline(Toolbox([get_value]), max_result_bytes=200)
    result = await pipeline.invoke(call_of("get_value"))
    assert (result.type is ResultType.SUCCESS) is allowed
    assert result.data == value if allowed else result.error_code == "result_too_large"


# -- JSON has no NaN or Infinity: they become null --------------------------------------------------------

NON_FINITE = {"mean": math.nan, "max": math.inf, "rows": [-math.inf, 1.5], "note": "NaN or Infinity"}
AS_JSON = {"mean": None, "max": None, "rows": [None, 1.5], "note": "NaN or Infinity"}


async def invoke_returning(value: Any, *filters: Filter) -> ToolResult:
    @tool
    async def get_stats() -> Any:
        return value

    return await invoke(call_of("get_stats"), Toolbox([get_stats]), filters=filters)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
async def test_a_non_finite_number_a_tool_returns_becomes_null(value: float):
    assert (await invoke_returning(value)).data is None


async def test_non_finite_numbers_inside_a_tools_value_become_null():
    assert (await invoke_returning(NON_FINITE)).data == AS_JSON


async def test_non_finite_numbers_in_a_result_a_tool_returns_become_null():
    assert (await invoke_returning(ToolResult.ok(None, NON_FINITE))).data == AS_JSON


async def test_non_finite_numbers_in_a_result_a_filter_sets_become_null():
    async def canned(ctx: InvocationContext, call_next: Next) -> None:
        ctx.result = ToolResult.ok(ctx.tool_call.id, NON_FINITE)

    assert (await invoke_returning(1, canned)).data == AS_JSON


async def test_the_model_is_sent_null_for_a_non_finite_number():
    model = ScriptedModel([[call_of("get_stats")], "done"])

    @tool
    async def get_stats() -> dict[str, float]:
        return {"mean": math.nan}

    await Agent(model, tools=[get_stats]).run("stats?")
    body = OpenAIModel("gpt-test", http_client=httpx.AsyncClient()).request_body(model.requests[-1])
    assert body["messages"][-1]["content"] == '{"mean":null}'


async def test_async_timeout_reports_the_deadline():
    result = await run("hang")
    assert (result.type, result.payload()) == (ResultType.TIMEOUT, {"timeout": {"durationMs": 10}})
    assert result.needs_followup


async def test_sync_timeout_says_effect_unknown_and_stops_the_tool_context():
    release.clear()
    result = await run("hang_sync")
    assert result.payload() == {"timeout": {"durationMs": 10, "effectUnknown": True}}
    release.set()


async def test_caller_cancelling_a_running_call_gives_canceled_by_user():
    started = anyio.Event()

    @tool
    async def wait_forever() -> None:
        started.set()
        await anyio.sleep_forever()

    cancellation = Cancellation()
    results: list[ToolResult] = []

    async def call() -> None:
        results.append(await invoke(call_of("wait_forever"), Toolbox([wait_forever]), cancellation=cancellation))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await started.wait()
        cancellation.cancel("The user pressed stop")
    [result] = results
    assert result.payload() == {"canceled": {"reason": "The user pressed stop", "by": "user"}}


async def test_call_after_cancellation_does_not_run():
    executions.clear()
    cancellation = Cancellation()
    cancellation.cancel()
    result = await invoke(call_of("add", a=1, b=2), toolbox, cancellation=cancellation)
    assert (result.type, executions) == (ResultType.CANCELED, [])


async def test_cancel_while_waiting_for_consent_gives_canceled():
    asked = anyio.Event()

    async def slow_person(request: ConsentRequest) -> bool:
        asked.set()
        await anyio.sleep_forever()
        return True

    cancellation = Cancellation()
    results: list[ToolResult] = []
    policy = PermissionPolicy(consent=slow_person)

    async def call() -> None:
        results.append(
            await invoke(call_of("shell_run", command="ls"), toolbox, policy=policy, cancellation=cancellation)
        )

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await asked.wait()
        cancellation.cancel()
    assert results[0].type is ResultType.CANCELED


async def test_filter_cancel_gives_canceled_by_policy():
    async def veto(ctx: InvocationContext, call_next: Next) -> None:
        ctx.cancel = True

    executions.clear()
    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[veto])
    assert result.payload() == {"canceled": {"reason": "A filter canceled the call", "by": "policy"}}
    assert executions == []


async def test_filter_cancel_then_call_next_does_not_run_the_tool():
    async def veto(ctx: InvocationContext, call_next: Next) -> None:
        ctx.cancel = True
        await call_next(ctx)

    executions.clear()
    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[veto])
    assert (result.type, executions) == (ResultType.CANCELED, [])


async def test_denied_by_rule():
    result = await invoke(call_of("delete_note", note_id="1"), toolbox, policy=PermissionPolicy(deny=["delete_*"]))
    assert result.payload() == {
        "denied": {"tool": "delete_note", "reason": "the policy denies tools matching 'delete_*'"}
    }


async def test_denied_by_consent_handler():
    async def no(request: ConsentRequest) -> ConsentAnswer:
        return ConsentAnswer(False, reason="not now")

    result = await invoke(call_of("shell_run", command="ls"), toolbox, policy=PermissionPolicy(consent=no))
    assert result.payload() == {"denied": {"tool": "shell_run", "reason": "not now"}}


async def test_denied_when_no_handler():
    result = await run("shell_run", command="ls")
    assert result.type is ResultType.DENIED
    assert result.needs_followup


async def test_allowed_by_consent_handler_runs():
    async def yes(request: ConsentRequest) -> bool:
        return True

    result = await invoke(call_of("shell_run", command="ls"), toolbox, policy=PermissionPolicy(consent=yes))
    assert result.data == "ran ls"


async def test_approval_with_edited_arguments_runs_the_call_with_them():
    async def edited(request: ConsentRequest) -> ConsentAnswer:
        return ConsentAnswer(True, arguments={"command": "ls -l"})

    result = await invoke(call_of("shell_run", command="rm -rf /"), toolbox, policy=PermissionPolicy(consent=edited))
    assert result.data == "ran ls -l"


async def test_approval_with_invalid_edited_arguments_is_an_invalid_parameters_error():
    async def edited(request: ConsentRequest) -> ConsentAnswer:
        return ConsentAnswer(True, arguments={"command": 7})

    result = await invoke(call_of("shell_run", command="ls"), toolbox, policy=PermissionPolicy(consent=edited))
    assert (result.type, result.error_code) == (ResultType.ERROR, "invalid_parameters")


async def test_an_approval_with_edited_arguments_is_not_a_grant():
    answers = iter([ConsentAnswer(True, scope="thread", arguments={"command": "ls"}), ConsentAnswer(False)])

    async def ask(request: ConsentRequest) -> ConsentAnswer:
        return next(answers)

    pipeline = Pipeline(toolbox, policy=PermissionPolicy(consent=ask))
    await pipeline.invoke(call_of("shell_run", "c1", command="pwd"), thread_id="t1")
    second = await pipeline.invoke(call_of("shell_run", "c2", command="pwd"), thread_id="t1")
    assert second.type is ResultType.DENIED


async def test_repeated_identical_call_is_denied_without_asking_again():
    asked: list[ConsentRequest] = []

    async def no(request: ConsentRequest) -> bool:
        asked.append(request)
        return False

    pipeline = Pipeline(toolbox, policy=PermissionPolicy(consent=no))
    first = await pipeline.invoke(call_of("shell_run", "c1", command="rm x"), thread_id="t1")
    second = await pipeline.invoke(call_of("shell_run", "c2", command="rm x"), thread_id="t1")
    assert (first.type, second.type) == (ResultType.DENIED, ResultType.DENIED)
    assert len(asked) == 1


async def test_denied_call_never_reaches_the_filters():
    seen: list[str] = []

    async def record(ctx: InvocationContext, call_next: Next) -> None:
        seen.append(ctx.tool_call.name)
        await call_next(ctx)

    await invoke(call_of("shell_run", command="ls"), toolbox, filters=[record])
    assert seen == []


# -- execution ---------------------------------------------------------------------------------


async def test_sync_tool_runs_in_a_worker_thread():
    @tool
    def thread_id() -> int:
        return threading.get_ident()

    result = await invoke(call_of("thread_id"), Toolbox([thread_id]))
    assert result.data != threading.get_ident()


async def test_inline_sync_tool_runs_on_the_event_loop_thread():
    @tool(inline=True)
    def thread_id() -> int:
        return threading.get_ident()

    result = await invoke(call_of("thread_id"), Toolbox([thread_id]))
    assert result.data == threading.get_ident()


async def test_tool_context_is_filled_in():
    result = await invoke(call_of("whoami", "c9"), toolbox, thread_id="t7")
    assert result.data == {"call": "c9", "thread": "t7", "tool": "whoami"}


# -- filters -----------------------------------------------------------------------------------


def recording(label: str):
    async def record(ctx: InvocationContext, call_next: Next) -> None:
        ctx.properties.setdefault("order", []).append(f"{label}>")
        await call_next(ctx)
        ctx.properties["order"].append(f"<{label}")

    return record


async def test_filters_run_in_the_order_given_around_the_tool():
    ctx = await Pipeline(toolbox, filters=[recording("a"), recording("b")]).run(call_of("add", a=1, b=2))
    assert ctx.properties["order"] == ["a>", "b>", "<b", "<a"]


async def test_filter_sees_the_permission_and_mode():
    seen: list[tuple[Any, ...]] = []

    async def inspect(ctx: InvocationContext, call_next: Next) -> None:
        assert ctx.permission is not None
        seen.append((ctx.mode, ctx.permission.decision, ctx.permission.source))
        await call_next(ctx)

    await invoke(call_of("get_weather", city="Oslo"), toolbox, filters=[inspect])
    assert seen == [("read", "allow", "preset")]


async def test_result_set_by_a_filter_short_circuits_the_tool():
    async def cached(ctx: InvocationContext, call_next: Next) -> None:
        ctx.result = ToolResult.ok(ctx.tool_call.id, 42)

    executions.clear()
    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[cached])
    assert (result.data, executions) == (42, [])


async def test_filter_sees_the_result_after_call_next():
    outcomes: list[ResultType] = []

    async def after(ctx: InvocationContext, call_next: Next) -> None:
        await call_next(ctx)
        assert ctx.result is not None
        outcomes.append(ctx.result.type)

    await invoke(call_of("hang"), toolbox, filters=[after])
    assert outcomes == [ResultType.TIMEOUT]


async def test_terminate_and_properties_are_visible_to_the_caller():
    async def stop(ctx: InvocationContext, call_next: Next) -> None:
        ctx.properties["seen"] = True
        ctx.terminate = True
        await call_next(ctx)

    batch = await invoke_batch([call_of("add", a=1, b=2)], toolbox, filters=[stop])
    assert batch.terminate
    assert batch.contexts[0].properties == {"seen": True}


async def test_failing_filter_becomes_an_error_result():
    async def broken(ctx: InvocationContext, call_next: Next) -> None:
        raise KeyError("oops")

    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[broken])
    assert result.error == IsErrorId("KeyError", within="A filter failed while running 'add': {}")


async def test_filter_that_swallows_the_call_gives_an_error():
    async def swallow(ctx: InvocationContext, call_next: Next) -> None:
        return None

    result = await invoke(call_of("add", a=1, b=2), toolbox, filters=[swallow])
    assert result.type is ResultType.ERROR
    assert "neither called call_next nor set ctx.result" in (result.error or "")


# -- batches -----------------------------------------------------------------------------------


async def test_batch_indices():
    indices: list[tuple[int, int, int]] = []

    async def record(ctx: InvocationContext, call_next: Next) -> None:
        indices.append((ctx.request_index, ctx.tool_index, ctx.tool_count))
        await call_next(ctx)

    calls = [call_of("add", f"c{i}", a=i, b=1) for i in range(3)]
    await invoke_batch(calls, toolbox, filters=[record], request_index=4)
    assert sorted(indices) == [(4, 0, 3), (4, 1, 3), (4, 2, 3)]


async def test_batch_results_follow_the_model_order():
    calls = [call_of("add", "c0", a=1, b=1), call_of("nope", "c1"), call_of("add", "c2", a="x", b=1)]
    batch = await invoke_batch(calls, toolbox)
    assert [result.call_id for result in batch.results] == ["c0", "c1", "c2"]
    assert [result.error_code for result in batch.results] == [None, "unknown_tool", "invalid_parameters"]


async def test_batch_runs_read_calls_concurrently():
    arrived = 0
    both_here = anyio.Event()

    @tool
    async def get_part(n: int) -> int:
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both_here.set()
        await both_here.wait()  # would never return if the calls ran one after the other
        return n

    with anyio.fail_after(5):
        batch = await invoke_batch([call_of("get_part", "a", n=1), call_of("get_part", "b", n=2)], Toolbox([get_part]))
    assert [result.data for result in batch.results] == [1, 2]


@pytest.mark.asyncio_only
async def test_a_waiting_call_in_the_middle_of_a_batch_runs_alongside_the_calls_after_it():
    started: list[int] = []
    last_started = anyio.Event()

    @tool
    async def get_item(n: int) -> int:
        started.append(n)
        if n == 3:
            last_started.set()
        if n == 2:
            await last_started.wait()  # the call after it must start while this one waits
        return n

    calls = [call_of("get_item", f"c{n}", n=n) for n in (1, 2, 3)]
    with anyio.fail_after(5):
        batch = await invoke_batch(calls, Toolbox([get_item]))
    assert started == [1, 2, 3]
    assert [result.data for result in batch.results] == [1, 2, 3]


@pytest.mark.asyncio_only
async def test_calls_of_a_batch_that_never_wait_run_in_the_callers_task():
    import asyncio

    tasks: list[object] = []

    @tool
    async def get_task_name(n: int) -> int:
        tasks.append(asyncio.current_task())
        return n

    calls = [call_of("get_task_name", f"c{n}", n=n) for n in range(3)]
    await invoke_batch(calls, Toolbox([get_task_name]))
    assert tasks == [asyncio.current_task()] * 3


async def test_batch_runs_destructive_calls_alone_and_in_order():
    active: list[str] = []
    log: list[tuple[str, int]] = []

    @tool
    async def delete_row(row: str) -> str:
        active.append(row)
        log.append((row, len(active)))
        await anyio.lowlevel.checkpoint()
        active.remove(row)
        return row

    @tool
    async def get_row(row: str) -> str:
        active.append(row)
        log.append((row, len(active)))
        await anyio.lowlevel.checkpoint()
        active.remove(row)
        return row

    calls = [
        call_of("get_row", "c0", row="r1"),
        call_of("delete_row", "c1", row="d1"),
        call_of("delete_row", "c2", row="d2"),
        call_of("get_row", "c3", row="r2"),
    ]
    await invoke_batch(calls, Toolbox([delete_row, get_row]))
    assert log == [("r1", 1), ("d1", 1), ("d2", 1), ("r2", 1)]


async def test_batch_concurrency_is_capped():
    active = 0
    peak = 0

    @tool
    async def get_item(n: int) -> int:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await anyio.lowlevel.checkpoint()
        active -= 1
        return n

    pipeline = Pipeline(Toolbox([get_item]), max_concurrency=2)
    await pipeline.invoke_batch([call_of("get_item", f"c{i}", n=i) for i in range(6)])
    assert peak == 2


@pytest.mark.parametrize("name", ["add", "add_sync"])
async def test_sync_and_async_tools_give_the_same_result(name: str):
    assert (await run(name, a=2, b=3)).data == 5


async def test_arguments_without_json_form_are_denied_when_consent_is_needed():
    async def yes(request: ConsentRequest) -> bool:
        return True

    @tool
    def local_scale(x: float) -> float:
        return x

    call = call_of("local_scale", x=float("nan"))
    result = await invoke(call, Toolbox([local_scale]), policy=PermissionPolicy(consent=yes))
    assert result.type is ResultType.DENIED
    assert result.payload()["denied"]["reason"] == IsErrorId("ValueError", within="the permission check failed ({})")


async def test_failing_approval_store_denies_the_call():
    class BrokenStore(MemoryApprovalStore):
        async def find_denial(self, thread_id: str | None, tool: str, args_hash: str) -> str | None:
            raise ConnectionError("store unreachable")

    result = await invoke(call_of("shell_run", command="ls"), toolbox, policy=PermissionPolicy(store=BrokenStore()))
    assert result.payload() == {
        "denied": {
            "tool": "shell_run",
            "reason": IsErrorId("ConnectionError", within="the permission check failed ({})"),
        }
    }


# -- batches: cancellation and deadlines of calls running together -------------------------------


@tool(timeout=0.05)
async def get_slowly(n: int) -> int:
    await anyio.sleep_forever()
    return n  # pragma: no cover


@tool
async def get_now(n: int) -> int:
    await anyio.lowlevel.checkpoint()
    return n


async def test_batch_calls_time_out_one_by_one():
    calls = [call_of("get_slowly", "c0", n=0), call_of("get_now", "c1", n=1)]
    with anyio.fail_after(5):
        batch = await invoke_batch(calls, Toolbox([get_slowly, get_now]))
    assert [result.type for result in batch.results] == [ResultType.TIMEOUT, ResultType.SUCCESS]


async def test_cancelling_a_batch_answers_every_running_call():
    running = 0
    all_running = anyio.Event()

    @tool
    async def get_forever(n: int) -> int:
        nonlocal running
        running += 1
        if running == 3:
            all_running.set()
        await anyio.sleep_forever()
        return n  # pragma: no cover

    cancellation = Cancellation()
    batches: list[Any] = []

    async def run_batch() -> None:
        calls = [call_of("get_forever", f"c{i}", n=i) for i in range(3)]
        batches.append(await invoke_batch(calls, Toolbox([get_forever]), cancellation=cancellation))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run_batch)
            await all_running.wait()
            cancellation.cancel("stop")
    assert [(result.call_id, result.type) for result in batches[0].results] == [
        ("c0", ResultType.CANCELED),
        ("c1", ResultType.CANCELED),
        ("c2", ResultType.CANCELED),
    ]


async def test_a_batch_cancelled_from_outside_stops_its_calls():
    started = anyio.Event()
    stopped: list[int] = []

    @tool
    async def get_forever(n: int) -> int:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.append(n)
        return n  # pragma: no cover

    with anyio.fail_after(5):
        with anyio.move_on_after(0.05) as scope:
            await invoke_batch([call_of("get_forever", f"c{i}", n=i) for i in range(2)], Toolbox([get_forever]))
    assert scope.cancelled_caught and started.is_set()
    assert sorted(stopped) == [0, 1]


async def test_batches_off_asyncio_run_in_an_anyio_task_group(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(guard, "asyncio_loop", lambda: None)  # as under trio
    calls = [call_of("get_slowly", "c0", n=0), call_of("get_now", "c1", n=1), call_of("get_now", "c2", n=2)]
    with anyio.fail_after(5):
        batch = await Pipeline(Toolbox([get_slowly, get_now]), max_concurrency=2).invoke_batch(calls)
    assert [result.type for result in batch.results] == [ResultType.TIMEOUT, ResultType.SUCCESS, ResultType.SUCCESS]


# -- the sync calls of a batch: one worker thread, each call its own outcome -----------------------


@tool
def get_number(n: int) -> int:
    return n


@tool
def get_thread(n: int) -> list[int]:
    return [n, threading.get_ident()]


@tool
def fail_sync(kind: str) -> None:
    if kind == "tool":
        raise ToolError("The archive is closed", code="archive_closed")
    raise ValueError("boom")


blocked, block_started = threading.Event(), threading.Event()


@tool(timeout=0.05)
def get_blocked(ctx: ToolContext) -> str:
    block_started.set()
    blocked.wait(5)
    return "late" if ctx.cancelled else "in time"


@tool
async def get_async(n: int) -> int:
    return n


@tool(inline=True)
def get_inline(n: int) -> int:
    return n


sync_box = Toolbox([get_number, get_thread, fail_sync, get_blocked, get_async, get_inline])


@pytest.fixture
def unblock() -> Any:
    blocked.clear()
    block_started.clear()
    yield
    blocked.set()  # the abandoned call's thread ends


@pytest.mark.asyncio_only  # the shared thread is the asyncio path's (on trio each call has anyio's own hop)
async def test_the_sync_calls_of_a_batch_share_one_worker_thread():
    calls = [call_of("get_thread", f"c{n}", n=n) for n in range(8)]
    batch = await Pipeline(sync_box).invoke_batch(calls)
    assert [result.call_id for result in batch.results] == [call.id for call in calls]
    assert [result.data[0] for result in batch.results] == list(range(8))  # each call its own result
    threads = {result.data[1] for result in batch.results}
    assert len(threads) == 1 and threading.get_ident() not in threads


async def test_sync_async_and_inline_calls_of_a_batch_answer_in_the_models_order():
    names = ["get_number", "get_async", "get_number", "get_inline", "get_number"]
    calls = [call_of(name, f"c{n}", n=n) for n, name in enumerate(names)]
    batch = await Pipeline(sync_box).invoke_batch(calls)
    assert [(result.call_id, result.data) for result in batch.results] == [(f"c{n}", n) for n in range(5)]


async def test_a_sync_call_past_its_deadline_times_out_while_the_others_of_its_batch_succeed(unblock: None):
    calls = [call_of("get_blocked", "c0"), *(call_of("get_number", f"c{n}", n=n) for n in range(1, 4))]
    with anyio.fail_after(5):  # the others do not wait for the blocked call, which never returns in time
        batch = await Pipeline(sync_box).invoke_batch(calls)
    [timeout, *others] = batch.results
    assert (timeout.call_id, timeout.payload()) == ("c0", {"timeout": {"durationMs": 50, "effectUnknown": True}})
    assert [(result.type, result.data) for result in others] == [(ResultType.SUCCESS, n) for n in range(1, 4)]


async def test_a_sync_call_that_raises_gives_an_error_and_the_others_of_its_batch_succeed(
    caplog: pytest.LogCaptureFixture,
):
    caplog.set_level(logging.CRITICAL, logger="toolwire.pipeline")
    calls = [
        call_of("get_number", "c0", n=0),
        call_of("fail_sync", "c1", kind="value"),
        call_of("fail_sync", "c2", kind="tool"),
        call_of("get_number", "c3", n=3),
    ]
    batch = await Pipeline(sync_box).invoke_batch(calls)
    first, error, refused, last = batch.results
    assert (first.data, last.data) == (0, 3)
    assert (error.type, error.error_code, error.error_type) == (ResultType.ERROR, "execution_error", "ValueError")
    assert (refused.error_code, refused.error) == ("archive_closed", "The archive is closed")


async def test_cancelling_a_batch_of_sync_calls_answers_every_call(unblock: None):
    cancellation = Cancellation()
    batches: list[Any] = []

    async def run_batch() -> None:
        calls = [call_of("get_blocked", "c0"), call_of("get_number", "c1", n=1)]
        batches.append(await Pipeline(sync_box).invoke_batch(calls, cancellation=cancellation))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(run_batch)
            await anyio.to_thread.run_sync(block_started.wait, 5)
            cancellation.cancel("The user pressed stop")
    [blocked_result, other] = batches[0].results
    assert blocked_result.payload() == {"canceled": {"reason": "The user pressed stop", "by": "user"}}
    assert other.call_id == "c1" and other.type in (ResultType.SUCCESS, ResultType.CANCELED)  # it may have run first


async def test_a_batch_of_sync_calls_cancelled_from_outside_leaves_nothing_waiting(unblock: None):
    calls = [call_of("get_blocked", "c0"), call_of("get_number", "c1", n=1)]
    with anyio.fail_after(5):
        with anyio.move_on_after(0.01) as scope:
            await Pipeline(sync_box).invoke_batch(calls)
    assert scope.cancelled_caught
    assert (await Pipeline(sync_box).invoke_batch([call_of("get_number", "c2", n=2)])).results[0].data == 2


async def test_filters_run_on_the_event_loop_around_each_sync_call_of_a_batch():
    seen: list[tuple[str, int, str]] = []

    async def around(ctx: InvocationContext, call_next: Next) -> None:
        seen.append(("before", threading.get_ident(), ctx.tool_call.id))
        await call_next(ctx)
        seen.append(("after", threading.get_ident(), ctx.tool_call.id))

    calls = [call_of("get_number", f"c{n}", n=n) for n in range(3)]
    batch = await Pipeline(sync_box, filters=[around]).invoke_batch(calls)
    assert [result.data for result in batch.results] == [0, 1, 2]
    loop_thread = threading.get_ident()
    assert sorted(seen) == sorted((when, loop_thread, f"c{n}") for when in ("before", "after") for n in range(3))


async def test_a_denied_sync_call_of_a_batch_never_runs_and_the_others_do():
    @tool
    def delete_record(n: int) -> int:
        executions.append(f"delete {n}")
        return n

    executions.clear()
    policy = PermissionPolicy(deny=["delete_record"])
    calls = [call_of("get_number", "c0", n=0), call_of("delete_record", "c1", n=1), call_of("get_number", "c2", n=2)]
    batch = await Pipeline(Toolbox([get_number, delete_record]), policy=policy).invoke_batch(calls)
    assert [result.type for result in batch.results] == [ResultType.SUCCESS, ResultType.DENIED, ResultType.SUCCESS]
    assert executions == []


# -- each result recorded the moment it is decided; calls approved before a restart -------------------


async def test_each_result_is_recorded_before_the_observer_hears_of_it() -> None:
    events: list[str] = []

    async def record(result: ToolResult) -> ToolResult:
        events.append(f"recorded {result.call_id}")
        return result

    def observe(event: object) -> None:
        if isinstance(event, ToolCallFinished):
            events.append(f"finished {event.call.id}")

    calls = [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}), ToolCall(id="c2", name="nope", arguments={})]
    await Pipeline(Toolbox([add])).invoke_batch(calls, observer=observe, record=record)
    # The calls run together: their order is the scheduler's (trio varies it), each call's is fixed.
    assert sorted(events) == ["finished c1", "finished c2", "recorded c1", "recorded c2"]
    assert [events.index(f"recorded {id}") < events.index(f"finished {id}") for id in ("c1", "c2")] == [True, True]


async def test_the_result_a_record_returns_is_the_one_that_stands() -> None:
    earlier = ToolResult.denied("c1", "add", "refused before the restart")

    async def record(result: ToolResult) -> ToolResult:
        return earlier  # the ledger had one already: the first result written wins

    batch = await Pipeline(Toolbox([add])).invoke_batch(
        [ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2})], record=record
    )
    assert batch.results == [earlier]


async def test_a_call_approved_before_a_restart_is_not_asked_again() -> None:
    asked: list[str] = []

    async def consent(request: ConsentRequest) -> bool:
        asked.append(request.call.id)
        return False

    @tool(requires_permission=True)
    async def delete_file(path: str) -> str:
        return f"deleted {path}"

    pipeline = Pipeline(Toolbox([delete_file]), policy=PermissionPolicy(consent=consent))
    calls = [
        ToolCall(id="c1", name="delete_file", arguments={"path": "a"}),
        ToolCall(id="c2", name="delete_file", arguments={"path": "b"}),
    ]
    batch = await pipeline.invoke_batch(calls, approved={"c1"})
    assert [result.type for result in batch.results] == [ResultType.SUCCESS, ResultType.DENIED]
    assert asked == ["c2"]


# -- progress of a tool that runs in a worker thread ----------------------------------------------


async def test_a_thread_tools_progress_is_told_in_the_event_loops_thread() -> None:
    @tool
    def get_pages(ctx: ToolContext) -> int:
        ctx.report_progress(1, 1)
        return 1

    told: list[int] = []

    def observe(event: object) -> None:
        if isinstance(event, ToolProgress):
            told.append(threading.get_ident())

    await Pipeline(Toolbox([get_pages])).run(ToolCall(id="c1", name="get_pages", arguments={}), observer=observe)
    assert told == [threading.get_ident()]
