"""`MemoryStore` keeps a bounded number of threads: the least recently used finished ones go.

What is finished (`MemoryStore`'s docstring): a thread with messages whose last run ended, with no
open call in the ledger, no protocol state a server holds and no live lease. The others stay,
whatever the bound. The last test runs the loop many times on the store `Agent()` makes and checks
that the heap comes back to where it was (issue 19, point 5; `bench/memory_bench.py` runs 20,000).
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import pytest

from toolwire import Agent, ToolCall
from toolwire.errors import ProviderError, UsageError
from toolwire.messages import AssistantMessage, ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import LedgerEntry, RunRecord, ThreadStore
from toolwire.store.memory import DEFAULT_MAX_THREADS, MemoryStore
from toolwire.testing import FunctionModel, Turn

LOOKUP = ToolCall(id="call_1", name="lookup", arguments={"query": "weather"})


async def finished(store: MemoryStore, thread_id: str) -> None:
    """A thread whose run answered: a prompt, then the model's final text."""
    await store.create_thread(thread_id)
    await store.append_messages(thread_id, [UserMessage("hi"), AssistantMessage("hello")])


async def kept(store: ThreadStore) -> list[str]:
    return [thread_id for thread_id in ("t1", "t2", "t3", "t4") if await store.thread_exists(thread_id)]


async def test_the_least_recently_used_finished_thread_goes_past_the_bound() -> None:
    store = MemoryStore(max_threads=2)
    for thread_id in ("t1", "t2", "t3"):
        await finished(store, thread_id)
    assert await kept(store) == ["t2", "t3"]


async def test_reading_a_thread_keeps_it() -> None:
    store = MemoryStore(max_threads=2)
    await finished(store, "t1")
    await finished(store, "t2")
    await store.load_messages("t1")  # t2 is now the least recently used
    await finished(store, "t3")
    assert await kept(store) == ["t1", "t3"]


async def test_a_thread_whose_run_is_open_is_never_dropped() -> None:
    store = MemoryStore(max_threads=1)
    await store.create_thread("t1")
    await store.append_messages("t1", [UserMessage("hi")])  # no answer yet
    for thread_id in ("t2", "t3", "t4"):
        await finished(store, thread_id)
    assert await kept(store) == ["t1", "t4"]


async def test_a_closed_run_is_finished() -> None:
    store = MemoryStore(max_threads=1)
    await store.append_messages("t1", [UserMessage("hi")])
    await store.save_run("t1", RunRecord(closed_at=1))  # canceled, nothing to resume
    await finished(store, "t2")
    assert await kept(store) == ["t2"]


async def test_a_thread_with_an_open_call_is_never_dropped() -> None:
    store = MemoryStore(max_threads=1)
    await finished(store, "t1")
    await store.record_calls([LedgerEntry(thread_id="t1", call=LOOKUP, request_index=0)])
    await finished(store, "t2")
    assert await kept(store) == ["t1", "t2"]


async def test_a_thread_without_messages_is_never_dropped() -> None:
    store = MemoryStore(max_threads=1)
    await store.create_thread("t1", principal="alice")  # a conversation opened, no prompt yet
    await finished(store, "t2")
    assert await kept(store) == ["t1", "t2"]


async def test_a_conversation_a_server_holds_is_kept_until_released() -> None:
    store = MemoryStore(max_threads=1)
    await finished(store, "t1")
    await store.save_wire_state("t1", {"role": "server", "outbox": []})
    await finished(store, "t2")
    assert await kept(store) == ["t1", "t2"]
    store.release_wire_state("t1")
    await finished(store, "t3")
    assert await kept(store) == ["t3"]


async def test_a_live_lease_keeps_its_thread() -> None:
    store = MemoryStore(max_threads=1)
    await finished(store, "t1")
    await store.acquire("t1", "replica-a", 3600)
    await finished(store, "t2")
    assert await kept(store) == ["t1", "t2"]


