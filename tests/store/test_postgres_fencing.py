"""Fencing in `PostgresStore`: two stores on one schema are two replicas; a write of an old epoch is refused whole."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from pg_cluster import PgCluster
from toolwire import ToolCall, ToolResult
from toolwire.errors import Fenced
from toolwire.messages import AssistantMessage, UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState, Lease, LedgerEntry, RunRecord
from toolwire.store.postgres import PostgresStore

pytestmark = pytest.mark.usefixtures("postgres")

CALL = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
HOUR = 3600.0
_names = itertools.count()


def pending(call: ToolCall = CALL) -> LedgerEntry:
    return LedgerEntry(thread_id="t1", call=call, request_index=0)


def wire(next_stanza: int, outbox: list[list[Any]] | None = None) -> dict[str, Any]:
    state = Sequencing(role="server", conversation_id="t1", next_stanza=next_stanza).to_dict()
    state["outbox"] = outbox or []
    return state


@pytest.fixture
async def replicas(postgres: PgCluster) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    """Two stores on one new schema: replica A and replica B."""
    schema = f"fencing_{next(_names)}"
    a, b = PostgresStore(postgres.dsn, schema=schema), PostgresStore(postgres.dsn, schema=schema)
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def take_over(a: PostgresStore, b: PostgresStore) -> tuple[Lease, Lease]:
    """A takes the lease of t1 (expired at once), then B takes it over: A's epoch 1, B's epoch 2."""
    mine = await a.acquire("t1", "replica-a", 0)
    theirs = await b.acquire("t1", "replica-b", HOUR)
    assert mine is not None and theirs is not None and (mine.epoch, theirs.epoch) == (1, 2)
    return mine, theirs


async def test_the_holder_writes_and_the_replica_taken_over_writes_nothing(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = replicas
    lease = await a.acquire("t1", "replica-a", HOUR)
    assert lease is not None
    await a.append_messages("t1", [UserMessage("hello")])
    await a.save_wire_state("t1", wire(2, [[1, "AQI="]]))
    assert await a.renew(lease, 0)  # expires now: B takes it over
    assert await b.acquire("t1", "replica-b", HOUR) is not None
    with pytest.raises(Fenced) as raised:
        await a.append_messages("t1", [UserMessage("late")])
    assert (raised.value.conversation, raised.value.epoch) == ("t1", 1)
    with pytest.raises(Fenced):
        await a.save_wire_state("t1", wire(3, [[1, "AQI="], [2, "AwQ="]]))
    assert await b.load_messages("t1") == [UserMessage("hello")]
    assert await b.load_wire_state("t1") == wire(2, [[1, "AQI="]])
    assert await a.renew(lease, HOUR) is False
    await b.append_messages("t1", [UserMessage("from b")])  # the new owner writes
    assert await a.load_messages("t1") == [UserMessage("hello"), UserMessage("from b")]


WRITES: dict[str, Callable[[PostgresStore], Awaitable[object]]] = {
    "append_messages": lambda s: s.append_messages("t1", [UserMessage("late")]),
    "record_calls": lambda s: s.record_calls([pending(ToolCall(id="call_2", name="lookup", arguments={}))]),
    "record_batch": lambda s: s.record_batch(
        "t1", AssistantMessage("", (CALL,)), [pending(ToolCall(id="call_2", name="lookup", arguments={}))]
    ),
    "complete_batch": lambda s: s.complete_batch("t1", [CALL], [ToolResult.ok(CALL.id, "late")]),
    "set_call_state": lambda s: s.set_call_state("t1", CALL.id, CallState.DISPATCHED),
    "save_run": lambda s: s.save_run("t1", RunRecord(closed_at=5)),
    "save_client_state": lambda s: s.save_client_state("t1", {"groups": []}),
    "delete_client_state": lambda s: s.save_client_state("t1", None),
    "save_wire_state": lambda s: s.save_wire_state("t1", wire(9), dispatched=[CALL.id]),
    "delete_wire_state": lambda s: s.save_wire_state("t1", None),
    "save_wire_state_with_a_prompt": lambda s: s.save_wire_state("t1", wire(9), appended=[UserMessage("late")]),
}


async def snapshot(store: PostgresStore) -> tuple[object, ...]:
    return (
        await store.load_messages("t1"),
        await store.open_calls("t1"),
        await store.get_call("t1", "call_2"),
        await store.load_run("t1"),
        await store.load_client_state("t1"),
        await store.load_wire_state("t1"),
    )


@pytest.mark.parametrize("write", list(WRITES))
async def test_every_owning_write_under_an_old_epoch_is_refused_and_keeps_nothing(
    replicas: tuple[PostgresStore, PostgresStore], write: str
) -> None:
    a, b = replicas
    await b.append_messages("t1", [UserMessage("hello")])
    await b.record_calls([pending()])
    await b.save_client_state("t1", {"groups": ["kept"]})
    await b.save_wire_state("t1", wire(2, [[1, "AQI="]]))
    await take_over(a, b)
    before = await snapshot(b)
    with pytest.raises(Fenced):
        await WRITES[write](a)
    assert await snapshot(b) == before
    await WRITES[write](b)  # the same write by the owner goes through


async def test_a_result_is_first_wins_whoever_owns_the_conversation(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = replicas
    await b.record_calls([pending()])
    await take_over(a, b)
    assert await a.complete_call("t1", CALL.id, ToolResult.ok(CALL.id, "first")) is True
    assert await b.complete_call("t1", CALL.id, ToolResult.ok(CALL.id, "second")) is False


async def test_a_released_lease_still_fences_a_late_write_once_another_took_it(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = replicas
    lease = await a.acquire("t1", "replica-a", HOUR)
    assert lease is not None
    await a.release(lease)
    await a.append_messages("t1", [UserMessage("before the next owner")])  # nobody took it yet
    assert await b.acquire("t1", "replica-b", HOUR) is not None
    with pytest.raises(Fenced):
        await a.append_messages("t1", [UserMessage("after")])
    assert await b.load_messages("t1") == [UserMessage("before the next owner")]


async def test_writes_of_conversations_without_a_lease_here_are_not_fenced(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = replicas
    await take_over(a, b)
    await a.append_messages("t2", [UserMessage("another conversation")])
    assert await b.load_messages("t2") == [UserMessage("another conversation")]


async def test_taking_the_lease_again_fences_with_the_new_epoch(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    a, b = replicas
    _, theirs = await take_over(a, b)
    await b.release(theirs)
    again = await a.acquire("t1", "replica-a", HOUR)
    assert again is not None and again.epoch == 3
    await a.append_messages("t1", [UserMessage("mine again")])
    with pytest.raises(Fenced):
        await b.append_messages("t1", [UserMessage("late")])
    assert await a.load_messages("t1") == [UserMessage("mine again")]


async def test_a_replica_hears_handover_requests_and_releases(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    import anyio

    a, b = replicas
    heard: list[tuple[str, str]] = []
    both = anyio.Event()

    def wake(kind: str, conversation: str) -> None:
        heard.append((kind, conversation))
        if len([name for _, name in heard if name == "t1"]) == 2:
            both.set()

    lease = await a.acquire("t1", "replica-a", HOUR)
    assert lease is not None
    async with anyio.create_task_group() as group:
        group.start_soon(a.listen, wake)
        with anyio.fail_after(10):
            while not heard:  # LISTEN is in place once a wake-up arrives
                await b.ask_handover("t0")
                await anyio.sleep(0.05)
            await b.ask_handover("t1")
            await a.release(lease)
            await both.wait()
        group.cancel_scope.cancel()
    assert [(kind, name) for kind, name in heard if name == "t1"] == [("handover", "t1"), ("released", "t1")]


async def test_racing_sweepers_claim_each_abandoned_lease_once_and_fence_its_last_holder(
    replicas: tuple[PostgresStore, PostgresStore],
) -> None:
    import anyio

    a, b = replicas
    for n in range(6):
        assert await a.acquire(f"t{n}", "replica-a", 0) is not None
    claims: list[list[Lease]] = []

    async def sweep(store: PostgresStore, name: str) -> None:
        claims.append(await store.claim_abandoned(name, HOUR, limit=4))

    async with anyio.create_task_group() as group:
        group.start_soon(sweep, a, "replica-a2")
        group.start_soon(sweep, b, "replica-b")
    claimed = sorted(lease.conversation for leases in claims for lease in leases)
    assert claimed == [f"t{n}" for n in range(6)]
    [t1] = [lease for leases in claims for lease in leases if lease.conversation == "t1"]
    if t1.owner == "replica-b":  # A's own writes of t1 are fenced now
        with pytest.raises(Fenced):
            await a.append_messages("t1", [UserMessage("late")])


async def test_a_write_racing_a_takeover_waits_for_it_and_is_refused(
    replicas: tuple[PostgresStore, PostgresStore], postgres: PgCluster
) -> None:
    import anyio
    import psycopg

    a, b = replicas
    lease = await a.acquire("t1", "replica-a", 0)
    assert lease is not None
    schema = a.schema
    async with await psycopg.AsyncConnection.connect(postgres.dsn) as takeover:  # (not autocommit)
        await takeover.execute(f"UPDATE {schema}.leases SET epoch = epoch + 1, owner = 'replica-b'".encode())
        outcome: list[BaseException | None] = []

        async def write() -> None:
            try:
                await a.append_messages("t1", [UserMessage("racing")])
            except Fenced as exc:
                outcome.append(exc)
            else:
                outcome.append(None)

        async with anyio.create_task_group() as group:
            group.start_soon(write)
            with anyio.fail_after(10):  # the write waits for the takeover's row lock
                while not await _waiting_for_a_lock(postgres):  # noqa: ASYNC110 (another session's state)
                    await anyio.sleep(0.02)
            assert outcome == []
            await takeover.commit()
    assert len(outcome) == 1 and isinstance(outcome[0], Fenced)
    assert await b.load_messages("t1") == []


async def _waiting_for_a_lock(postgres: PgCluster) -> bool:
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as db:
        cursor = await db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%lease_fence%'"
        )
        row = await cursor.fetchone()
    return row is not None and row[0] > 0
