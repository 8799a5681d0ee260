"""`MCPToolset` against the real reference server, @modelcontextprotocol/server-everything, over stdio."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import (
    Agent,
    InvocationContext,
    PermissionPolicy,
    ResultType,
    Toolbox,
    ToolCall,
    ToolMode,
    ToolResult,
    tool,
)
from toolwire.errors import UsageError
from toolwire.interop.mcp import MCPToolset
from toolwire.messages import ToolResultMessage
from toolwire.pipeline import Next
from toolwire.store.sqlite import SqliteStore
from toolwire.testing import FunctionModel, ScriptedModel, validate_transcript

LOOKUP_SERVER = Path(__file__).resolve().parent.parent / "toolsets" / "mcp_lookup_server.py"
"""A one-tool Python MCP server (`lookup`), shared with the toolset contract suite."""

UNTRUSTED = {
    "echo": ToolMode.EXTERNAL,
    "get-annotated-message": ToolMode.EXTERNAL,
    "get-env": ToolMode.EXTERNAL,
    "get-resource-links": ToolMode.EXTERNAL,
    "get-resource-reference": ToolMode.EXTERNAL,
    "get-structured-content": ToolMode.EXTERNAL,
    "get-sum": ToolMode.EXTERNAL,
    "get-tiny-image": ToolMode.EXTERNAL,
    "gzip-file-as-resource": ToolMode.EXTERNAL,
    "toggle-simulated-logging": ToolMode.EXTERNAL,
    "toggle-subscriber-updates": ToolMode.EXTERNAL,
    "trigger-long-running-operation": ToolMode.EXTERNAL,
    # Listed because the client declares elicitation (`MCPToolset(elicitation=True)`, the default).
    "trigger-elicitation-request": ToolMode.EXTERNAL,
    "trigger-url-elicitation": ToolMode.EXTERNAL,
}
TRUSTED = {
    "echo": ToolMode.READ,
    "get-annotated-message": ToolMode.READ,
    "get-env": ToolMode.READ,
    "get-resource-links": ToolMode.READ,
    "get-resource-reference": ToolMode.READ,
    "get-structured-content": ToolMode.READ,
    "get-sum": ToolMode.READ,
    "get-tiny-image": ToolMode.READ,
    "gzip-file-as-resource": ToolMode.EXTERNAL,
    "toggle-simulated-logging": ToolMode.SAFE_WRITE,
    "toggle-subscriber-updates": ToolMode.SAFE_WRITE,
    "trigger-long-running-operation": ToolMode.READ,
    "trigger-elicitation-request": ToolMode.SAFE_WRITE,
    "trigger-url-elicitation": ToolMode.EXTERNAL,
}


def modes(toolset: MCPToolset) -> dict[str, ToolMode]:
    return {tool.name: tool.mode for tool in toolset.toolbox}


def call(name: str, call_id: str = "c1", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def result_of(transcript: Sequence[Any], call_id: str = "c1") -> ToolResult:
    [message] = [m for m in transcript if isinstance(m, ToolResultMessage) and m.call_id == call_id]
    return message.result


async def run(toolset: MCPToolset, turns: Sequence[Any], **options: Any) -> tuple[Agent, ToolResult]:
    agent = Agent(ScriptedModel(turns), tools=[toolset], **options)
    async with agent:
        result = await agent.run("go")
    validate_transcript(result.transcript)
    return agent, result_of(result.transcript)


async def test_the_servers_tools_are_listed_with_their_untrusted_modes(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, prefix="ev_")
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert modes(toolset) == {f"ev_{name}": mode for name, mode in UNTRUSTED.items()}


async def test_get_env_marked_read_only_is_not_read_when_untrusted(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    async with Agent(ScriptedModel([]), tools=[toolset]):
        decision = toolset.toolbox["get-env"].mode_decision
    assert (decision.mode, decision.reason) == (
        ToolMode.EXTERNAL,
        "raised to external by the minimum mode of untrusted MCP server 'mcp-servers/everything'",
    )


async def test_a_trusted_servers_annotations_are_honoured(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, trusted=True)
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert modes(toolset) == TRUSTED


async def test_a_tool_that_requires_tasks_is_hidden(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert "simulate-research-query" not in toolset.toolbox
    assert toolset.hidden == {"simulate-research-query": "requires task augmentation (taskSupport: required)"}


async def test_the_tools_filter_offers_only_the_named_tools(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, tools=["echo", "get-sum"])
    async with Agent(ScriptedModel([]), tools=[toolset]):
        assert toolset.toolbox.names == ["echo", "get-sum"]


async def test_an_echo_call_succeeds_with_the_servers_text(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    _, result = await run(toolset, [[call("echo", message="hi")], "done"])
    assert (result.type, result.data) == (ResultType.SUCCESS, "Echo: hi")


async def test_structured_content_becomes_the_data(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    _, result = await run(toolset, [[call("get-structured-content", location="Chicago")], "done"])
    assert result.type is ResultType.SUCCESS and isinstance(result.data, dict) and "temperature" in result.data


async def test_a_deny_destructive_policy_denies_without_contacting_the_server(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, minimum_mode=ToolMode.DESTRUCTIVE)
    policy = PermissionPolicy(deny=[ToolMode.DESTRUCTIVE])
    _, result = await run(toolset, [[call("echo", message="hi")], "done"], policy=policy)
    assert (result.type, toolset.sent) == (ResultType.DENIED, 0)


async def test_bad_arguments_are_invalid_parameters_without_a_server_call(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    _, result = await run(toolset, [[call("get-sum", a=1, b="two")], "done"])
    assert (result.type, result.error_code, toolset.sent) == (ResultType.ERROR, "invalid_parameters", 0)


async def test_an_unknown_tool_is_unknown_tool(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    _, result = await run(toolset, [[call("simulate-research-query", topic="x")], "done"])
    assert (result.type, result.error_code, toolset.sent) == (ResultType.ERROR, "unknown_tool", 0)


async def test_a_long_call_past_its_deadline_is_a_timeout(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything, timeout=0.3)
    _, result = await run(toolset, [[call("trigger-long-running-operation", duration=60, steps=1)], "done"])
    assert result.type is ResultType.TIMEOUT


def _server_pids() -> list[int]:
    """This process's children running server-everything."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat, open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                command = cmdline.read()
        except OSError:
            continue
        if parent == os.getpid() and b"server-everything" in command:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds the server's process in /proc")
