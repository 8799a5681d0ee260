"""Deleting a conversation with several replicas on one PostgreSQL database: only under its lease."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
from server_support import APP_SOURCE, TOKEN, peer
from test_conversations_http import base_url, until_client_request
from websockets.exceptions import ConnectionClosed

from pg_cluster import PgCluster
from serving import Server, serve_app

LEASES = ("--lease-ttl", "3", "--lease-renew", "0.5", "--lease-drain", "2")


@contextmanager
def replica(tmp_path: Path, postgres: PgCluster, name: str) -> Iterator[Server]:
    """`toolwire serve --replica-id NAME` on the cluster's database (its own working directory)."""
    directory = tmp_path / name
    directory.mkdir()
    arguments = ("--store", postgres.dsn, "--replica-id", name, *LEASES)
    with serve_app(directory, APP_SOURCE, "agentapp", *arguments, token=TOKEN) as server:
        yield server


async def rows_of(postgres: PgCluster, thread_id: str) -> int:
    """How many rows toolwire's tables (but `leases`) keep of a thread."""
    import psycopg

    tables = ("messages", "ledger", "client_state", "wire_state", "wire_outbox", "grants", "approvals", "denials")
    total = 0
    async with await psycopg.AsyncConnection.connect(postgres.dsn, autocommit=True) as db:
        for table in tables:
            cursor = await db.execute(f"SELECT count(*) FROM toolwire.{table} WHERE thread_id = %s", (thread_id,))
            total += (await cursor.fetchone() or (0,))[0]
        cursor = await db.execute("SELECT count(*) FROM toolwire.threads WHERE id = %s", (thread_id,))
        total += (await cursor.fetchone() or (0,))[0]
    return total


async def test_a_conversation_another_replica_serves_is_busy_and_its_own_replica_deletes_it(
    tmp_path: Path, postgres: PgCluster
) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with replica(tmp_path, postgres, "replica-a") as a, replica(tmp_path, postgres, "replica-b") as b:
        async with (
            httpx.AsyncClient(base_url=base_url(a), headers=headers) as at_a,
            httpx.AsyncClient(base_url=base_url(b), headers=headers) as at_b,
        ):
            async with peer(a.url) as client:
                await until_client_request(client)
                conversation = client.connection.conversation_id
                assert conversation is not None
                # B lists it (one database), but A serves it: B does not delete it under A's feet.
                listed = [item["id"] for item in (await at_b.get("/conversations")).json()["conversations"]]
                assert conversation in listed  # (the session's cluster holds other tests' conversations too)
                busy = await at_b.delete(f"/conversations/{conversation}", params={"force": "true"})
                assert (busy.status_code, busy.json()["code"]) == (409, "busy")
                assert "another replica" in busy.json()["error"]
                assert (await at_a.get(f"/conversations/{conversation}")).json()["run"] == "running"
                # A, which serves it, cancels its run and deletes it.
                deleted = await at_a.delete(f"/conversations/{conversation}", params={"force": "true"})
                assert deleted.status_code == 200, deleted.text
                with anyio.fail_after(30):
                    while True:  # A closes the client's socket (201, then 1008)
                        try:
                            await client.socket.recv()
                        except ConnectionClosed:
                            break
            assert client.socket.close_code == 1008
            assert await rows_of(postgres, conversation) == 0
            assert (await at_b.get(f"/conversations/{conversation}")).status_code == 404
