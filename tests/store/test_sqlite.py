"""Facts about `SqliteStore` alone: the file, durability, other processes, schema versions."""

from __future__ import annotations

import gc
import json
import logging
import sqlite3
import sys
import textwrap
import threading
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from toolwire import ToolCall, ToolResult, UsageError
from toolwire.envelopes import arguments_hash
from toolwire.errors import EnvelopeError
from toolwire.messages import AssistantMessage, Message, UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState, LedgerEntry
from toolwire.store.sqlite import _CHECKPOINT_EVERY, FILENAME, SCHEMA_VERSION, SqliteStore
from toolwire.store.sqlite_schema import MIGRATIONS

CALL = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
HASH = arguments_hash(CALL.arguments)


def pragma(path: Path, statement: str) -> tuple[object, ...] | None:
    """Run a PRAGMA on the file through a connection of its own."""
    with closing(sqlite3.connect(path)) as db:
        return db.execute(f"PRAGMA {statement}").fetchone()


def pending(thread_id: str = "t1") -> LedgerEntry:
    return LedgerEntry(thread_id=thread_id, call=CALL, request_index=0, deadline=1_900_000_000.0)


async def test_data_survives_closing_and_reopening_the_file(tmp_path: Path) -> None:
    messages = [UserMessage("Weather in Paris?"), AssistantMessage("", (CALL,))]
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.create_thread("t1", principal="alice")
        await store.append_messages("t1", messages)
        await store.record_calls([pending()])
        grant = await store.grant("t1", "lookup")
        await store.remember_denial("t1", "shell_run", HASH, "the user refused")
        await store.approve_once("t1", CALL.id, CALL.name, HASH)
    async with SqliteStore(tmp_path / "db.sqlite3") as reopened:
        assert await reopened.thread_principal("t1") == "alice"
        assert await reopened.load_messages("t1") == messages
        assert await reopened.open_calls("t1") == [pending()]
        assert await reopened.grants("t1") == [grant]
        assert await reopened.find_denial("t1", "shell_run", HASH) == "the user refused"
        assert await reopened.take_approval("t1", CALL.id, CALL.name, HASH) is True


