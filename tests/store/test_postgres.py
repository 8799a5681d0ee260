"""Facts about `PostgresStore` alone: the schema and its versions, other processes and racing writers, its settings."""

from __future__ import annotations

import asyncio
import itertools
import logging
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from pg_cluster import PgCluster
from toolwire import ToolCall, ToolResult, UsageError
from toolwire.envelopes import arguments_hash
from toolwire.messages import AssistantMessage, ToolResultMessage, UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState, LedgerEntry
from toolwire.store.postgres import SCHEMA_VERSION, PostgresStore, describe_dsn

pytestmark = pytest.mark.usefixtures("postgres")

CALL = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
HASH = arguments_hash(CALL.arguments)
_names = itertools.count()


def pending(thread_id: str = "t1", call: ToolCall = CALL) -> LedgerEntry:
    return LedgerEntry(thread_id=thread_id, call=call, request_index=0, deadline=1_900_000_000.0)


@pytest.fixture
def schema() -> str:
    """A schema name no other test uses (so, a new empty store)."""
    return f"store_test_{next(_names)}"


@pytest.fixture
async def opened(postgres: PgCluster, schema: str) -> AsyncIterator[Callable[[], PostgresStore]]:
    """Opens stores on the test's schema; closes them all after the test."""
    stores: list[PostgresStore] = []

    def open_store() -> PostgresStore:
        stores.append(PostgresStore(postgres.dsn, schema=schema))
        return stores[-1]

    yield open_store
    for store in stores:
        await store.aclose()


