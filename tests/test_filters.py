from __future__ import annotations

import logging
from random import Random
from typing import Any

import anyio
import httpx
import pytest

from toolwire import (
    Agent,
    Cancellation,
    InvocationContext,
    Pipeline,
    ResultType,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolError,
    ToolResult,
    invoke,
    invoke_batch,
    tool,
)
from toolwire.envelopes import arguments_hash, canonical_json
from toolwire.errors import UsageError
from toolwire.filters import Audit, Cache, RateLimit, Retry
from toolwire.models.anthropic import AnthropicModel
from toolwire.models.openai import OpenAIModel
from toolwire.pipeline import Filter, Next
from toolwire.testing import ScriptedModel, validate_transcript


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeSleep:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def call(name: str, id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=id, name=name, arguments=arguments)


class Counter:
    """Tools that record each execution, so tests can tell whether the tool really ran."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        runs = self.runs

        @tool
        async def get_item(key: str) -> str:
            runs.append(f"get_item:{key}")
            return key.upper()

        @tool
        async def list_items() -> list[str]:
            runs.append("list_items")
            return ["a"]

        @tool
        async def update_item(key: str) -> str:
            runs.append(f"update_item:{key}")
            return "ok"

        @tool
        async def update_broken(key: str) -> str:
            runs.append("update_broken")
            raise ToolError("cannot update")

        self.toolbox = Toolbox([get_item, list_items, update_item, update_broken])


@pytest.fixture
def counter() -> Counter:
    return Counter()


def flaky_toolbox(failures: list[BaseException | ToolResult], **options: Any) -> tuple[Toolbox, list[str]]:
    """A tool `fetch` that fails with the given outcomes in turn, then succeeds."""
    keys: list[str] = []

    @tool(**options)
    async def fetch(context: ToolContext) -> str | ToolResult:
        keys.append(context.idempotency_key)
        if failures:
            failure = failures.pop(0)
            if isinstance(failure, ToolResult):
                return failure  # a tool may return its own result, e.g. a Timeout
            raise failure
        return "done"

    return Toolbox([fetch]), keys


# -- the chain ---------------------------------------------------------------------------------


async def test_filters_run_in_the_given_order_first_outermost(counter: Counter):
    def recorder(label: str):
        async def record(ctx: InvocationContext, call_next: Next) -> None:
            ctx.properties.setdefault("order", []).append(f"{label} before")
            await call_next(ctx)
            ctx.properties["order"].append(f"{label} after")

        return record

    pipeline = Pipeline(counter.toolbox, filters=[recorder("a"), recorder("b")])
    ctx = await pipeline.run(call("get_item", key="x"))
    assert ctx.properties["order"] == ["a before", "b before", "b after", "a after"]


# -- Cache -------------------------------------------------------------------------------------


async def test_cache_hit_does_not_run_the_tool(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    first = await pipeline.invoke(call("get_item", "c1", key="x"))
    second = await pipeline.invoke(call("get_item", "c2", key="x"))
    assert counter.runs == ["get_item:x"]
    assert second.data == first.data == "X"


async def test_cache_hit_carries_the_new_call_id(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    await pipeline.invoke(call("get_item", "c1", key="x"))
    hit = await pipeline.invoke(call("get_item", "c2", key="x"))
    assert hit.call_id == "c2"


async def test_cache_reports_miss_then_hit_in_properties(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    miss = await pipeline.run(call("get_item", "c1", key="x"))
    hit = await pipeline.run(call("get_item", "c2", key="x"))
    assert (miss.properties["cache"], hit.properties["cache"]) == ("miss", "hit")


async def test_cache_key_ignores_argument_order():
    runs: list[int] = []

    @tool
    async def get_sum(a: int, b: int) -> int:
        runs.append(a + b)
        return a + b

    pipeline = Pipeline(Toolbox([get_sum]), filters=[Cache()])
    await pipeline.invoke(ToolCall(id="c1", name="get_sum", arguments={"a": 1, "b": 2}))
    await pipeline.invoke(ToolCall(id="c2", name="get_sum", arguments={"b": 2, "a": 1}))
    assert runs == [3]


async def test_cache_entry_expires_after_ttl(counter: Counter):
    clock = FakeClock()
    pipeline = Pipeline(counter.toolbox, filters=[Cache(ttl=60.0, clock=clock)])
    await pipeline.invoke(call("get_item", "c1", key="x"))
    clock.now = 59.9
    await pipeline.invoke(call("get_item", "c2", key="x"))
    assert len(counter.runs) == 1
    clock.now = 60.0
    await pipeline.invoke(call("get_item", "c3", key="x"))
    assert len(counter.runs) == 2


async def test_cache_is_per_thread(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    await pipeline.invoke(call("get_item", "c1", key="x"), thread_id="a")
    await pipeline.invoke(call("get_item", "c1", key="x"), thread_id="b")
    assert counter.runs == ["get_item:x", "get_item:x"]


async def test_cache_is_cleared_by_a_successful_write_in_the_same_thread(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    await pipeline.invoke(call("get_item", "c1", key="x"), thread_id="a")
    await pipeline.invoke(call("update_item", "c2", key="x"), thread_id="a")
    await pipeline.invoke(call("get_item", "c3", key="x"), thread_id="a")
    assert counter.runs == ["get_item:x", "update_item:x", "get_item:x"]


async def test_cache_is_kept_after_a_write_in_another_thread(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    await pipeline.invoke(call("get_item", "c1", key="x"), thread_id="a")
    await pipeline.invoke(call("update_item", "c2", key="x"), thread_id="b")
    await pipeline.invoke(call("get_item", "c3", key="x"), thread_id="a")
    assert counter.runs == ["get_item:x", "update_item:x"]


async def test_cache_is_kept_after_a_failed_write(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache()])
    await pipeline.invoke(call("get_item", "c1", key="x"), thread_id="a")
    failed = await pipeline.invoke(call("update_broken", "c2", key="x"), thread_id="a")
    await pipeline.invoke(call("get_item", "c3", key="x"), thread_id="a")
    assert failed.type is ResultType.ERROR
    assert counter.runs == ["get_item:x", "update_broken"]


async def test_cache_stores_only_successes():
    toolbox, keys = flaky_toolbox([ToolError("not yet")], mode="read")
    pipeline = Pipeline(toolbox, filters=[Cache()])
    failed = await pipeline.invoke(call("fetch", "c1"))
    succeeded = await pipeline.invoke(call("fetch", "c2"))
    assert (failed.type, succeeded.type, len(keys)) == (ResultType.ERROR, ResultType.SUCCESS, 2)


async def test_cache_evicts_the_least_recently_used_entry(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[Cache(max_entries=2)])
    for key in ("a", "b", "a", "c"):  # reading "a" again makes "b" the least recently used
        await pipeline.invoke(call("get_item", key=key))
    counter.runs.clear()
    await pipeline.invoke(call("get_item", key="a"))
    await pipeline.invoke(call("get_item", key="b"))
    assert counter.runs == ["get_item:b"]


async def test_cache_clear_forgets_one_thread_or_all(counter: Counter):
    cache = Cache()
    for thread in ("a", "b", "c"):
        await invoke(call("get_item", key="x"), counter.toolbox, filters=[cache], thread_id=thread)
    cache.clear("a")
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0


async def test_cache_does_not_store_a_read_that_overlaps_a_write():
    reading, written = anyio.Event(), anyio.Event()
    runs: list[str] = []

    @tool
    async def get_value() -> str:
        runs.append("get")
        reading.set()
        await written.wait()  # the write completes while this read is in flight
        return "old"

    @tool
    async def update_value() -> str:
        await reading.wait()  # whichever call the scheduler starts first
        written.set()
        return "new"

    toolbox = Toolbox([get_value, update_value])
    cache = Cache()
    batch = await invoke_batch([call("get_value", "c1"), call("update_value", "c2")], toolbox, filters=[cache])
    assert [result.type for result in batch.results] == [ResultType.SUCCESS, ResultType.SUCCESS]
    assert len(cache) == 0


async def test_cache_passes_through_arguments_without_a_canonical_form():
    runs: list[float] = []

    @tool
    async def get_ratio(x: float) -> str:
        runs.append(x)
        return "ok"

    pipeline = Pipeline(Toolbox([get_ratio]), filters=[Cache()])
    for call_id in ("c1", "c2"):  # NaN has no JSON form, so the call cannot be keyed
        result = await pipeline.invoke(call("get_ratio", call_id, x=float("nan")))
        assert result.success
    assert len(runs) == 2


def test_cache_rejects_a_non_positive_ttl():
    with pytest.raises(UsageError):
        Cache(ttl=0)


# -- Retry -------------------------------------------------------------------------------------


async def test_retry_gives_up_after_the_given_attempts():
    toolbox, keys = flaky_toolbox([ConnectionError("down")] * 5, mode="read")
    pipeline = Pipeline(toolbox, filters=[Retry(3, sleep=FakeSleep())])
    ctx = await pipeline.run(call("fetch"))
    assert ctx.result is not None and ctx.result.error_type == "ConnectionError"
    assert (len(keys), ctx.properties["attempts"]) == (3, 3)


async def test_retry_returns_the_success_after_a_transient_failure():
    toolbox, _ = flaky_toolbox([ConnectionResetError("reset")], mode="read")
    pipeline = Pipeline(toolbox, filters=[Retry(sleep=FakeSleep())])
    ctx = await pipeline.run(call("fetch"))
    assert ctx.result == ToolResult.ok("c1", "done")
    assert ctx.properties["attempts"] == 2


async def test_retry_never_retries_a_non_idempotent_write():
    toolbox, keys = flaky_toolbox([ConnectionError("down")], mode="safe_write")
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert result.type is ResultType.ERROR
    assert len(keys) == 1


async def test_retry_retries_an_idempotent_write():
    toolbox, keys = flaky_toolbox([ConnectionError("down")], mode="safe_write", idempotent=True)
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert result.type is ResultType.SUCCESS
    assert len(keys) == 2


async def test_retry_keeps_the_idempotency_key_across_attempts():
    toolbox, keys = flaky_toolbox([TimeoutError(), TimeoutError()], mode="external", idempotent=True)
    await invoke(call("fetch"), toolbox, filters=[Retry(3, sleep=FakeSleep())], thread_id="t")
    assert len(keys) == 3
    assert set(keys) == {ToolContext("c1", "fetch", "t").idempotency_key}


async def test_retry_retries_a_retryable_tool_error():
    toolbox, keys = flaky_toolbox([ToolError("busy", retryable=True)], mode="read")
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert (result.type, len(keys)) == (ResultType.SUCCESS, 2)


async def test_retry_does_not_retry_a_plain_tool_error():
    toolbox, keys = flaky_toolbox([ToolError("no such item")], mode="read")
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert (result.type, len(keys)) == (ResultType.ERROR, 1)


async def test_retry_does_not_retry_an_unlisted_exception():
    toolbox, keys = flaky_toolbox([ValueError("bad")], mode="read")
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert (result.error_type, len(keys)) == ("ValueError", 1)


async def test_retry_treats_the_configured_exception_names_as_transient():
    toolbox, keys = flaky_toolbox([ValueError("bad")], mode="read")
    retry = Retry(retry_on={"ValueError"}, sleep=FakeSleep())
    result = await invoke(call("fetch"), toolbox, filters=[retry])
    assert (result.type, len(keys)) == (ResultType.SUCCESS, 2)


async def test_retry_retries_a_timeout():
    toolbox, keys = flaky_toolbox([ToolResult.timeout(None, 5000)], mode="read")
    result = await invoke(call("fetch"), toolbox, filters=[Retry(sleep=FakeSleep())])
    assert (result.type, len(keys)) == (ResultType.SUCCESS, 2)


async def test_retry_backoff_doubles_up_to_the_cap():
    toolbox, _ = flaky_toolbox([ConnectionError()] * 9, mode="read")
    sleep = FakeSleep()
    retry = Retry(5, backoff=1.0, max_backoff=2.5, jitter=0.0, sleep=sleep)
    await invoke(call("fetch"), toolbox, filters=[retry])
    assert sleep.delays == [1.0, 2.0, 2.5, 2.5]


async def test_retry_adds_uniform_jitter_to_each_wait():
    toolbox, _ = flaky_toolbox([ConnectionError()] * 2, mode="read")
    sleep = FakeSleep()
    retry = Retry(3, backoff=0.1, jitter=0.5, sleep=sleep, random=Random(7))
    await invoke(call("fetch"), toolbox, filters=[retry])
    expected = Random(7)
    assert sleep.delays == [0.1 + expected.uniform(0, 0.5), 0.2 + expected.uniform(0, 0.5)]


async def test_retry_stops_when_the_caller_cancels_during_the_wait():
    toolbox, keys = flaky_toolbox([ConnectionError()] * 3, mode="read")
    cancellation = Cancellation()

    async def cancel_while_waiting(delay: float) -> None:
        cancellation.cancel("user left")

    retry = Retry(3, sleep=cancel_while_waiting)
    result = await invoke(call("fetch"), toolbox, filters=[retry], cancellation=cancellation)
    assert result == ToolResult.canceled("c1", "user left", "user")
    assert len(keys) == 1


async def test_retry_wait_is_interrupted_by_cancellation():
    toolbox, keys = flaky_toolbox([ConnectionError()] * 3, mode="read")
    cancellation = Cancellation()
    waiting = anyio.Event()

    async def wait_forever(delay: float) -> None:
        waiting.set()
        await anyio.sleep_forever()

    result: list[ToolResult] = []

    async def run() -> None:
        result.append(
            await invoke(call("fetch"), toolbox, filters=[Retry(sleep=wait_forever)], cancellation=cancellation)
        )

    with anyio.fail_after(5):  # fail rather than hang if the wait ignores the cancellation
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            await waiting.wait()
            cancellation.cancel()
    assert [r.type for r in result] == [ResultType.CANCELED]


def test_retry_needs_at_least_one_attempt():
    with pytest.raises(UsageError):
        Retry(0)


# -- Audit -------------------------------------------------------------------------------------


def audit_records(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [record.__dict__["toolwire"] for record in caplog.records if record.name == "toolwire.audit"]


async def test_audit_logs_exactly_one_record_per_call(counter: Counter, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    pipeline = Pipeline(counter.toolbox, filters=[Audit()])
    await pipeline.invoke(call("get_item", "c1", key="x"))
    await pipeline.invoke(call("update_broken", "c2", key="x"))
    assert [record["call_id"] for record in audit_records(caplog)] == ["c1", "c2"]


async def test_audit_record_describes_the_call(counter: Counter, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    clock = iter([10.0, 10.25]).__next__
    await invoke(call("get_item", key="x"), counter.toolbox, filters=[Audit(clock=clock)], thread_id="t")
    assert audit_records(caplog) == [
        {
            "event": "call",
            "tool": "get_item",
            "call_id": "c1",
            "thread_id": "t",
            "mode": "read",
            "decision": "allow",
            "source": "preset",
            "outcome": "SUCCESS",
            "error_code": None,
            "duration_ms": 250.0,
            "arguments_hash": arguments_hash({"key": "x"}),
        }
    ]


async def test_audit_does_not_log_raw_arguments_by_default(counter: Counter, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    await invoke(call("get_item", key="hunter2"), counter.toolbox, filters=[Audit()])
    [record] = [record for record in caplog.records if record.name == "toolwire.audit"]
    assert "arguments" not in record.__dict__["toolwire"]
    assert "hunter2" not in caplog.text


async def test_audit_logs_raw_arguments_when_asked(counter: Counter, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    await invoke(call("get_item", key="x"), counter.toolbox, filters=[Audit(log_arguments=True)])
    [record] = audit_records(caplog)
    assert record["arguments"] == {"key": "x"}


async def test_audit_records_the_error_code_of_a_failure(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")
    toolbox, _ = flaky_toolbox([ToolError("gone", code="not_found")], mode="read")
    await invoke(call("fetch"), toolbox, filters=[Audit()])
    [record] = audit_records(caplog)
    assert (record["outcome"], record["error_code"]) == ("ERROR", "not_found")


async def test_audit_logs_and_reraises_when_the_chain_raises(counter: Counter, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")

    async def broken(ctx: InvocationContext, call_next: Next) -> None:
        raise RuntimeError("filter bug")

    result = await invoke(call("get_item", key="x"), counter.toolbox, filters=[Audit(), broken])
    [record] = audit_records(caplog)
    assert (record["outcome"], record["exception"]) == (None, "RuntimeError")
    # The pipeline saw the exception, so Audit re-raised it.
    assert result.error_type == "RuntimeError"


async def test_audit_logs_a_call_whose_arguments_cannot_be_hashed(caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="toolwire.audit")

    @tool
    async def get_ratio(x: float) -> str:
        return "ok"

    await invoke(call("get_ratio", x=float("nan")), Toolbox([get_ratio]), filters=[Audit()])
    [record] = audit_records(caplog)
    assert (record["outcome"], record["arguments_hash"]) == ("SUCCESS", None)


# -- RateLimit ---------------------------------------------------------------------------------


async def test_rate_limit_refuses_the_call_past_the_limit(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (2, 10.0)}, clock=FakeClock())])
    results = [await pipeline.invoke(call("get_item", f"c{i}", key="x")) for i in range(3)]
    assert [result.type for result in results] == [ResultType.SUCCESS, ResultType.SUCCESS, ResultType.ERROR]
    assert (results[2].error_code, results[2].needs_followup) == ("rate_limited", True)
    assert len(counter.runs) == 2


async def test_rate_limit_message_names_the_tool_the_limit_and_the_wait(counter: Counter):
    clock = FakeClock()
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (1, 10.0)}, clock=clock)])
    await pipeline.invoke(call("get_item", "c1", key="x"))
    clock.now = 4.0
    refused = await pipeline.invoke(call("get_item", "c2", key="x"))
    assert refused.error == (
        "Rate limit reached for 'get_item': at most 1 call per 10 s. Try again in 6.0 s, or continue without it."
    )


async def test_rate_limit_allows_calls_again_after_the_window(counter: Counter):
    clock = FakeClock()
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (1, 10.0)}, clock=clock)])
    await pipeline.invoke(call("get_item", "c1", key="x"))
    clock.now = 10.0
    result = await pipeline.invoke(call("get_item", "c2", key="x"))
    assert result.type is ResultType.SUCCESS


async def test_rate_limit_window_slides(counter: Counter):
    clock = FakeClock()
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (2, 10.0)}, clock=clock)])
    for now in (0.0, 5.0, 10.0):  # at 10 the call made at 0 has left the window
        clock.now = now
        await pipeline.invoke(call("get_item", key="x"))
    refused = await pipeline.invoke(call("get_item", key="x"))
    assert refused.error_code == "rate_limited"
    assert len(counter.runs) == 3


async def test_rate_limit_counts_each_tool_separately(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"*": (1, 10.0)}, clock=FakeClock())])
    first = await pipeline.invoke(call("get_item", key="x"))
    other = await pipeline.invoke(call("list_items"))
    assert (first.type, other.type) == (ResultType.SUCCESS, ResultType.SUCCESS)


async def test_rate_limit_is_shared_by_threads_by_default(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (1, 10.0)}, clock=FakeClock())])
    await pipeline.invoke(call("get_item", key="x"), thread_id="a")
    refused = await pipeline.invoke(call("get_item", key="x"), thread_id="b")
    assert refused.error_code == "rate_limited"


async def test_rate_limit_per_thread_counts_each_thread(counter: Counter):
    limit = RateLimit({"get_*": (1, 10.0)}, per_thread=True, clock=FakeClock())
    pipeline = Pipeline(counter.toolbox, filters=[limit])
    await pipeline.invoke(call("get_item", key="x"), thread_id="a")
    other = await pipeline.invoke(call("get_item", key="x"), thread_id="b")
    again = await pipeline.invoke(call("get_item", key="x"), thread_id="a")
    assert (other.type, again.error_code) == (ResultType.SUCCESS, "rate_limited")
    assert again.error is not None and "in this thread" in again.error


async def test_rate_limit_leaves_unmatched_tools_alone(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[RateLimit({"get_*": (1, 10.0)}, clock=FakeClock())])
    results = [await pipeline.invoke(call("list_items", f"c{i}")) for i in range(3)]
    assert all(result.success for result in results)


async def test_rate_limit_prefers_an_exact_name_to_a_glob(counter: Counter):
    limit = RateLimit({"get_*": (1, 10.0), "get_item": (3, 10.0)}, clock=FakeClock())
    pipeline = Pipeline(counter.toolbox, filters=[limit])
    results = [await pipeline.invoke(call("get_item", f"c{i}", key="x")) for i in range(3)]
    assert all(result.success for result in results)


async def test_rate_limit_holds_for_concurrent_calls_of_a_batch(counter: Counter):
    calls = [call("get_item", f"c{i}", key=str(i)) for i in range(5)]
    limit = RateLimit({"get_item": (3, 10.0)}, clock=FakeClock())
    batch = await invoke_batch(calls, counter.toolbox, filters=[limit])
    codes = [result.error_code for result in batch.results]
    assert codes.count("rate_limited") == 2
    assert len(counter.runs) == 3


async def test_rate_limit_forgets_idle_threads_but_not_active_ones(counter: Counter):
    clock = FakeClock()
    limit = RateLimit({"get_*": (1, 10.0)}, per_thread=True, clock=clock)
    pipeline = Pipeline(counter.toolbox, filters=[limit])
    for thread in range(1025):  # one past the size at which idle windows are swept
        await pipeline.invoke(call("get_item", key="x"), thread_id=f"idle-{thread}")
    clock.now = 100.0
    await pipeline.invoke(call("get_item", key="x"), thread_id="active")
    again = await pipeline.invoke(call("get_item", key="x"), thread_id="active")
    assert again.error_code == "rate_limited"
    assert len(limit._windows) == 1  # the idle windows were swept when "active" arrived


def test_rate_limit_rejects_an_empty_window():
    with pytest.raises(UsageError):
        RateLimit({"*": (1, 0.0)})


# -- a result set by a filter answers the current call (seed 003's caching example) -----------------------


def seed_003_cache() -> Filter:
    """Seed 003's caching example, written as a toolwire filter: it stores results as they are."""
    cache: dict[str, ToolResult] = {}

    async def cache_results(ctx: InvocationContext, call_next: Next) -> None:
        key = f"{ctx.tool_call.name}:{canonical_json(ctx.tool_call.arguments)}"
        if (cached := cache.get(key)) is not None:
            ctx.result = cached
            return  # skip the tool
        await call_next(ctx)
        if ctx.result is not None and ctx.result.type is ResultType.SUCCESS:
            cache[key] = ctx.result

    return cache_results