async def test_the_server_killed_mid_call_is_an_error_and_nothing_is_re_sent(everything: dict[str, Any]) -> None:
    toolset = MCPToolset(**everything)
    started = anyio.Event()

    async def mark(ctx: InvocationContext, call_next: Next) -> None:
        started.set()
        await call_next(ctx)

    turns = [
        [call("trigger-long-running-operation", duration=60, steps=60)],
        [call("echo", "c2", message="hi")],
        "done",
    ]
    agent = Agent(ScriptedModel(turns), tools=[toolset], filters=[mark])
    async with agent:

        async def kill() -> None:
            await started.wait()
            for pid in _server_pids():
                os.kill(pid, signal.SIGKILL)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(kill)
            outcome = await agent.run("go")
    validate_transcript(outcome.transcript)
    first, second = result_of(outcome.transcript), result_of(outcome.transcript, "c2")
    assert first.type is ResultType.ERROR and first.error is not None and "not re-sent" in first.error
    # The next call restarted the server: the killed call was sent once, the echo once.
    assert (second.type, toolset.sent, toolset.connections) == (ResultType.SUCCESS, 2, 2)


async def test_a_tool_named_like_one_bound_before_it_is_refused(everything: dict[str, Any]) -> None:
    @tool
    def echo(message: str) -> str:
        """Echo locally."""
        return message

    agent = Agent(ScriptedModel(["done"]), tools=[Toolbox([echo]), MCPToolset(**everything)])
    async with agent:
        with pytest.raises(UsageError, match="give the server a `prefix`"):
            await agent.run("go")


