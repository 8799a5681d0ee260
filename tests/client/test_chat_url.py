"""`toolwire chat --url`: the terminal chat through the client, against a real server."""

from __future__ import annotations

import io
from collections.abc import Callable

import pytest
from client_support import IDE_GROUP, TOKEN, Server, plan

from toolwire.cli import main, remote_chat_session
from toolwire.client import connect


def lines(*answers: str) -> tuple[Callable[[str], str | None], list[str]]:
    prompts: list[str] = []
    feed = iter(answers)

    def read(prompt: str) -> str | None:
        prompts.append(prompt)
        return next(feed, None)

    return read, prompts


def test_chat_url_streams_the_answer_and_shows_server_tool_calls(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN", TOKEN)
    monkeypatch.setattr("sys.stdin", io.StringIO(plan(("get_weather", {"city": "Oslo"})) + "\n"))
    assert main(["chat", "--url", server.url]) == 0
    out = capsys.readouterr().out
    assert '  -> get_weather {"city": "Oslo"}  [read, server]\n  <- SUCCESS\n' in out
    assert "Done: {'city': 'Oslo', 'celsius': 21}\n" in out
    assert "Continue with: toolwire chat --url " in out and TOKEN not in out


def test_chat_url_without_a_token_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TOOLWIRE_TOKEN", raising=False)
    assert main(["chat", "--url", "ws://127.0.0.1:9/ws"]) == 2
    assert "--token TOKEN, or set TOOLWIRE_TOKEN" in capsys.readouterr().err


async def test_chat_url_asks_consent_inline_in_a_resumed_conversation(server: Server) -> None:
    # A conversation with client tools: the server asks its client, so the person at the terminal.
    async with connect(server.url, token=TOKEN, groups=[IDE_GROUP]) as client:
        thread = client.conversation_id
    read, prompts = lines(plan(("reset_cache", {})), "y", "/quit")
    out = io.StringIO()
    assert await remote_chat_session(server.url, TOKEN, thread, out=out, read_line=read) == 0
    text = out.getvalue()
    assert "? reset_cache {} (" in text and "Allow? [y]es / [n]o / [a]lways" in text
    assert "Done: cache emptied\n" in text
    assert prompts == ["you> ", "  > ", "you> "]
    assert f"--thread {thread}" in text
