"""Several `toolwire serve` replicas on one PostgreSQL database: a conversation is served under its lease.

Two real servers share the test cluster's database; clients connect to one or the other, as a
load balancer would send them. The leases table shows who held each conversation, at which epoch.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path

import anyio
import pytest
from client_support import APP_SOURCE, IDE_GROUP, TOKEN, plan

from pg_cluster import PgCluster
from serving import Server, serve_app
from toolwire.client import ConnectionClosed, connect
from toolwire.client.client import Client

LEASES = ("--lease-ttl", "3", "--lease-renew", "0.5", "--lease-drain", "2")


@contextmanager
def replica(tmp_path: Path, postgres: PgCluster, name: str, *extra: str) -> Iterator[Server]:
    """`toolwire serve --replica-id NAME` on the cluster's database (its own working directory)."""
    directory = tmp_path / name
    directory.mkdir()
    arguments = ("--store", postgres.dsn, "--replica-id", name, *LEASES, *extra)
    with serve_app(directory, APP_SOURCE, "clientapp", *arguments, token=TOKEN) as server:
        yield server


async def lease_of(postgres: PgCluster, conversation: str) -> tuple[str, int, bool] | None:
    """The conversation's lease row: owner, epoch, and whether it is held now."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as db:
        cursor = await db.execute(
            "SELECT owner, epoch, expires_at > clock_timestamp() FROM toolwire.leases WHERE conversation = %s",
            (conversation,),
        )
        row = await cursor.fetchone()
    return None if row is None else (row[0], row[1], row[2])


def test_serve_help_lists_the_lease_settings_with_their_defaults() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    text = " ".join(done.stdout.split())
    for option in ("--replica-id", "--lease-ttl", "--lease-renew", "--lease-drain", "--lease-wait"):
        assert option in text
    from toolwire.server.replica import LeaseSettings

    defaults = LeaseSettings(replica_id="x")
    assert f"(default {defaults.ttl:g})" in text and f"(default {defaults.renew_every:g})" in text
    assert f"(default {defaults.drain:g})" in text and f"(default {defaults.wait:g})" in text
    assert "(default: host:pid)" in text


async def test_two_replicas_serve_a_conversation_one_after_the_other(tmp_path: Path, postgres: PgCluster) -> None:
    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b") as b:
        assert "replica replica-a: leases of 3 s, renewed every 0.5 s" in "".join(a.started)
        async with connect(a.url, token=TOKEN, reconnect=False) as client:
            assert (
                await client.ask(plan(("get_weather", {"city": "Paris"}))) == "Done: {'city': 'Paris', 'celsius': 21}"
            )
            conversation = client.conversation_id
            assert await lease_of(postgres, conversation) == ("replica-a", 1, True)
        with anyio.fail_after(30):  # released once its client left and its run ended (a loaded CI machine is slow)
            while await lease_of(postgres, conversation) != ("replica-a", 1, False):  # noqa: ASYNC110 (another process's)
                await anyio.sleep(0.05)
        async with connect(b.url, token=TOKEN, conversation=conversation, reconnect=False) as client:
            assert await client.ask(plan(("get_weather", {"city": "Oslo"}))) == "Done: {'city': 'Oslo', 'celsius': 21}"
            assert await lease_of(postgres, conversation) == ("replica-b", 2, True)


async def test_a_client_at_another_replica_gets_the_conversation_handed_over(
    tmp_path: Path, postgres: PgCluster
) -> None:
    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b") as b:
        async with AsyncExitStack() as stack:
            first: Client = await stack.enter_async_context(connect(a.url, token=TOKEN, reconnect=False))
            assert (await first.ask(plan(("get_weather", {"city": "Paris"})))).startswith("Done")
            conversation = first.conversation_id
            started = time.monotonic()
            second = await stack.enter_async_context(
                connect(b.url, token=TOKEN, conversation=conversation, reconnect=False)
            )
            handed_over = time.monotonic() - started
            assert handed_over < 3.0  # a wake-up (or its 1 s poll), not the lease's expiry (3 s after the last renewal)
            assert await lease_of(postgres, conversation) == ("replica-b", 2, True)
            assert (await second.ask(plan(("get_weather", {"city": "Oslo"})))).startswith("Done")
            with anyio.fail_after(10):  # A closed its socket
                while first.connected:  # noqa: ASYNC110 (the client's link state)
                    await anyio.sleep(0.05)
            with pytest.raises(ConnectionClosed):
                await first.ask("anything")
    assert "another replica owns it now" not in "".join(a.printed)  # handed over, not fenced out


async def test_a_run_waiting_for_its_client_tool_moves_to_the_replica_the_client_reconnects_to(
    tmp_path: Path, postgres: PgCluster
) -> None:
    from toolwire.messages import AssistantMessage
    from toolwire.store.postgres import PostgresStore

    running, answered = anyio.Event(), anyio.Event()

    async def never(path: str) -> str:
        running.set()
        await anyio.Event().wait()
        return "never"

    async def open_file(path: str) -> str:
        answered.set()
        return f"opened {path}"

    async def ask_until_closed(client: Client, text: str) -> None:
        with pytest.raises(ConnectionClosed):
            await client.ask(text)

    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b") as b:
        async with anyio.create_task_group() as group, AsyncExitStack() as stack:
            first = await stack.enter_async_context(
                connect(a.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": never}, reconnect=False)
            )
            conversation = first.conversation_id
            group.start_soon(ask_until_closed, first, plan(("IDE", {}), ("OpenFile", {"path": "a.toml"})))
            with anyio.fail_after(10):  # the request reached the client at A (its handler runs)
                await running.wait()
            second = await stack.enter_async_context(
                connect(
                    b.url, token=TOKEN, conversation=conversation, handlers={"OpenFile": open_file}, reconnect=False
                )
            )
            with anyio.fail_after(20):  # B resumed the run and asked the client there
                await answered.wait()
            async with PostgresStore(postgres.dsn) as store:
                with anyio.fail_after(20):
                    while (messages := await store.load_messages(conversation)) and not (  # noqa: ASYNC110
                        isinstance(messages[-1], AssistantMessage) and messages[-1].text == "Done: opened a.toml"
                    ):
                        await anyio.sleep(0.05)
                assert await store.open_calls(conversation) == []
            assert second.connected
        owner = await lease_of(postgres, conversation)
        assert owner is not None and owner[:2] == ("replica-b", 2)
    assert "another replica owns it now" not in "".join(a.printed)  # handed over, not fenced out


async def test_a_replica_stopped_past_its_lease_is_fenced_out_when_it_comes_back(
    tmp_path: Path, postgres: PgCluster
) -> None:
    import signal

    from toolwire.messages import AssistantMessage, ToolResultMessage
    from toolwire.store.postgres import PostgresStore

    running, late = anyio.Event(), anyio.Event()

    async def answer_late(path: str) -> str:
        running.set()
        await late.wait()
        return f"late answer for {path}"

    async def open_file(path: str) -> str:
        return f"opened {path}"

    async def ask_until_closed(client: Client, text: str) -> None:
        with pytest.raises(ConnectionClosed):
            await client.ask(text)

    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b") as b:
        async with anyio.create_task_group() as group, AsyncExitStack() as stack:
            first = await stack.enter_async_context(
                connect(a.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": answer_late}, reconnect=False)
            )
            conversation = first.conversation_id
            group.start_soon(ask_until_closed, first, plan(("IDE", {}), ("OpenFile", {"path": "a.toml"})))
            with anyio.fail_after(10):
                await running.wait()
            a.process.send_signal(signal.SIGSTOP)
            try:
                with anyio.fail_after(15):  # its lease expires (3 s): nobody renews it (B's sweeper may take it)
                    while await lease_of(postgres, conversation) == ("replica-a", 1, True):  # noqa: ASYNC110
                        await anyio.sleep(0.1)
                await stack.enter_async_context(
                    connect(
                        b.url, token=TOKEN, conversation=conversation, handlers={"OpenFile": open_file}, reconnect=False
                    )
                )
                async with PostgresStore(postgres.dsn) as store:
                    with anyio.fail_after(20):  # B took the lease over and finished the run
                        while (messages := await store.load_messages(conversation)) and not (  # noqa: ASYNC110
                            isinstance(messages[-1], AssistantMessage) and messages[-1].text.startswith("Done")
                        ):
                            await anyio.sleep(0.05)
            finally:
                a.process.send_signal(signal.SIGCONT)
            late.set()  # A's client answers A now: A's save of it is fenced (or its renewal failed first)
            with anyio.fail_after(10):
                while first.connected:  # noqa: ASYNC110 (A closes the socket)
                    await anyio.sleep(0.05)
            async with PostgresStore(postgres.dsn) as store:
                messages = await store.load_messages(conversation)
                entry = await store.get_call(conversation, "c0_1")
        owner = await lease_of(postgres, conversation)
        assert owner is not None and owner[:2] == ("replica-b", 2)
    results = [m for m in messages if isinstance(m, ToolResultMessage) and m.tool_name == "OpenFile"]
    assert [m.result.data for m in results] == ["opened a.toml"]  # B's client's; A's late answer kept nowhere
    assert entry is not None and entry.result is not None and entry.result.data == "opened a.toml"
    assert messages[-1] == AssistantMessage("Done: opened a.toml")
    printed = "".join(a.printed)
    assert "another replica owns it now" in printed or "its lease was lost" in printed


async def test_a_sweeper_resumes_the_run_of_a_replica_killed_mid_run_with_no_client_attached(
    tmp_path: Path, postgres: PgCluster
) -> None:
    from toolwire.messages import AssistantMessage, ToolResultMessage
    from toolwire.store.postgres import PostgresStore

    async def ask_until_closed(client: Client, text: str) -> None:
        with pytest.raises(ConnectionClosed):
            await client.ask(text)

    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b"):
        async with anyio.create_task_group() as group, AsyncExitStack() as stack:
            first = await stack.enter_async_context(connect(a.url, token=TOKEN, reconnect=False))
            conversation = first.conversation_id
            group.start_soon(ask_until_closed, first, plan(("wait_for_ever", {})))
            async with PostgresStore(postgres.dsn) as store:
                with anyio.fail_after(10):  # A runs the server tool
                    while not await store.open_calls(conversation):  # noqa: ASYNC110 (another process's)
                        await anyio.sleep(0.05)
                a.kill()
                with anyio.fail_after(30):  # B's sweeper takes it over once A's lease expired, and resumes
                    while not (  # noqa: ASYNC110
                        (messages := await store.load_messages(conversation))
                        and isinstance(messages[-1], AssistantMessage)
                        and not messages[-1].tool_calls
                    ):
                        await anyio.sleep(0.1)
                assert await store.open_calls(conversation) == []
    [result] = [m.result for m in messages if isinstance(m, ToolResultMessage)]
    assert result.type.name == "CANCELED"  # a server tool in flight is never run again
    last = messages[-1]
    assert isinstance(last, AssistantMessage) and last.text.startswith("Failed (CANCELED")
    owner = await lease_of(postgres, conversation)
    assert owner is not None and owner[:2] == ("replica-b", 2)