async def test_a_dropped_thread_takes_its_approvals_client_and_protocol_state_along() -> None:
    store = MemoryStore(max_threads=1)
    await finished(store, "t1")
    await store.grant("t1", "lookup")
    await store.approve_once("t1", "call_1", "lookup", "h")
    await store.remember_denial("t1", "delete", "h", "no")
    await store.save_client_state("t1", {"groups": []})
    await store.save_wire_state("t1", {"role": "server", "outbox": []})
    store.release_wire_state("t1")
    await finished(store, "t2")
    assert (
        await store.find_grant("t1", "lookup"),
        await store.take_approval("t1", "call_1", "lookup", "h"),
        await store.find_denial("t1", "delete", "h"),
        await store.load_client_state("t1"),
        await store.load_wire_state("t1"),
        await store.load_run("t1"),
        await store.load_messages("t1"),
    ) == (None, False, None, None, None, RunRecord(), [])


async def test_another_threads_approvals_stay() -> None:
    store = MemoryStore(max_threads=1)
    await finished(store, "t1")
    await finished(store, "t2")
    await store.grant("t2", "lookup")
    await finished(store, "t3")  # t2 goes, t3 stays
    await store.grant("t3", "lookup")
    await store.delete_thread("t2")
    assert await store.find_grant("t3", "lookup") is not None


async def test_max_idle_drops_finished_threads_idle_that_long() -> None:
    store = MemoryStore(max_threads=None, max_idle=0)  # idle for 0 s or more: every finished one
    await finished(store, "t1")
    await store.create_thread("t2")
    await store.append_messages("t2", [UserMessage("hi")])  # open: stays
    await finished(store, "t3")
    assert await kept(store) == ["t2", "t3"]


async def test_max_idle_keeps_threads_used_since() -> None:
    store = MemoryStore(max_threads=None, max_idle=3600)
    await finished(store, "t1")
    await finished(store, "t2")
    assert await kept(store) == ["t1", "t2"]


async def test_no_bound_keeps_every_thread() -> None:
    store = MemoryStore(max_threads=None)
    for thread_id in ("t1", "t2", "t3", "t4"):
        await finished(store, thread_id)
    assert await kept(store) == ["t1", "t2", "t3", "t4"]


@pytest.mark.parametrize("bounds", [{"max_threads": 0}, {"max_idle": -1.0}])
def test_a_bound_below_its_minimum_is_refused(bounds: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="max_threads >= 1"):
        MemoryStore(**bounds)


def test_the_store_an_agent_makes_is_bounded() -> None:
    store = Agent(FunctionModel(lambda _: "hello")).store
    assert isinstance(store, MemoryStore) and store.retention.max_threads == DEFAULT_MAX_THREADS == 1_000


async def lookup(query: str) -> str:
    """Look something up."""
    return f"results for {query}"


def one_call_then_answer(request: ModelRequest) -> Turn:
    if isinstance(request.messages[-1], ToolResultMessage):
        return "It is sunny."
    if request.messages[-1] == UserMessage("fail"):
        raise ProviderError("test", "connection refused")
    return [LOOKUP]


async def test_a_run_the_model_failed_keeps_its_thread_through_the_loop() -> None:
    agent = Agent(FunctionModel(one_call_then_answer), tools=[lookup], store=MemoryStore(max_threads=2))
    with pytest.raises(ProviderError):
        await agent.run("fail", thread="t1")
    for thread_id in ("t2", "t3", "t4"):
        await agent.run("Weather?", thread=thread_id)
    assert await kept(agent.store) == ["t1", "t4"] and await agent.unfinished("t1")


async def test_memory_returns_to_its_baseline_after_many_runs() -> None:
    """3,000 runs on the default store after a warm-up past its bound: the heap is where it was (±10 %)."""
    model = FunctionModel(one_call_then_answer)
    agent = Agent(model, tools=[lookup])

    async def runs(count: int) -> None:
        for _ in range(count):
            await agent.run("Weather?")
            model.requests.clear()  # the scripted model keeps every request it was sent

    tracemalloc.start()
    try:
        await runs(DEFAULT_MAX_THREADS + 500)  # the store is full: each new run's thread makes one go
        gc.collect()
        baseline = tracemalloc.get_traced_memory()[0]
        await runs(3_000)
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert abs(after - baseline) <= baseline / 10, f"heap {baseline} B after the warm-up, {after} B after 3,000 runs"
