from __future__ import annotations

import io
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


def test_unknown_model_spec_fails_with_the_ways_to_choose(capsys: pytest.CaptureFixture[str]):
    assert main(["chat", "--model", "mystery"]) == 2
    assert "Choose a model in one of these ways" in capsys.readouterr().err


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
