"""`toolwire chat --url`: the terminal chat through the client, against a real server."""

from __future__ import annotations

import io
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from client_support import IDE_GROUP, TOKEN, Server, plan

from toolwire.cli import main, remote_chat_session
from toolwire.client import connect
from toolwire.envelopes import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import validate_transcript


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


# -- Ctrl-C, and an unknown conversation -----------------------------------------------------------


class Terminal:
    """`toolwire chat --url` in a subprocess; its input stays open, as a person's who types nothing."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.output: list[str] = []
        self._lines: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put("")  # the end of the output

    def type(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def wait_for(self, text: str) -> str:
        """The next line that contains `text` (the lines before it are kept in `output`)."""
        deadline = time.monotonic() + 30
        while True:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            self.output.append(line)
            if text in line:
                return line
            assert line, f"the chat ended before {text!r}:\n" + "".join(self.output)

    def press_ctrl_c(self) -> tuple[int, str]:
        """SIGINT, as the terminal sends for Ctrl-C; the exit status and the whole output."""
        self.process.send_signal(signal.SIGINT)
        status = self.process.wait(timeout=20)
        self.wait_for("")  # and read the rest
        while (line := self._lines.get(timeout=5)) != "":
            self.output.append(line)
        return status, "".join(self.output)


@contextmanager
def terminal(url: str) -> Iterator[Terminal]:
    env = {**os.environ, "TOOLWIRE_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "toolwire.cli", "chat", "--url", url]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        chat = Terminal(process)
        chat.wait_for("toolwire chat with")
        yield chat
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        for stream in (process.stdin, process.stdout):
            assert stream is not None
            stream.close()


def continued(text: str, url: str) -> str:
    """The conversation id of the line that says how to continue, which names no token."""
    [line] = [line for line in text.splitlines() if line.startswith("Stopped. Continue with: ")]
    start = f"Stopped. Continue with: toolwire chat --url {url} --token TOKEN --thread conv_"
    assert line.startswith(start), line
    assert TOKEN not in text and "Traceback" not in text, text
    return line.rsplit(" ", 1)[1]


async def test_ctrl_c_during_a_run_stops_it_on_the_server_and_says_how_to_continue(server: Server) -> None:
    with terminal(server.url) as chat:
        chat.type(plan(("wait_for_ever", {})))
        chat.wait_for("-> wait_for_ever {}")  # the server runs it
        status, text = chat.press_ctrl_c()
    assert status == 130
    assert "(run ended: canceled, Stopped by the client)" in text  # the chat waited for the run's end
    conversation = continued(text, server.url)
    # The server stopped the run (ControlStop), which stored the call's Canceled result.
    store = SqliteStore.in_directory(server.data_dir)
    try:
        transcript = await store.load_messages(conversation)
    finally:
        await store.aclose()
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert (result.type, result.error) == (ResultType.CANCELED, "Stopped by the client")


async def test_ctrl_c_at_the_prompt_leaves_at_once(server: Server) -> None:
    with terminal(server.url) as chat:
        chat.type(plan(("get_weather", {"city": "Oslo"})))
        chat.wait_for("Done: {'city': 'Oslo', 'celsius': 21}")
        status, text = chat.press_ctrl_c()  # the chat waits for the next line
    assert status == 130
    assert continued(text, server.url)


def test_chat_url_refuses_an_unknown_thread_as_the_local_chat_does(
    server: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLWIRE_TOKEN", TOKEN)
    unknown = "conv_" + "0" * 32
    assert main(["chat", "--url", server.url, "--thread", unknown]) == 2
    assert capsys.readouterr().err == (
        f"toolwire: no conversation '{unknown}' on {server.url}: leave out --thread to start a new one\n"
    )
