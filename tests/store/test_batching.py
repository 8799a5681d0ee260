"""`GroupCommit`: writes queued in one loop turn share a transaction, and each fails only for itself."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Generator
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import pytest

from toolwire.protocol import Sequencing
from toolwire.store import batching
from toolwire.store.batching import GroupCommit
from toolwire.store.sqlite import SqliteStore


class Ledger:
    """A table on a file, and the transactions `GroupCommit` opens on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("CREATE TABLE rows (name TEXT PRIMARY KEY)")
        self.transactions = 0
        self.rollbacks = 0

    @contextmanager
    def begin(self) -> Generator[sqlite3.Connection]:
        self.transactions += 1
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            self.rollbacks += 1
            raise
        self.db.execute("COMMIT")

    def committed(self) -> list[str]:
        """The rows another connection sees."""
        with closing(sqlite3.connect(self.path)) as other:
            return sorted(row[0] for row in other.execute("SELECT name FROM rows"))


def insert(name: str) -> Callable[[sqlite3.Connection], None]:
    def write(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO rows (name) VALUES (?)", (name,))

    return write


@pytest.fixture
def ledger(tmp_path: Path) -> Generator[Ledger]:
    ledger = Ledger(tmp_path / "rows.sqlite3")
    yield ledger
    ledger.db.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_writes_queued_in_one_loop_turn_share_one_transaction(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    async with anyio.create_task_group() as tasks:
        for name in ("a", "b", "c"):
            tasks.start_soon(group.submit, insert(name))
    assert ledger.transactions == 1 and ledger.committed() == ["a", "b", "c"]


async def test_a_write_is_committed_when_submit_returns(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    await group.submit(insert("a"))
    assert ledger.committed() == ["a"]


async def test_a_failing_write_fails_alone_and_the_others_are_committed(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    await group.submit(insert("taken"))
    outcomes: dict[str, BaseException | None] = {}

    async def submit(name: str) -> None:
        try:
            await group.submit(insert(name))
        except sqlite3.IntegrityError as exc:
            outcomes[name] = exc
        else:
            outcomes[name] = None

    async with anyio.create_task_group() as tasks:
        for name in ("a", "taken", "b"):
            tasks.start_soon(submit, name)
    assert isinstance(outcomes.pop("taken"), sqlite3.IntegrityError)
    assert outcomes == {"a": None, "b": None}
    assert ledger.committed() == ["a", "b", "taken"]


async def test_a_lone_write_that_fails_is_rolled_back_once_not_retried(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    await group.submit(insert("taken"))
    with pytest.raises(sqlite3.IntegrityError):
        await group.submit(insert("taken"))
    assert ledger.rollbacks == 1


async def test_a_cancelled_writer_still_has_its_write_committed(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await group.submit(insert("a"))
    await group.submit(insert("b"))  # the next loop turn has committed both
    assert ledger.committed() == ["a", "b"]


async def test_the_writers_who_joined_a_cancelled_first_writer_are_committed(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    first = asyncio.ensure_future(group.submit(insert("first")))
    second = asyncio.ensure_future(group.submit(insert("second")))
    await asyncio.sleep(0)  # both queued: the first waits one loop turn for others to join
    first.cancel()
    await second
    assert first.cancelled() and ledger.committed() == ["first", "second"] and ledger.transactions == 1


async def test_commit_runs_what_is_queued_at_once(ledger: Ledger) -> None:
    group = GroupCommit(ledger.begin)
    task = asyncio.ensure_future(group.submit(insert("a")))
    await asyncio.sleep(0)  # the write is queued; its transaction comes at the next loop turn
    group.commit()
    assert ledger.committed() == ["a"]
    await task
    assert ledger.transactions == 1


async def test_off_asyncio_a_write_runs_at_once_in_its_own_transaction(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batching, "asyncio_loop", lambda: None)  # as under trio
    group = GroupCommit(ledger.begin)
    await group.submit(insert("a"))
    await group.submit(insert("b"))
    assert ledger.transactions == 2 and ledger.committed() == ["a", "b"]


# -- in SqliteStore ---------------------------------------------------------------------------------


def server_state(thread_id: str, next_stanza: int) -> Sequencing:
    outbox = tuple((n, f"frame {n}".encode()) for n in range(1, next_stanza))
    return Sequencing(role="server", conversation_id=thread_id, next_stanza=next_stanza, outbox=outbox)


async def test_the_saves_of_many_conversations_share_a_transaction(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.sqlite3") as store:
        commits = store._commits
        async with anyio.create_task_group() as tasks:
            for n in range(10):
                tasks.start_soon(store.save_wire_state, f"t{n}", server_state(f"t{n}", 3).to_dict())
        assert store._commits == commits + 1
    async with SqliteStore(tmp_path / "s.sqlite3") as reopened:
        for n in range(10):
            saved = await reopened.load_wire_state(f"t{n}")
            assert saved is not None and Sequencing.from_dict(saved) == server_state(f"t{n}", 3)


async def test_a_save_retried_alone_after_a_failed_shared_transaction_is_whole(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.sqlite3") as store:
        await store.save_wire_state("t1", server_state("t1", 2).to_dict())
        group = store._group

        async def fail() -> None:
            def write(db: sqlite3.Connection) -> None:
                raise sqlite3.OperationalError("disk I/O error")

            with pytest.raises(sqlite3.OperationalError):
                await group.submit(write)

        async with anyio.create_task_group() as tasks:  # one transaction: the save, then the failure
            tasks.start_soon(store.save_wire_state, "t1", server_state("t1", 4).to_dict())
            tasks.start_soon(fail)
        saved = await store.load_wire_state("t1")
    assert saved is not None and Sequencing.from_dict(saved) == server_state("t1", 4)


async def test_a_closing_store_commits_the_saves_it_queued(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    task = asyncio.ensure_future(store.save_wire_state("t1", server_state("t1", 3).to_dict()))
    await asyncio.sleep(0)  # queued, not committed yet
    await store.aclose()
    await task
    async with SqliteStore(tmp_path / "s.sqlite3") as reopened:
        saved = await reopened.load_wire_state("t1")
    assert saved is not None and Sequencing.from_dict(saved) == server_state("t1", 3)


async def test_saves_of_one_conversation_in_one_transaction_each_write_what_the_one_before_left(
    tmp_path: Path,
) -> None:
    def state(first: int, next_stanza: int) -> dict[str, object]:
        outbox = tuple((n, f"frame {n}".encode()) for n in range(first, next_stanza))
        return Sequencing(role="server", conversation_id="t1", next_stanza=next_stanza, outbox=outbox).to_dict()

    async with SqliteStore(tmp_path / "s.sqlite3") as store:
        await store.save_wire_state("t1", state(1, 3))  # frames 1 and 2
        commits = store._commits
        # Both are read before either is written, against the first save; the second is written
        # after the first, which dropped frame 1 that it brings back (checked by the first save).
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(store.save_wire_state, "t1", state(2, 3))
            tasks.start_soon(store.save_wire_state, "t1", state(1, 4))
        assert store._commits == commits + 1
    async with SqliteStore(tmp_path / "s.sqlite3") as reopened:
        assert await reopened.load_wire_state("t1") == state(1, 4)
