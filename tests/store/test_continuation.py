"""A thread lives in the SQLite file: another process continues it, also after a crash."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from toolwire import Agent, ResultType, ToolCall, tool
from toolwire.messages import AssistantMessage, ToolResultMessage, UserMessage, message_from_dict
from toolwire.store import CallState
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import ScriptedModel, validate_transcript

CALL = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})


@tool(mode="read")
def lookup(query: str) -> str:
    """Look something up."""
    return f"results for {query}"


async def run_python(script: str, *args: str) -> str:
    """Run a Python script in a new interpreter; return what it printed."""
    process = await anyio.run_process([sys.executable, "-c", textwrap.dedent(script), *args], check=True)
    return process.stdout.decode()


FIRST_RUN = """
    import json, sys
    import anyio
    from toolwire import Agent, ToolCall, tool
    from toolwire.store.sqlite import SqliteStore
    from toolwire.testing import ScriptedModel

    @tool(mode="read")
    def lookup(query: str) -> str:
        '''Look something up.'''
        return f"results for {query}"

    async def main() -> None:
        model = ScriptedModel([
            [ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})],
            "It is 21 degrees in Paris.",
        ])
        async with SqliteStore.in_directory(sys.argv[1]) as store:
            result = await Agent(model, tools=[lookup], store=store).run("Weather in Paris?", thread="t1")
        print(json.dumps([message.to_dict() for message in result.transcript]))

    anyio.run(main)
"""


async def test_thread_started_in_one_process_continues_in_another(tmp_path: Path) -> None:
    printed = await run_python(FIRST_RUN, str(tmp_path))
    first_run = [message_from_dict(item) for item in json.loads(printed)]
    model = ScriptedModel(["Tomorrow too."])
    async with SqliteStore.in_directory(tmp_path) as store:
        result = await Agent(model, tools=[lookup], store=store).run("And tomorrow?", thread="t1")
    assert len(first_run) == 4 and first_run[-1] == AssistantMessage("It is 21 degrees in Paris.")
    assert list(model.requests[0].messages) == [*first_run, UserMessage("And tomorrow?")]
    validate_transcript(result.transcript)


# The process dies after the loop's write-ahead (assistant message and PENDING ledger entry) and
# before the call has a result: written by hand as the loop does, or by a tool that ends the process.
CRASH_BY_HAND = """
    import os, sys
    import anyio
    from toolwire import ToolCall
    from toolwire.messages import AssistantMessage, UserMessage
    from toolwire.store import LedgerEntry
    from toolwire.store.sqlite import SqliteStore

    async def main() -> None:
        store = SqliteStore.in_directory(sys.argv[1])
        call = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})
        await store.create_thread("t1")
        await store.append_messages("t1", [UserMessage("Weather in Paris?"), AssistantMessage("", (call,))])
        await store.record_calls([LedgerEntry(thread_id="t1", call=call, request_index=0, mode="read")])
        os._exit(0)

    anyio.run(main)
"""

CRASH_IN_TOOL = """
    import os, sys
    import anyio
    from toolwire import Agent, ToolCall, tool
    from toolwire.store.sqlite import SqliteStore
    from toolwire.testing import ScriptedModel

    @tool(mode="read")
    def lookup(query: str) -> str:
        '''Look something up.'''
        os._exit(0)

    async def main() -> None:
        model = ScriptedModel([[ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris"})]])
        store = SqliteStore.in_directory(sys.argv[1])
        await Agent(model, tools=[lookup], store=store).run("Weather in Paris?", thread="t1")

    anyio.run(main)
"""


@pytest.fixture(params=[CRASH_BY_HAND, CRASH_IN_TOOL], ids=["by_hand", "in_tool"])
async def crashed(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A data directory whose thread `t1` has a call left PENDING by a crashed process."""
    await run_python(request.param, str(tmp_path))
    async with SqliteStore.in_directory(tmp_path) as store:
        [open_call] = await store.open_calls("t1")
        assert (open_call.call, open_call.state) == (CALL, CallState.PENDING)
    return tmp_path


async def test_next_run_closes_the_crashed_call_as_canceled_by_system(crashed: Path) -> None:
    async with SqliteStore.in_directory(crashed) as store:
        await Agent(ScriptedModel(["Sorry, try again."]), tools=[lookup], store=store).run("Well?", thread="t1")
        entry = await store.get_call("t1", CALL.id)
        assert await store.open_calls("t1") == []
    assert entry is not None and entry.result is not None
    assert entry.result.type is ResultType.CANCELED
    assert entry.result.payload()["canceled"]["by"] == "system"


async def test_next_run_leaves_a_valid_transcript_with_the_canceled_result(crashed: Path) -> None:
    model = ScriptedModel(["Sorry, try again."])
    async with SqliteStore.in_directory(crashed) as store:
        result = await Agent(model, tools=[lookup], store=store).run("Well?", thread="t1")
        stored = await store.load_messages("t1")
    validate_transcript(result.transcript)
    assert stored == result.transcript
    [canceled] = [message for message in model.requests[0].messages if isinstance(message, ToolResultMessage)]
    assert (canceled.call_id, canceled.result.type) == (CALL.id, ResultType.CANCELED)
