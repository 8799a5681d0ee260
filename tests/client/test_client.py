"""The Python client against a real `toolwire serve` subprocess on loopback."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from client_support import IDE_GROUP, TOKEN, Server, plan

from toolwire.client import (
    AnswerText,
    ClientToolCall,
    ConnectionClosed,
    ConsentPrompt,
    RegistrationError,
    RemoteRunFinished,
    RunFailed,
    ServerToolCall,
    ServerToolResult,
    connect,
)
from toolwire.protocol import ConsentRequestBody

IDE = {"groups": [IDE_GROUP], "expanded_containers": ["IDE"]}


async def open_file(path: str) -> str:
    return f"opened {path}"


async def test_connect_register_and_ask_runs_the_client_tool(server: Server) -> None:
    async with connect(server.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        assert client.conversation_id.startswith("conv_")
        assert await client.ask("Open the config file") == "Done: opened config.toml"


async def test_the_decorator_registers_a_sync_handler(server: Server) -> None:
    async with connect(server.url, token=TOKEN, **IDE) as client:

        @client.tool("OpenFile")
        def open_in_editor(path: str) -> dict[str, Any]:
            return {"opened": path, "line": 3}

        answer = await client.ask(plan(("OpenFile", {"path": "a.py"})))
    assert answer == "Done: {'opened': 'a.py', 'line': 3}"


async def test_send_streams_text_and_tool_activity_and_ends_at_run_finished(server: Server) -> None:
    async with connect(server.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        events = [event async for event in client.send("Open the config file")]
    text = "".join(event.text for event in events if isinstance(event, AnswerText))
    [executed] = [event for event in events if isinstance(event, ClientToolCall)]
    assert text == "Done: opened config.toml"
    assert (executed.tool_name, executed.request.arguments, executed.result.success) == (
        "OpenFile",
        {"path": "config.toml"},
        True,
    )
    assert isinstance(events[-1], RemoteRunFinished) and events[-1].output == "Done: opened config.toml"


async def test_mirrored_server_calls_are_reported_and_never_executed(server: Server) -> None:
    ran: list[str] = []

    async def get_weather(city: str) -> str:  # a handler by the server tool's name must not run
        ran.append(city)
        return "client weather"

    handlers = {"OpenFile": open_file, "get_weather": get_weather}
    async with connect(server.url, token=TOKEN, groups=[IDE_GROUP], handlers=handlers) as client:
        events = [event async for event in client.send("Open the config file")]
        answered = [entry.request.tool_name for entry in client.ledger]
    [call] = [event for event in events if isinstance(event, ServerToolCall)]
    [result] = [event for event in events if isinstance(event, ServerToolResult)]
    assert (call.tool_name, call.arguments) == ("get_weather", {"city": "Paris"})
    assert (result.id, result.tool_name, result.result.data) == (
        call.id,
        "get_weather",
        {"city": "Paris", "celsius": 21},
    )
    assert ran == []
    assert answered == ["OpenFile"]


async def explode(**arguments: Any) -> str:
    raise RuntimeError("the disk is on fire")


async def slow(**arguments: Any) -> str:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    ("call", "code", "message"),
    [
        (("Missing", {}), "unknown_tool", "This client has no tool 'Missing'."),
        (("OpenFile", {"path": 42}), "invalid_parameters", "Invalid arguments for tool 'OpenFile': at '/path': "),
        (("Explode", {}), "execution_error", "the disk is on fire"),
        (("Slow", {}), "timeout", "Tool execution exceeded timeout of 200ms"),
    ],
    ids=["unknown_tool", "invalid_parameters", "execution_error", "timeout"],
)
async def test_each_failure_is_answered_with_its_code(
    server: Server, call: tuple[str, dict[str, Any]], code: str, message: str
) -> None:
    async with connect(server.url, token=TOKEN, handlers={"OpenFile": open_file, "Explode": explode}, **IDE) as client:
        client.tool("Slow", timeout=0.2)(slow)
        events = [event async for event in client.send(plan(call))]
    [answered] = [event for event in events if isinstance(event, ClientToolCall)]
    assert answered.result.id == answered.request.id
    assert (answered.result.success, answered.result.error_code) == (False, code)
    assert (answered.result.error_message or "").startswith(message)
    assert isinstance(events[-1], RemoteRunFinished)
    assert (events[-1].output or "").startswith("Failed (")


async def test_a_refused_registration_raises_naming_the_group_and_tool(server: Server) -> None:
    shadowing = {"name": "Weather", "tools": [{"name": "get_weather"}]}
    with pytest.raises(RegistrationError) as refused:
        async with connect(server.url, token=TOKEN, groups=[shadowing]):
            pass
    assert (refused.value.group, refused.value.tool) == ("Weather", "get_weather")
    assert "client tool registration refused (group 'Weather', tool 'get_weather'): " in str(refused.value)


async def save_file() -> str:
    return "saved"


async def test_consent_allowed_runs_the_tool(server: Server) -> None:
    asked: list[ConsentRequestBody] = []

    def allow(request: ConsentRequestBody) -> bool:
        asked.append(request)
        return True

    async with connect(server.url, token=TOKEN, handlers={"SaveFile": save_file}, on_consent=allow, **IDE) as client:
        events = [event async for event in client.send(plan(("SaveFile", {})))]
    [prompt] = [event for event in events if isinstance(event, ConsentPrompt)]
    assert [request.tool_name for request in asked] == ["SaveFile"]
    assert (prompt.answer.id, prompt.answer.allow) == (prompt.request.id, True)
    assert isinstance(events[-1], RemoteRunFinished) and events[-1].output == "Done: saved"


async def test_consent_denied_does_not_run_the_tool(server: Server) -> None:
    ran: list[bool] = []

    async def save() -> str:
        ran.append(True)
        return "saved"

    async def deny(request: ConsentRequestBody) -> tuple[bool, str]:
        return False, "once"

    async with connect(server.url, token=TOKEN, handlers={"SaveFile": save}, on_consent=deny, **IDE) as client:
        answer = await client.ask(plan(("SaveFile", {})))
    assert ran == []
    assert answer.startswith("Failed (DENIED ") and "the user said no" in answer


async def test_without_a_consent_handler_calls_are_denied(server: Server) -> None:
    async with connect(server.url, token=TOKEN, handlers={"SaveFile": save_file}, **IDE) as client:
        answer = await client.ask(plan(("SaveFile", {})))
    assert answer.startswith("Failed (DENIED ") and "no consent handler in this client" in answer


async def test_a_failed_run_raises_run_failed(server: Server) -> None:
    async with connect(server.url, token=TOKEN) as client:
        with pytest.raises(RunFailed, match="the model is down"):
            await client.ask("fail")
        assert await client.ask(plan()) == "Done: None"  # the conversation goes on


async def test_a_conversation_is_resumed_by_id_with_its_client_tools(server: Server) -> None:
    async with connect(server.url, token=TOKEN, **IDE) as first:
        first.tool("OpenFile")(open_file)
        assert await first.ask(plan(("OpenFile", {"path": "a.py"}))) == "Done: opened a.py"
    # A new client resumes it: the server kept the registered groups, nothing is registered again.
    async with connect(server.url, token=TOKEN, conversation=first.conversation_id) as again:
        assert again.conversation_id == first.conversation_id
        again.tool("OpenFile")(open_file)
        assert await again.ask(plan(("OpenFile", {"path": "b.py"}))) == "Done: opened b.py"


async def test_an_unknown_conversation_is_refused_with_201(server: Server) -> None:
    with pytest.raises(ConnectionClosed) as refused:
        async with connect(server.url, token=TOKEN, conversation="conv_" + "0" * 32):
            pass
    assert refused.value.code == 201


async def test_a_wrong_token_is_refused_and_never_logged(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConnectionClosed, match="HTTP 403"):
        async with connect(server.url, token="wrong-token-0123456789"):
            pass
    async with connect(server.url, token=TOKEN, groups=[IDE_GROUP], handlers={"OpenFile": open_file}) as client:
        await client.ask("Open the config file")
    assert caplog.records
    assert "wrong-token" not in caplog.text and TOKEN not in caplog.text
