"""`toolwire conversations list | show | delete --url` against a real `toolwire serve` subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from server_support import OTHER_TOKEN, TOKEN, Server, peer, serve
from test_conversations_http import answered_conversation, until_client_request


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob {OTHER_TOKEN}\n")
    with serve(tmp_path, "--tokens", str(tokens)) as running:
        yield running


async def toolwire(*arguments: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `toolwire conversations ARGUMENTS` (with `TOOLWIRE_TOKEN=token` if given); its output as text."""
    env = {key: value for key, value in os.environ.items() if key != "TOOLWIRE_TOKEN"}
    if token is not None:
        env["TOOLWIRE_TOKEN"] = token
    command = [sys.executable, "-m", "toolwire.cli", "conversations", *arguments]
    finished = await anyio.run_process(command, env=env, check=False)
    return subprocess.CompletedProcess(command, finished.returncode, finished.stdout.decode(), finished.stderr.decode())


async def test_list_and_show_a_principals_conversations(server: Server) -> None:
    conversation = await answered_conversation(server)
    listed = await toolwire("list", "--url", server.url, "--token", TOKEN)  # the ws:// address works too
    assert listed.returncode == 0, listed.stderr
    [header, row] = listed.stdout.splitlines()
    assert header.split()[:2] == ["conversation", "last"]
    assert row.split()[0] == conversation and "answered" in row and row.endswith("Open the config file, please")
    others = await toolwire("list", "--url", server.url.removesuffix("/ws"), token=OTHER_TOKEN)
    assert others.returncode == 0 and others.stdout.splitlines()[1:] == []
    shown = await toolwire("show", conversation, "--url", server.url, token=TOKEN)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"{conversation}: Open the config file, please"
    assert "user: Open   the" in lines
    assert '  call c_open: OpenFile {"path": "config.toml"}' in lines
    assert "  result c_open (OpenFile): ok" in lines
    assert lines[-1].startswith("assistant: Done: ")
    as_json = await toolwire("show", conversation, "--json", "--url", server.url, token=TOKEN)
    assert '"role": "user"' in as_json.stdout
    refused = await toolwire("show", conversation, "--url", server.url, token=OTHER_TOKEN)
    assert refused.returncode == 2
    assert f"no conversation {conversation!r} on the server (or not yours)" in refused.stderr


async def test_delete_refuses_a_run_in_progress_unless_forced(server: Server) -> None:
    async with peer(server.url) as client:
        await until_client_request(client)
        conversation = client.connection.conversation_id
        assert conversation is not None
        refused = await toolwire("delete", conversation, "--url", server.url, token=TOKEN)
        assert refused.returncode == 2
        assert "a run is in progress in this conversation: wait for it, or pass --force" in refused.stderr
        forced = await toolwire("delete", conversation, "--force", "--url", server.url, token=TOKEN)
        assert (forced.returncode, forced.stdout) == (0, f"{conversation}: deleted\n")
    again = await toolwire("delete", conversation, "--url", server.url, token=TOKEN)
    assert again.returncode == 2 and "no conversation" in again.stderr


async def test_a_refused_token_a_missing_token_and_no_server_are_said_plainly(server: Server) -> None:
    refused = await toolwire("list", "--url", server.url, token="not-the-token-0123456789")
    assert refused.returncode == 2
    assert "the server refused the token" in refused.stderr and "not-the-token" not in refused.stderr
    missing = await toolwire("list", "--url", server.url)
    assert missing.returncode == 2 and "needs the server's token" in missing.stderr
    with socket.socket() as unused:  # a port nobody listens on (bound, never listening)
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        nobody = await toolwire("list", "--url", f"http://127.0.0.1:{port}", token=TOKEN)
    assert nobody.returncode == 2
    assert f"no toolwire server answers at http://127.0.0.1:{port}" in nobody.stderr
    assert "is `toolwire serve` running?" in nobody.stderr