async def sql(postgres: PgCluster, statement: str) -> list[tuple[object, ...]]:
    """Run one statement on a connection of its own (autocommit); its rows, if any."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as db:
        cursor = await db.execute(statement.encode())
        return await cursor.fetchall() if cursor.description else []


async def test_data_survives_closing_and_reopening(opened: Callable[[], PostgresStore]) -> None:
    messages = [UserMessage("Weather in Paris?"), AssistantMessage("", (CALL,))]
    store = opened()
    async with store:
        await store.create_thread("t1", principal="alice")
        await store.append_messages("t1", messages)
        await store.record_calls([pending()])
        grant = await store.grant("t1", "lookup")
        await store.approve_once("t1", CALL.id, CALL.name, HASH)
    reopened = opened()
    assert await reopened.thread_principal("t1") == "alice"
    assert await reopened.load_messages("t1") == messages
    assert await reopened.open_calls("t1") == [pending()]
    assert await reopened.grants("t1") == [grant]
    assert await reopened.take_approval("t1", CALL.id, CALL.name, HASH) is True
    assert await reopened.thread_ids() == ["t1"]


async def test_a_new_schema_has_the_current_version(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    store = opened()
    await store.open()
    assert await sql(postgres, f"SELECT version FROM {schema}.schema_version") == [(SCHEMA_VERSION,)]


async def test_a_version_2_schema_gets_last_activity_from_its_threads_creation(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    from toolwire.store.postgres_schema import MIGRATIONS

    statements = [f"CREATE SCHEMA {schema}", f"SET search_path = {schema}"]
    statements += [*MIGRATIONS[0], *MIGRATIONS[1], "CREATE TABLE schema_version (version integer NOT NULL)"]
    statements += [
        "INSERT INTO schema_version VALUES (2)",
        "INSERT INTO threads (id, principal, created_at) VALUES ('t1', 'alice', 100), ('t2', 'alice', 200)",
    ]
    await sql(postgres, "; ".join(statements))
    store = opened()
    assert [(i.thread_id, i.created_at, i.updated_at) for i in await store.list_threads("alice")] == [
        ("t2", 200, 200),
        ("t1", 100, 100),
    ]
    assert await sql(postgres, f"SELECT version FROM {schema}.schema_version") == [(SCHEMA_VERSION,)]


async def test_a_schema_from_a_newer_version_is_refused(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    first = opened()
    await first.open()
    await sql(postgres, f"UPDATE {schema}.schema_version SET version = {SCHEMA_VERSION + 1}")
    newer = opened()
    with pytest.raises(UsageError, match="newer than this toolwire"):
        await newer.create_thread("t1")


async def test_stores_that_start_together_migrate_once(opened: Callable[[], PostgresStore]) -> None:
    stores = [opened() for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))


async def test_first_terminal_result_wins_between_racing_stores(opened: Callable[[], PostgresStore]) -> None:
    one, two = opened(), opened()
    calls = [ToolCall(id=f"c{index}", name="lookup", arguments={}) for index in range(20)]
    await one.record_calls([pending(call=call) for call in calls])
    for call in calls:
        mine, theirs = ToolResult.ok(call.id, "one"), ToolResult.canceled(call.id, "restart", "system")
        won = await asyncio.gather(one.complete_call("t1", call.id, mine), two.complete_call("t1", call.id, theirs))
        assert sorted(won) == [False, True]
        found = await two.get_call("t1", call.id)
        assert found is not None and found.result == (mine if won[0] else theirs)


async def test_a_batch_that_lost_a_race_carries_the_winners_result(opened: Callable[[], PostgresStore]) -> None:
    one, two = opened(), opened()
    calls = [ToolCall(id=f"c{index}", name="lookup", arguments={}) for index in range(20)]
    await one.record_calls([pending(call=call) for call in calls])
    for call in calls:
        batch, alone = ToolResult.ok(call.id, "batch"), ToolResult.canceled(call.id, "operator", "user")
        messages, won = await asyncio.gather(
            one.complete_batch("t1", [call], [batch]), two.complete_call("t1", call.id, alone)
        )
        assert messages == [ToolResultMessage("lookup", alone if won else batch)]
    loaded = await two.load_messages("t1")
    assert [message.result.call_id for message in loaded if isinstance(message, ToolResultMessage)] == [
        call.id for call in calls
    ]


async def test_an_approval_is_consumed_once_by_racing_takers(opened: Callable[[], PostgresStore]) -> None:
    stores = [opened() for _ in range(4)]
    takers = stores
    for index in range(10):
        await takers[0].approve_once("t1", f"c{index}", CALL.name, HASH)
        taken = await asyncio.gather(*(store.take_approval("t1", f"c{index}", CALL.name, HASH) for store in takers))
        assert sorted(taken) == [False, False, False, True]


def server_state(next_stanza: int, last_seen: int, first: int) -> Sequencing:
    outbox = tuple((stanza, f"frame {stanza}".encode()) for stanza in range(first, next_stanza))
    return Sequencing(role="server", conversation_id="t1", next_stanza=next_stanza, last_seen=last_seen, outbox=outbox)


async def test_a_save_after_another_stores_save_rewrites_the_state(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    one, two = opened(), opened()
    await one.record_calls([pending()])
    await one.save_wire_state("t1", server_state(3, 0, 1).to_dict())
    await two.save_wire_state("t1", server_state(6, 2, 4).to_dict())  # e.g. another server process took over
    # What `one` remembers is stale: its delta writes nothing, the whole state (and the dispatch) goes in.
    await one.save_wire_state("t1", server_state(7, 2, 2).to_dict(), dispatched=[CALL.id])
    assert await two.load_wire_state("t1") == server_state(7, 2, 2).to_dict()
    rows = await sql(postgres, f"SELECT stanza FROM {schema}.wire_outbox WHERE thread_id = 't1' ORDER BY stanza")
    assert [stanza for (stanza,) in rows] == [2, 3, 4, 5, 6]
    found = await two.get_call("t1", CALL.id)
    assert found is not None and found.state is CallState.DISPATCHED


async def test_a_save_whose_commit_failed_is_written_whole_by_the_next(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    import psycopg

    store = opened()
    assert await store.acquire("t1", "r1", 60) is not None  # its saves are fenced: a transaction each
    await store.save_wire_state("t1", server_state(3, 1, 1).to_dict())
    # A check at commit time fails the next save after its statement ran (as a cancelled commit does).
    await sql(
        postgres, f"CREATE FUNCTION {schema}.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE 'no'; END $$"
    )
    await sql(
        postgres,
        f"CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON {schema}.wire_outbox DEFERRABLE INITIALLY DEFERRED"
        f" FOR EACH ROW EXECUTE FUNCTION {schema}.refuse()",
    )
    with pytest.raises(psycopg.errors.RaiseException):
        await store.save_wire_state("t1", server_state(4, 2, 1).to_dict())
    await sql(postgres, f"DROP TRIGGER refuse ON {schema}.wire_outbox")
    await store.save_wire_state("t1", server_state(4, 2, 1).to_dict())  # the same save, again
    assert await opened().load_wire_state("t1") == server_state(4, 2, 1).to_dict()


async def test_a_call_dispatched_and_answered_in_one_save_is_answered(opened: Callable[[], PostgresStore]) -> None:
    store = opened()
    await store.record_calls([pending()])
    answer = {"requestId": "r1", "success": True, "content": []}
    saved = await store.save_wire_state(
        "t1", server_state(2, 1, 1).to_dict(), dispatched=[CALL.id], answered={CALL.id: answer}
    )
    assert saved == {CALL.id}
    found = await store.get_call("t1", CALL.id)
    assert found is not None and (found.state, found.answer) == (CallState.ANSWERED, answer)


async def test_commits_are_synchronous_whatever_the_connection_string_asks(postgres: PgCluster, schema: str) -> None:
    dsn = postgres.dsn + "?options=-c%20synchronous_commit%3Doff"
    async with PostgresStore(dsn, schema=schema) as store:
        pool = await store._ready()
        async with pool.connection() as db:
            cursor = await db.execute("SHOW synchronous_commit")
            assert await cursor.fetchone() == ("on",)
            cursor = await db.execute("SHOW search_path")
            assert await cursor.fetchone() == (schema,)


async def test_using_the_store_after_close_raises_a_clear_error(opened: Callable[[], PostgresStore]) -> None:
    store = opened()
    await store.create_thread("t1")
    await store.aclose()
    await store.aclose()  # closing twice is harmless
    with pytest.raises(UsageError, match="PostgresStore .* is closed"):
        await store.load_messages("t1")


async def test_empty_thread_id_is_refused_by_approval_methods(opened: Callable[[], PostgresStore]) -> None:
    store = opened()
    with pytest.raises(UsageError, match="pass None"):
        await store.grant("", "lookup")


def test_a_schema_name_that_would_need_quoting_is_refused(postgres: PgCluster) -> None:
    with pytest.raises(UsageError, match="lower-case letters"):
        PostgresStore(postgres.dsn, schema='x"; DROP TABLE threads; --')


def test_the_password_is_never_in_the_stores_description(postgres: PgCluster) -> None:
    url = f"postgresql://alice:s3cret@127.0.0.1:{postgres.port}/app"
    assert PostgresStore(url).location == f"postgresql://alice@127.0.0.1:{postgres.port}/app (schema toolwire)"
    assert describe_dsn("host=db.internal user=bob password=s3cret dbname=app") == "postgresql://bob@db.internal/app"


async def test_nothing_logged_contains_message_content(
    opened: Callable[[], PostgresStore], caplog: pytest.LogCaptureFixture
) -> None:
    secret = "the launch code is 0000"
    caplog.set_level(logging.DEBUG)
    store = opened()
    await store.append_messages("t1", [UserMessage(secret)])
    await store.record_calls([pending(call=ToolCall(id="c", name="x", arguments={"s": secret}))])
    await store.load_messages("t1")
    assert "migrated" in caplog.text
    assert secret not in caplog.text


def test_importing_toolwire_does_not_import_psycopg() -> None:
    code = "import sys, toolwire, toolwire.store, toolwire.server.serve; print('psycopg' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg_pool", None)  # as if it were not installed
    with pytest.raises(UsageError, match=r"pip install 'toolwire\[postgres\]'"):
        PostgresStore("postgresql://127.0.0.1/app")


async def test_a_schema_made_beforehand_by_an_administrator_is_used(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    await sql(postgres, f"CREATE SCHEMA {schema}")
    store = opened()
    await store.create_thread("t1", principal="alice")
    assert await sql(postgres, f"SELECT id, principal FROM {schema}.threads") == [("t1", "alice")]


CRASHING_WRITER = textwrap.dedent(
    """
    import os, sys
    import anyio
    from toolwire import ToolCall
    from toolwire.messages import AssistantMessage, UserMessage
    from toolwire.store import LedgerEntry
    from toolwire.store.postgres import PostgresStore

    async def main() -> None:
        store = PostgresStore(sys.argv[1], schema=sys.argv[2])
        call = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
        await store.create_thread("t1", principal="alice")
        await store.append_messages("t1", [UserMessage("Weather in Paris?"), AssistantMessage("", (call,))])
        await store.record_calls([LedgerEntry(thread_id="t1", call=call, request_index=0)])
        os._exit(0)  # a crash: no aclose()

    anyio.run(main)
    """
)


async def test_another_process_sees_what_a_crashed_process_wrote(
    postgres: PgCluster, opened: Callable[[], PostgresStore], schema: str
) -> None:
    await anyio.run_process([sys.executable, "-c", CRASHING_WRITER, postgres.dsn, schema], check=True)
    store = opened()
    assert await store.thread_principal("t1") == "alice"
    assert await store.load_messages("t1") == [UserMessage("Weather in Paris?"), AssistantMessage("", (CALL,))]
    [open_call] = await store.open_calls("t1")
    assert (open_call.call, open_call.state) == (CALL, CallState.PENDING)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_on_trio_the_store_says_it_needs_asyncio(postgres: PgCluster, anyio_backend: str) -> None:
    store = PostgresStore(postgres.dsn)
    with pytest.raises(UsageError, match="runs on asyncio"):
        await store.create_thread("t1")
    await store.aclose()