async def test_file_is_in_wal_mode(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3"):
        assert pragma(tmp_path / "db.sqlite3", "journal_mode") == ("wal",)


async def test_in_directory_creates_the_data_directory_and_one_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / ".toolwire"
    async with SqliteStore.in_directory(data_dir) as store:
        await store.create_thread("t1")
        assert store.path == data_dir / FILENAME == data_dir / "toolwire.sqlite3"
        assert store.path.is_file()


async def test_new_file_has_the_current_schema_version(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3"):
        assert pragma(tmp_path / "db.sqlite3", "user_version") == (SCHEMA_VERSION,)


async def test_file_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    pragma(tmp_path / "db.sqlite3", f"user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(UsageError, match="newer than this toolwire"):
        SqliteStore(tmp_path / "db.sqlite3")


async def test_using_the_store_after_close_raises_a_clear_error(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite3")
    await store.aclose()
    await store.aclose()  # closing twice is harmless
    with pytest.raises(UsageError, match="SqliteStore .* is closed"):
        await store.load_messages("t1")
    with pytest.raises(UsageError, match="is closed"):
        await store.create_thread("t1")


async def test_empty_thread_id_is_refused_by_approval_methods(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        with pytest.raises(UsageError, match="pass None"):
            await store.grant("", "lookup")


async def test_failed_write_is_rolled_back_whole(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.append_messages("t1", [UserMessage("one")])
        with closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
            db.execute(
                "CREATE TRIGGER fail BEFORE INSERT ON messages WHEN NEW.seq = 2 BEGIN SELECT RAISE(ABORT, 'disk'); END"
            )
        with pytest.raises(sqlite3.IntegrityError):
            await store.append_messages("t1", [UserMessage("two"), UserMessage("three")])
        with closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
            db.execute("DROP TRIGGER fail")
        await store.append_messages("t1", [UserMessage("four")])
        assert await store.load_messages("t1") == [UserMessage("one"), UserMessage("four")]


async def test_first_terminal_result_wins_across_connections(tmp_path: Path) -> None:
    first, late = ToolResult.ok(CALL.id, 1), ToolResult.canceled(CALL.id, "restart", "system")
    async with SqliteStore(tmp_path / "db.sqlite3") as one, SqliteStore(tmp_path / "db.sqlite3") as two:
        await one.record_calls([pending()])
        assert await two.complete_call("t1", CALL.id, first) is True
        assert await one.complete_call("t1", CALL.id, late) is False
        found = await one.get_call("t1", CALL.id)
        assert found is not None and found.state is CallState.TERMINAL and found.result == first


async def test_approval_is_consumed_once_across_connections(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as one, SqliteStore(tmp_path / "db.sqlite3") as two:
        await one.approve_once("t1", CALL.id, CALL.name, HASH)
        assert await two.take_approval("t1", CALL.id, CALL.name, HASH) is True
        assert await one.take_approval("t1", CALL.id, CALL.name, HASH) is False


async def test_nothing_logged_contains_message_content(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = "the launch code is 0000"
    caplog.set_level(logging.DEBUG)
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.append_messages("t1", [UserMessage(secret)])
        await store.record_calls(
            [LedgerEntry(thread_id="t1", call=ToolCall(id="c", name="x", arguments={"s": secret}), request_index=0)]
        )
        await store.load_messages("t1")
    assert caplog.records  # the migration is logged
    assert secret not in caplog.text


CRASHING_WRITER = textwrap.dedent(
    """
    import os, sys
    import anyio
    from toolwire import ToolCall
    from toolwire.messages import AssistantMessage, Message, UserMessage
    from toolwire.store import LedgerEntry
    from toolwire.store.sqlite import SqliteStore

    async def main() -> None:
        store = SqliteStore.in_directory(sys.argv[1])
        call = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
        await store.create_thread("t1", principal="alice")
        await store.append_messages("t1", [UserMessage("Weather in Paris?"), AssistantMessage("", (call,))])
        await store.record_calls([LedgerEntry(thread_id="t1", call=call, request_index=0)])
        os._exit(0)  # a crash: no aclose(), no checkpoint of the WAL

    anyio.run(main)
    """
)


async def test_another_process_sees_what_a_crashed_process_wrote(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    await anyio.run_process([sys.executable, "-c", CRASHING_WRITER, str(data_dir)], check=True)
    async with SqliteStore.in_directory(data_dir) as store:
        assert await store.thread_principal("t1") == "alice"
        assert await store.load_messages("t1") == [UserMessage("Weather in Paris?"), AssistantMessage("", (CALL,))]
        [open_call] = await store.open_calls("t1")
        assert (open_call.call, open_call.state) == (CALL, CallState.PENDING)


async def test_a_version_1_file_is_migrated_and_keeps_its_threads(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    with closing(sqlite3.connect(path)) as db:
        MIGRATIONS[0](db)
        db.execute("INSERT INTO threads (id, principal, created_at) VALUES ('t1', NULL, 0)")
        db.execute("PRAGMA user_version = 1")
        db.commit()
    async with SqliteStore(path) as store:
        await store.save_client_state("t1", {"groups": []})
        assert await store.thread_exists("t1")
        assert await store.load_client_state("t1") == {"groups": []}
    assert pragma(path, "user_version") == (SCHEMA_VERSION,)


async def test_a_version_6_file_gets_last_activity_from_its_threads_creation(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    with closing(sqlite3.connect(path)) as db:
        for step in MIGRATIONS[:6]:
            step(db)
        db.execute("INSERT INTO threads (id, principal, created_at) VALUES ('t1', 'alice', 100), ('t2', 'alice', 200)")
        db.execute("PRAGMA user_version = 6")
        db.commit()
    async with SqliteStore(path) as store:
        assert [(i.thread_id, i.created_at, i.updated_at) for i in await store.list_threads("alice")] == [
            ("t2", 200, 200),
            ("t1", 100, 100),
        ]
        await store.append_messages("t1", [UserMessage("again")])
        [first, _] = await store.list_threads("alice")
        assert first.thread_id == "t1" and first.updated_at > 200
    assert pragma(path, "user_version") == (SCHEMA_VERSION,)


# -- the server's protocol state: frames one row each ------------------------------------------------


def server_state(next_stanza: int, last_seen: int, first: int) -> Sequencing:
    """A server's state (saved as its `to_dict()`) whose outbox holds stanzas `first` .. `next_stanza - 1`."""
    outbox = tuple((stanza, f"frame {stanza}".encode()) for stanza in range(first, next_stanza))
    return Sequencing(role="server", conversation_id="t1", next_stanza=next_stanza, last_seen=last_seen, outbox=outbox)


def stored_frames(path: Path) -> list[tuple[int, bytes]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT stanza, frame FROM wire_outbox WHERE thread_id = 't1' ORDER BY stanza").fetchall()


async def test_a_save_writes_the_new_frames_and_another_file_handle_reads_the_same_state(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path) as store:
        for state in (server_state(2, 0, 1), server_state(3, 1, 1), server_state(4, 2, 1), server_state(4, 3, 3)):
            await store.save_wire_state("t1", state.to_dict())
            async with SqliteStore(path) as reader:
                assert await reader.load_wire_state("t1") == state.to_dict()
        assert stored_frames(path) == [(3, b"frame 3")]  # the acknowledged frames are gone


async def test_a_save_after_another_writers_save_rewrites_the_state(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    async with SqliteStore(path) as one, SqliteStore(path) as two:
        await one.save_wire_state("t1", server_state(3, 0, 1).to_dict())
        await two.save_wire_state("t1", server_state(6, 2, 4).to_dict())  # e.g. another server process took over
        await one.save_wire_state("t1", server_state(7, 2, 2).to_dict())  # what `one` remembers is stale
        assert await two.load_wire_state("t1") == server_state(7, 2, 2).to_dict()
        assert [stanza for stanza, _ in stored_frames(path)] == [2, 3, 4, 5, 6]


async def test_a_state_that_is_not_a_servers_protocol_state_is_refused(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        for state in (
            {"role": "server", "nextStanza": "3", "lastSeen": 0},
            {"nextStanza": 3, "lastSeen": 0, "outbox": [[1, "!"]]},
        ):
            with pytest.raises(EnvelopeError, match="not a protocol state"):
                await store.save_wire_state("t1", state)
        assert await store.load_wire_state("t1") is None


async def test_a_version_4_file_keeps_its_wire_states(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    state = server_state(5, 2, 3)
    with closing(sqlite3.connect(path)) as db:
        for migrate in MIGRATIONS[:4]:
            migrate(db)
        db.execute(
            "INSERT INTO wire_state (thread_id, state, updated_at) VALUES ('t1', ?, 0)", (json.dumps(state.to_dict()),)
        )
        db.execute("INSERT INTO wire_state (thread_id, state, updated_at) VALUES ('odd', '{\"outbox\": 1}', 0)")
        db.execute("PRAGMA user_version = 4")
        db.commit()
    async with SqliteStore(path) as store:
        assert await store.load_wire_state("t1") == state.to_dict()
        assert await store.load_wire_state("odd") == {"outbox": 1}  # not a state this code wrote: as it was
        await store.save_wire_state("t1", server_state(6, 3, 4).to_dict())
        assert await store.load_wire_state("t1") == server_state(6, 3, 4).to_dict()
    assert stored_frames(path) == [(4, b"frame 4"), (5, b"frame 5")]


async def test_checkpoints_run_in_a_thread_of_the_store_that_ends_with_it(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    before = {thread.name for thread in threading.enumerate()}
    async with SqliteStore(path) as store:
        size = path.stat().st_size  # commits go to the WAL; only a checkpoint writes the file itself
        for index in range(_CHECKPOINT_EVERY + 1):
            await store.append_messages("t1", [UserMessage(f"message {index}")])
        assert "toolwire-sqlite-checkpoint" in {thread.name for thread in threading.enumerate()} - before
        for _ in range(1000):
            if path.stat().st_size > size:
                break
            await anyio.sleep(0.01)
        assert path.stat().st_size > size
    assert {thread.name for thread in threading.enumerate()} == before
    async with SqliteStore(path) as store:
        assert len(await store.load_messages("t1")) == _CHECKPOINT_EVERY + 1


async def test_a_store_dropped_without_aclose_ends_its_checkpoint_thread(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    store = SqliteStore(tmp_path / "db.sqlite3")
    await store.create_thread("t1")
    [thread] = [thread for thread in threading.enumerate() if thread not in before]
    del store
    gc.collect()
    thread.join(timeout=5)
    assert not thread.is_alive()


# -- decoded transcripts kept between loads ----------------------------------------------------


async def test_a_transcript_loaded_before_shows_what_another_store_appended_since(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store, SqliteStore(tmp_path / "db.sqlite3") as other:
        await store.append_messages("t1", [UserMessage("one")])
        assert await store.load_messages("t1") == [UserMessage("one")]
        await other.append_messages("t1", [AssistantMessage("two"), UserMessage("three")])
        assert await store.load_messages("t1") == [UserMessage("one"), AssistantMessage("two"), UserMessage("three")]


async def test_a_thread_another_store_deleted_and_wrote_anew_is_loaded_anew(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store, SqliteStore(tmp_path / "db.sqlite3") as other:
        await store.append_messages("t1", [UserMessage("old"), AssistantMessage("old answer")])
        await store.load_messages("t1")
        await other.delete_thread("t1")
        await other.append_messages("t1", [UserMessage("new"), AssistantMessage("new answer"), UserMessage("more")])
        assert await store.load_messages("t1") == [
            UserMessage("new"),
            AssistantMessage("new answer"),
            UserMessage("more"),
        ]


async def test_changing_a_loaded_transcript_changes_nothing_stored(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.append_messages("t1", [UserMessage("one")])
        (await store.load_messages("t1")).append(UserMessage("not stored"))
        assert await store.load_messages("t1") == [UserMessage("one")]


async def test_two_stores_appending_in_turn_to_one_thread_keep_every_message_in_order(tmp_path: Path) -> None:
    # Each knows the next `seq` of the thread it appended to; the other's rows make it read it again.
    expected: list[Message] = []
    async with SqliteStore(tmp_path / "db.sqlite3") as one, SqliteStore(tmp_path / "db.sqlite3") as two:
        for index in range(3):
            mine, theirs = [UserMessage(f"one {index}")], [AssistantMessage(f"two {index}"), UserMessage("and")]
            await one.append_messages("t1", mine)
            await two.append_messages("t1", theirs)
            expected += mine + theirs
        assert await one.load_messages("t1") == expected


async def test_a_batchs_messages_are_stored_as_the_json_of_their_to_dict(tmp_path: Path) -> None:
    # The store puts these texts together from the calls' and results' JSON, which the ledger keeps too.
    calls = (CALL, ToolCall(id="call_2", name="café", arguments={"q": 'naïve \u2028 "quoted"'}))
    asking = AssistantMessage("Looking that up: ☕", calls)
    results = [ToolResult.ok("call_1", {"temp": 21}), ToolResult.failed("call_2", "no such place", code="404")]
    async with SqliteStore(tmp_path / "db.sqlite3") as store:
        await store.record_batch(
            "t1", asking, [LedgerEntry(thread_id="t1", call=call, request_index=0) for call in calls]
        )
        answers = await store.complete_batch("t1", calls, results)
    with closing(sqlite3.connect(tmp_path / "db.sqlite3")) as db:
        stored = [json.loads(body) for (body,) in db.execute("SELECT body FROM messages ORDER BY seq")]
    assert stored == [asking.to_dict(), *(answer.to_dict() for answer in answers)]
    assert [answer.result for answer in answers] == results
