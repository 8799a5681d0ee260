"""`toolwire serve --store postgresql://...`: a real server on the test cluster, with a client tool round trip."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from client_support import APP_SOURCE, IDE_GROUP, TOKEN

from pg_cluster import PgCluster
from serving import serve_app
from toolwire.client import connect
from toolwire.store import CallState


async def open_file(path: str) -> str:
    return f"opened {path}"


async def test_a_server_on_postgres_runs_a_client_tool_and_keeps_the_conversation_there(
    tmp_path: Path, postgres: PgCluster
) -> None:
    from toolwire.store.postgres import PostgresStore

    # A password in the URL (the cluster trusts loopback and ignores it) is never printed.
    store_url = postgres.dsn.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@")
    with serve_app(tmp_path, APP_SOURCE, "clientapp", "--store", store_url, token=TOKEN) as server:
        assert re.search(
            r"data: postgresql://postgres@127\.0\.0\.1:\d+/postgres \(schema toolwire\)", server.started[-1]
        )
        async with connect(server.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
            assert await client.ask("Open the config file") == "Done: opened config.toml"
            conversation = client.conversation_id
        code, output = server.stop()
    assert code == 0
    assert "s3cret-pw" not in "".join(server.started) + output
    assert not (tmp_path / "data" / "toolwire.sqlite3").exists()  # nothing went to SQLite
    async with PostgresStore(postgres.dsn) as store:
        assert await store.thread_exists(conversation)
        calls = [await store.get_call(conversation, call_id) for call_id in ("c0_0", "c0_1", "c0_2")]
        assert [(call.call.name, call.state) for call in calls if call is not None] == [
            ("IDE", CallState.TERMINAL),
            ("get_weather", CallState.TERMINAL),
            ("OpenFile", CallState.TERMINAL),
        ]
        [openfile] = [call for call in calls if call is not None and call.call.name == "OpenFile"]
        assert openfile.execution == "client" and openfile.answer is not None
        assert await store.open_calls(conversation) == []


def test_an_unreachable_database_stops_the_server_at_start_with_one_line(tmp_path: Path, postgres: PgCluster) -> None:
    url = f"postgresql://postgres:s3cret-pw@127.0.0.1:{postgres.port}/no_such_database"
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "serve", "--port", "0", "--token", TOKEN, "--store", url,
         "--data-dir", str(tmp_path / "data"), "--model", "openai:gpt-4o-mini"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**os.environ, "OPENAI_API_KEY": "x"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot open the PostgreSQL store at postgresql://postgres@127.0.0.1" in done.stderr
    assert "s3cret-pw" not in done.stdout + done.stderr


def test_a_store_that_is_neither_sqlite_nor_a_postgres_url_is_refused(tmp_path: Path) -> None:
    from toolwire.errors import UsageError
    from toolwire.server.serve import ServeOptions, open_store

    with pytest.raises(UsageError, match="--store: sqlite"):
        open_store(ServeOptions(data_dir=tmp_path, store="mysql://x"))
