"""`MCPToolset` against a Python `MCPServer` (`tests/mcp_generations_server.py`) on both protocol generations.

The 2026-07-28 generation over stdio (the fixture run as a subprocess) and over Streamable HTTP
(uvicorn in process on a loopback port); the 2025-11-25 one over stdio (the fixture serving the
handshake only). The tool list's changes, and a restart after the server died.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn

from mcp_generations_server import build
from toolwire import Agent, ResultType, ToolCall, ToolMode, ToolResult
from toolwire.errors import UsageError
from toolwire.interop.mcp import MCPToolset, StreamableHTTP
from toolwire.messages import ToolResultMessage
from toolwire.testing import ScriptedModel, validate_transcript

SERVER = Path(__file__).resolve().parent.parent / "mcp_generations_server.py"

MakeToolset = Callable[..., MCPToolset]


@pytest.fixture
def ran_file(tmp_path: Path) -> Path:
    return tmp_path / "ran"


def stdio(ran_file: Path, generation: str | None = None) -> MakeToolset:
    env = {"TOOLWIRE_RAN_FILE": str(ran_file)} | ({"TOOLWIRE_GENERATION": generation} if generation else {})
    return lambda **options: MCPToolset(sys.executable, [str(SERVER)], env=env, **options)


@asynccontextmanager
async def serve_http() -> AsyncIterator[str]:
    """The fixture server over Streamable HTTP, in process; yields its URL.

    The socket listens before uvicorn starts: a connection made at once waits in its backlog.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build().streamable_http_app(), lifespan="on", log_level="warning"))
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(server.serve, [listener])
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            server.should_exit = True


@pytest.fixture(params=["stdio", "http"])
async def make(request: pytest.FixtureRequest, ran_file: Path) -> AsyncIterator[MakeToolset]:
    """An `MCPToolset` of the fixture server on the 2026-07-28 generation, over stdio or HTTP."""
    if request.param == "stdio":
        yield stdio(ran_file)
        return
    async with serve_http() as url:
        yield lambda **options: MCPToolset.http(url, **options)


@pytest.fixture(params=["2026", "2025"])
def make_stdio(request: pytest.FixtureRequest, ran_file: Path) -> MakeToolset:
    """An `MCPToolset` of the fixture server over stdio, on either generation."""
    return stdio(ran_file, None if request.param == "2026" else "2025-11-25")


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def result_of(transcript: Sequence[Any], call_id: str = "c1") -> ToolResult:
    [message] = [m for m in transcript if isinstance(m, ToolResultMessage) and m.call_id == call_id]
    return message.result


async def run_once(agent: Agent) -> Sequence[Any]:
    outcome = await agent.run("go")
    validate_transcript(outcome.transcript)
    return outcome.transcript


# -- the 2026-07-28 generation, over stdio and Streamable HTTP --------------------------------------


async def test_the_2026_generation_is_negotiated(make: MakeToolset) -> None:
    toolset = make()
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert toolset.protocol_version == "2026-07-28"


async def test_the_tools_are_listed_with_their_modes(make: MakeToolset) -> None:
    toolset = make(trusted=True)
    async with Agent(ScriptedModel([]), tools=[toolset]):
        modes = {tool.name: tool.mode for tool in toolset.toolbox}
    assert modes == {
        "echo": ToolMode.READ,  # its annotations
        "fail": ToolMode.EXTERNAL,  # no annotations, no pattern: the fallback
        "hang": ToolMode.EXTERNAL,
        "grow": ToolMode.EXTERNAL,
        "crash": ToolMode.EXTERNAL,
    }


async def test_a_call_succeeds(make: MakeToolset) -> None:
    agent = Agent(ScriptedModel([[call("echo", text="hi")], "done"]), tools=[make()])
    async with agent:
        result = result_of(await run_once(agent))
    assert (result.type, result.data) == (ResultType.SUCCESS, "hi")


async def test_an_is_error_result_is_an_execution_error(make: MakeToolset) -> None:
    agent = Agent(ScriptedModel([[call("fail", reason="disk on fire")], "done"]), tools=[make()])
    async with agent:
        result = result_of(await run_once(agent))
    assert (result.type, result.error_code) == (ResultType.ERROR, "execution_error")
    assert result.error is not None and "disk on fire" in result.error


async def test_a_call_past_its_deadline_is_a_timeout(make: MakeToolset) -> None:
    agent = Agent(ScriptedModel([[call("hang")], "done"]), tools=[make(timeout=0.5)])
    async with agent:
        result = result_of(await run_once(agent))
    assert result.type is ResultType.TIMEOUT


