"""`toolwire mcp serve --http` authenticates every request, also on loopback, unless told `--no-token`."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

pytest.importorskip("mcp")

from toolwire.errors import UsageError
from toolwire.interop.mcp_http import tokens_for

from .peers import HERE, server_environment

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
GIVEN = "given-token-0123456789abcdef"


@contextmanager
def serving(*arguments: str) -> Iterator[tuple[str, list[str]]]:
    """`toolwire mcp serve --app mcp_app:factory --http --port 0 ARGUMENTS`: its URL and what it printed first."""
    command = [sys.executable, "-m", "toolwire", "mcp", "serve", "--app", "mcp_app:factory", "--http", "--port", "0"]
    process = subprocess.Popen(
        [*command, *arguments],
        cwd=HERE,
        env=server_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    printed: list[str] = []
    for line in process.stdout:
        printed.append(line)
        if match := re.search(r"serving (http://\S+)", line):
            break
    else:
        process.wait(timeout=10)
        raise AssertionError("the MCP server did not start:\n" + "".join(printed))
    try:
        yield match.group(1), printed
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        process.stdout.close()


def initialize(url: str, token: str | None = None) -> int:
    headers = {**ACCEPT, **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx.post(url, json=INITIALIZE, headers=headers).status_code


def test_without_a_token_given_one_is_made_for_the_run() -> None:
    auth, made = tokens_for(None, None, {})
    assert made is not None and auth is not None and auth.authenticate(made) == "default"


def test_a_token_given_is_used_and_none_is_made() -> None:
    auth, made = tokens_for(GIVEN, None, {})
    assert made is None and auth is not None and auth.authenticate(GIVEN) == "default"


def test_the_environments_token_is_used() -> None:
    auth, made = tokens_for(None, None, {"TOOLWIRE_TOKEN": GIVEN})
    assert made is None and auth is not None and auth.authenticate(GIVEN) == "default"


def test_no_token_means_no_authentication() -> None:
    assert tokens_for(None, None, {}, anonymous=True) == (None, None)


def test_no_token_beside_a_token_is_refused() -> None:
    with pytest.raises(UsageError, match="--no-token"):
        tokens_for(GIVEN, None, {}, anonymous=True)


def test_a_server_started_without_a_token_refuses_a_request_without_one() -> None:
    with serving() as (url, _):
        assert initialize(url) == 401


def test_a_server_started_without_a_token_accepts_the_one_it_printed() -> None:
    with serving() as (url, printed):
        [token] = [line.removeprefix("token: ").strip() for line in printed if line.startswith("token: ")]
        assert initialize(url, token) == 200


def test_a_server_started_with_no_token_accepts_a_request_without_one() -> None:
    with serving("--no-token") as (url, printed):
        assert initialize(url) == 200
    assert not [line for line in printed if line.startswith("token: ")]