def test_without_the_extra_the_error_names_it() -> None:
    code = "import sys; sys.modules['mcp'] = None; import toolwire.interop.mcp"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert "pip install 'toolwire[mcp]'" in done.stderr


def test_importing_toolwire_does_not_import_the_sdk() -> None:
    code = "import sys, toolwire; print('mcp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


async def test_a_timeout_tells_the_server_the_call_is_cancelled(tmp_path: Path) -> None:
    # `cancelled` answers once the server's `lookup` handler was cancelled by notifications/cancelled.
    env = {"TOOLWIRE_RAN_FILE": str(tmp_path / "ran"), "TOOLWIRE_HANG": "1"}
    toolset = MCPToolset(sys.executable, [str(LOOKUP_SERVER)], env=env, timeout=1.0)
    turns = [[call("lookup", key="k")], [call("cancelled", "c2")], "done"]
    agent = Agent(ScriptedModel(turns), tools=[toolset])
    async with agent:
        outcome = await agent.run("go")
    timed_out, answer = result_of(outcome.transcript), result_of(outcome.transcript, "c2")
    assert (timed_out.type, answer.type, answer.data) == (ResultType.TIMEOUT, ResultType.SUCCESS, "k")


async def test_an_is_error_result_is_an_execution_error_with_the_servers_text(tmp_path: Path) -> None:
    toolset = MCPToolset(sys.executable, [str(LOOKUP_SERVER)], env={"TOOLWIRE_RAN_FILE": str(tmp_path / "ran")})
    _, result = await run(toolset, [[call("fail", reason="disk on fire")], "done"])
    assert (result.type, result.error_code) == (ResultType.ERROR, "execution_error")
    assert result.error is not None and "disk on fire" in result.error


async def test_a_run_without_setup_says_to_enter_the_agent(everything: dict[str, Any]) -> None:
    agent = Agent(ScriptedModel(["done"]), tools=[MCPToolset(**everything)])
    with pytest.raises(UsageError, match="use `async with agent:`"):
        await agent.run("go")


async def test_a_dotted_name_is_offered_sanitized_and_called_by_its_mcp_name(tmp_path: Path) -> None:
    env = {"TOOLWIRE_RAN_FILE": str(tmp_path / "ran")}
    toolset = MCPToolset(sys.executable, [str(LOOKUP_SERVER)], env=env, prefix="lk_", tools=["echo.text"])
    _, result = await run(toolset, [[call("lk_echo_text", text="hi")], "done"])
    assert (result.type, result.data) == (ResultType.SUCCESS, "hi")


async def test_a_call_open_when_the_process_stopped_is_canceled_on_resume_not_re_sent(tmp_path: Path) -> None:
    ran = tmp_path / "ran"

    def model(request: Any) -> Any:
        done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
        return [call("lookup", key="k")] if not done else f"{done[0].result.type.name}: {done[0].result.data}"

    async with SqliteStore.in_directory(tmp_path / "data") as store:
        hanging = MCPToolset(
            sys.executable, [str(LOOKUP_SERVER)], env={"TOOLWIRE_RAN_FILE": str(ran), "TOOLWIRE_HANG": "1"}
        )
        agent = Agent(FunctionModel(model), store=store, tools=[hanging])
        async with agent:
            with anyio.CancelScope() as process:  # "the process stops": nothing more is written
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(lambda: agent.run("go", thread="t1"))
                    assert (await hanging.call("started", {})).data == "k"  # the server runs the call
                    process.cancel()
    async with SqliteStore.in_directory(tmp_path / "data") as store:
        answering = MCPToolset(sys.executable, [str(LOOKUP_SERVER)], env={"TOOLWIRE_RAN_FILE": str(ran)})
        agent = Agent(FunctionModel(model), store=store, tools=[answering])
        async with agent:
            result = await agent.resume("t1")
    assert result is not None and result.output.startswith("CANCELED") and "'by': 'system'" in result.output
    validate_transcript(result.transcript)
    assert (ran.read_text().split(), answering.sent) == (["k"], 0)