# -- the 2025-11-25 generation --------------------------------------------------------------------


async def test_a_server_of_the_2025_generation_is_spoken_to_in_it(ran_file: Path) -> None:
    toolset = stdio(ran_file, "2025-11-25")()
    agent = Agent(ScriptedModel([[call("echo", text="hi")], "done"]), tools=[toolset])
    async with agent:
        assert toolset.protocol_version == "2025-11-25"
        assert result_of(await run_once(agent)).data == "hi"


# -- the tool list changes ------------------------------------------------------------------------


async def test_a_tool_the_server_adds_is_offered_to_the_next_run(make: MakeToolset) -> None:
    toolset = make()
    agent = Agent(ScriptedModel([[call("grow", tool="fresh")], "done", [call("fresh")], "done"]), tools=[toolset])
    async with agent:
        listed = toolset.listings
        await run_once(agent)
        await toolset.wait_listed(listed + 1)
        result = result_of(await run_once(agent))
    assert (result.type, result.data) == (ResultType.SUCCESS, "fresh")


async def test_a_run_already_running_keeps_the_list_it_bound(make: MakeToolset) -> None:
    toolset = make()
    agent = Agent(ScriptedModel([[call("grow", tool="fresh")], [call("fresh", "c2")], "done"]), tools=[toolset])
    async with agent:
        result = result_of(await run_once(agent), "c2")
    assert (result.type, result.error_code) == (ResultType.ERROR, "unknown_tool")


async def test_the_2025_generation_announces_a_change_too(ran_file: Path) -> None:
    toolset = stdio(ran_file, "2025-11-25")()
    agent = Agent(ScriptedModel([[call("grow", tool="fresh")], "done"]), tools=[toolset])
    async with agent:
        listed = toolset.listings
        await run_once(agent)
        await toolset.wait_listed(listed + 1)
        assert "fresh" in toolset.toolbox


async def test_a_new_list_with_a_name_collision_is_refused_and_the_old_one_stays(
    make_stdio: MakeToolset, caplog: pytest.LogCaptureFixture
) -> None:
    toolset = make_stdio()
    turns = [[call("grow", tool="a.b")], "done", [call("grow", tool="a_b")], "done"]
    agent = Agent(ScriptedModel(turns), tools=[toolset])
    async with agent:
        await run_once(agent)
        await toolset.wait_listed(2)
        await run_once(agent)
        await toolset.wait_listed(3)
        assert toolset.toolbox["a_b"].mcp_name == "a.b"  # type: ignore[attr-defined]
    assert "its new tool list is refused" in caplog.text


# -- the server dies --------------------------------------------------------------------------------


async def test_a_call_after_the_server_died_restarts_it_and_succeeds(make_stdio: MakeToolset, ran_file: Path) -> None:
    toolset = make_stdio()
    agent = Agent(ScriptedModel([[call("crash")], [call("echo", "c2", text="hi")], "done"]), tools=[toolset])
    async with agent:
        transcript = await run_once(agent)
    crashed, after = result_of(transcript), result_of(transcript, "c2")
    assert crashed.type is ResultType.ERROR and crashed.error is not None and "not re-sent" in crashed.error
    assert (after.type, after.data, toolset.connections) == (ResultType.SUCCESS, "hi", 2)


async def test_the_call_open_when_the_server_died_is_not_re_sent(make_stdio: MakeToolset, ran_file: Path) -> None:
    toolset = make_stdio()
    agent = Agent(ScriptedModel([[call("crash")], [call("echo", "c2", text="hi")], "done"]), tools=[toolset])
    async with agent:
        await run_once(agent)
    assert ((await anyio.Path(ran_file).read_text()).split(), toolset.sent) == (["crash"], 2)


# -- configuration --------------------------------------------------------------------------------


def test_a_url_that_is_not_http_is_refused() -> None:
    with pytest.raises(UsageError, match="must start with http:// or https://"):
        MCPToolset.http("ws://127.0.0.1/mcp")


def test_stdio_options_beside_an_address_are_refused() -> None:
    with pytest.raises(UsageError, match="give `args`, `env` and `cwd` to the `Stdio` address"):
        MCPToolset(StreamableHTTP("http://127.0.0.1/mcp"), env={"A": "1"})


def test_the_label_of_an_http_server_leaves_out_credentials_and_query() -> None:
    toolset = MCPToolset.http("http://user:secret@127.0.0.1:8000/mcp?token=x")
    assert toolset.label == "http://127.0.0.1/mcp"