async def run_twice(counter: Counter) -> tuple[ScriptedModel, Any]:
    """A run whose model asks for the same read twice, in two turns, through the seed's cache."""
    model = ScriptedModel([[call("get_item", "c1", key="a")], [call("get_item", "c2", key="a")], "done"])
    agent = Agent(model, tools=list(counter.toolbox), filters=[seed_003_cache()])
    return model, await agent.run("twice")


async def test_a_cached_result_answers_the_call_it_is_set_for(counter: Counter):
    pipeline = Pipeline(counter.toolbox, filters=[seed_003_cache()])
    await pipeline.invoke(call("get_item", "c1", key="a"))
    result = await pipeline.invoke(call("get_item", "c2", key="a"))
    assert (result.call_id, result.data, counter.runs) == ("c2", "A", ["get_item:a"])


@pytest.mark.parametrize("call_id", ["", None], ids=["empty", "none"])
async def test_a_result_a_filter_builds_for_no_call_answers_the_current_one(call_id: str | None):
    async def canned(ctx: InvocationContext, call_next: Next) -> None:
        ctx.result = ToolResult.ok(call_id, "canned")

    result = await invoke(call("get_item", "c7", key="a"), Counter().toolbox, filters=[canned])
    assert result.call_id == "c7"


async def test_the_seed_003_cache_keeps_the_transcript_valid(counter: Counter):
    _, result = await run_twice(counter)
    validate_transcript(result.transcript)


async def test_the_seed_003_cache_keeps_the_next_openai_request_valid(counter: Counter):
    model, _ = await run_twice(counter)
    body = OpenAIModel("gpt-test", http_client=httpx.AsyncClient()).request_body(model.requests[-1])
    answered = [message["tool_call_id"] for message in body["messages"] if message["role"] == "tool"]
    assert answered == ["c1", "c2"]


async def test_the_seed_003_cache_keeps_the_next_anthropic_request_valid(counter: Counter):
    model, _ = await run_twice(counter)
    body = AnthropicModel("claude-test", api_key="key").request_body(model.requests[-1])
    blocks = [
        block for message in body["messages"] if isinstance(message["content"], list) for block in message["content"]
    ]
    assert [block["tool_use_id"] for block in blocks if block["type"] == "tool_result"] == ["c1", "c2"]
