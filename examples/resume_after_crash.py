"""Resume after a crash: a process dies in the middle of a tool call, the next one finishes the run.

The first process (this program, started again with `--crash DIR`) runs an agent on a SQLite
store. Its model saves a note, then asks for an export; the export tool kills the process on the
spot, as `kill -9` or a power cut would. The second process opens the same store, sees the
unfinished run and resumes it:

- the note, saved before the crash, keeps its Success: a decided outcome stays decided;
- the export, which was running, ends Canceled by `system`: a server tool is never run twice
  behind the model's back, so the model is told and may ask again;
- the model is asked with both results and answers, as the run would have.

    python examples/resume_after_crash.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio

from toolwire import Agent, Toolbox, ToolCall
from toolwire.messages import ToolResultMessage
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import ScriptedModel

THREAD = "report-42"


def make_toolbox(*, crash: bool) -> Toolbox:
    toolbox = Toolbox()

    @toolbox.tool
    def add_note(text: str) -> str:
        """Save a note."""
        return f"saved {text!r}"

    @toolbox.tool
    def export_notes(to: str) -> str:
        """Export the notes to a file."""
        if crash:
            print("crash: the process dies while export_notes runs", flush=True)
            os._exit(9)  # no cleanup, nothing more written: what kill -9 does
        return f"exported to {to}"

    return toolbox


async def crash(directory: Path) -> None:
    """The first process: start the run; it never ends."""
    model = ScriptedModel(
        [
            [ToolCall(id="c1", name="add_note", arguments={"text": "call the bank"})],
            [ToolCall(id="c2", name="export_notes", arguments={"to": "notes.md"})],
        ]
    )
    async with SqliteStore.in_directory(directory) as store:
        await Agent(model, tools=make_toolbox(crash=True), store=store).run("Note it, then export.", thread=THREAD)


async def resume(directory: Path) -> None:
    """The second process: the same store, a new agent; finish what the first one left."""
    model = ScriptedModel(["The note is saved; the export was interrupted, shall I try it again?"])
    async with SqliteStore.in_directory(directory) as store:
        agent = Agent(model, tools=make_toolbox(crash=False), store=store)
        print("unfinished:", await agent.unfinished(THREAD))
        result = await agent.resume(THREAD)
        assert result is not None
        for message in result.transcript:
            if isinstance(message, ToolResultMessage):
                print(
                    f"{message.call_id} {message.tool_name} -> {message.result.type.name}: {message.result.payload()}"
                )
        print("answer:", result.output)
        print("unfinished:", await agent.unfinished(THREAD))


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        first = subprocess.run([sys.executable, __file__, "--crash", directory], stdout=subprocess.PIPE, text=True)
        print(first.stdout, end="")
        print("the first process exited with status", first.returncode)
        anyio.run(resume, Path(directory))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--crash"]:
        anyio.run(crash, Path(sys.argv[2]))
    else:
        main()
