"""End to end over a real loopback WebSocket with a real `toolwire serve` subprocess."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from server_support import IDE_GROUP, OTHER_TOKEN, TOKEN, Server, peer, serve, stored_transcript
from websockets.exceptions import InvalidStatus
from websockets.typing import Origin

from serving import serve_app
from toolwire.envelopes import ResultType
from toolwire.protocol import (
    ControlStop,
    MessageType,
    RegisterTools,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from toolwire.testing import validate_transcript


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with serve(tmp_path, "--allow-origin", "http://127.0.0.1:9999") as running:
        yield running


async def chat_until_client_request(client: object) -> ToolUseRequest:
    from server_support import Peer

    assert isinstance(client, Peer)
    await client.send(RegisterTools(groups=(IDE_GROUP,)))
    registered = await client.until(MessageType.REGISTER_TOOLS_RESULT)
    assert registered.message.ok  # type: ignore[union-attr]
    await client.send(UserMessageBody(id="u1", content="Open the config file"))
    envelope = await client.until(MessageType.TOOL_USE_REQUEST, execution="client")
    assert isinstance(envelope.message, ToolUseRequest)
    return envelope.message


async def test_a_client_registers_chats_and_executes_its_tool(server: Server) -> None:
    async with peer(server.url) as client:
        request = await chat_until_client_request(client)
        expected = ("OpenFile", {"path": "config.toml"}, "c_open")
        assert (request.tool_name, request.arguments, request.call_id) == expected
        await client.send(ToolUseResult(id=request.id, success=True, result={"value": "opened config.toml"}))
        finished = await client.until(MessageType.RUN_STATUS, status="finished")
    assert isinstance(finished.message, RunStatus)
    assert finished.message.output == "Done: opened config.toml"


async def test_server_tool_calls_are_mirrored_and_not_for_the_client_to_run(server: Server) -> None:
    async with peer(server.url) as client:
        await chat_until_client_request(client)
    requests = [e.message for e in client.seen if isinstance(e.message, ToolUseRequest)]
    mirrored = [request for request in requests if request.execution == "server"]
    results = [e.message for e in client.seen if isinstance(e.message, ToolUseResult)]
    assert [request.tool_name for request in mirrored] == ["get_weather"]
    assert [(result.id, result.result) for result in results] == [("c_weather", {"city": "Paris", "celsius": 21})]


# The model calls the client's OpenFile without its required `path`: the server refuses the call
# itself (invalid_parameters), so no request reaches the client to run.
INVALID_CALL_APP = """
from toolwire import Agent, ToolCall
from toolwire.messages import ToolResultMessage
from toolwire.testing import FunctionModel

PLAN = [ToolCall(id="c_expand", name="IDE", arguments={}), ToolCall(id="c_bad", name="OpenFile", arguments={})]

def script(request):
    done = [m for m in request.messages if isinstance(m, ToolResultMessage)]
    return [PLAN[len(done)]] if len(done) < len(PLAN) else "gave up"

def make_agent(store):
    return Agent(FunctionModel(script), store=store)
"""


async def test_a_client_call_the_server_refuses_is_shown_to_the_client_and_not_run(tmp_path: Path) -> None:
    with serve_app(tmp_path, INVALID_CALL_APP, "invalidapp", token=TOKEN) as running:
        async with peer(running.url) as client:
            await client.send(RegisterTools(groups=(IDE_GROUP,)))
            await client.until(MessageType.REGISTER_TOOLS_RESULT)
            await client.send(UserMessageBody(id="u1", content="Open a file"))
            await client.until(MessageType.RUN_STATUS, status="finished")
    requests = [e.message for e in client.seen if isinstance(e.message, ToolUseRequest)]
    results = [e.message for e in client.seen if isinstance(e.message, ToolUseResult)]
    assert [(request.tool_name, request.execution) for request in requests] == [("OpenFile", "server")]
    assert [(result.id, result.success, result.error_code) for result in results] == [
        ("c_bad", False, "invalid_parameters")
    ]


async def test_health_and_readiness(server: Server) -> None:
    base = server.url.replace("ws://", "http://").removesuffix("/ws")
    async with httpx.AsyncClient() as http:
        health = await http.get(f"{base}/healthz")
        ready = await http.get(f"{base}/readyz")
    assert (health.status_code, ready.status_code) == (200, 200)


# -- refusals -------------------------------------------------------------------------------------


async def test_a_connection_without_a_token_is_refused_before_the_upgrade(server: Server) -> None:
    with pytest.raises(InvalidStatus, match="403"):
        async with peer(server.url, token=""):
            pass


async def test_a_wrong_token_is_refused(server: Server) -> None:
    with pytest.raises(InvalidStatus, match="403"):
        async with peer(server.url, token=OTHER_TOKEN):
            pass


async def test_a_disallowed_browser_origin_is_refused(server: Server) -> None:
    with pytest.raises(InvalidStatus, match="403"):
        async with peer(server.url, origin=Origin("http://evil.example")):
            pass


async def test_an_allowed_browser_origin_with_a_query_token_connects(server: Server) -> None:
    allowed = Origin("http://127.0.0.1:9999")
    async with peer(f"{server.url}?token={TOKEN}", token="", origin=allowed) as client:
        assert client.connection.conversation_id


async def test_a_get_on_the_socket_path_tells_why_an_upgrade_would_fail(server: Server) -> None:
    # What a browser, which sees only "1006" when an upgrade is refused, asks before it retries.
    url = server.url.replace("ws://", "http://")

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    async with httpx.AsyncClient() as http:
        accepted = await http.get(url, headers=bearer(TOKEN))
        wrong = await http.get(url, headers=bearer(OTHER_TOKEN))
        missing = await http.get(url)
        foreign = await http.get(url, headers={**bearer(TOKEN), "Origin": "http://evil.example"})
        preflight = await http.options(url, headers={"Origin": "http://127.0.0.1:9999"})
        allowed = await http.get(url, headers={**bearer(TOKEN), "Origin": "http://127.0.0.1:9999"})
    assert [r.status_code for r in (accepted, wrong, missing, foreign)] == [204, 401, 401, 403]
    assert wrong.headers["www-authenticate"] == "Bearer"
    assert "access-control-allow-origin" not in foreign.headers  # a refused origin cannot read the answer
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-headers"] == "Authorization"
    assert allowed.status_code == 204 and allowed.headers["access-control-allow-origin"] == "http://127.0.0.1:9999"


async def test_a_result_for_an_unknown_request_is_refused_with_302(server: Server) -> None:
    async with peer(server.url) as client:
        await client.send(ToolUseResult(id="req_" + "0" * 32, success=True, result={"value": 1}))
        refused = await client.until(MessageType.ERROR)
    assert refused.message.code == 302  # type: ignore[union-attr]


async def test_control_stop_cancels_the_run_and_leaves_a_valid_transcript(server: Server) -> None:
    async with peer(server.url) as client:
        await chat_until_client_request(client)
        await client.send(ControlStop())
        finished = (await client.until(MessageType.RUN_STATUS, status="finished")).message
    assert isinstance(finished, RunStatus) and finished.reason == "canceled"
    transcript = stored_transcript(server.data_dir, client.connection.conversation_id or "")
    validate_transcript(transcript)
    assert transcript[-1].result.type is ResultType.CANCELED  # type: ignore[union-attr]


def test_tokens_never_reach_the_log(tmp_path: Path) -> None:
    async def connect_with_query_token(url: str) -> None:
        allowed = Origin("http://127.0.0.1:9999")
        async with peer(f"{url}?token={TOKEN}", token="", origin=allowed):
            pass

    with serve(tmp_path, "--allow-origin", "http://127.0.0.1:9999") as running:
        anyio.run(connect_with_query_token, running.url)
        _, output = running.stop(signal.SIGINT)  # (its output is read as it prints: `Server.printed`)
    assert "token=[redacted]" in output
    assert TOKEN not in output


async def test_a_run_names_the_user_message_it_answers(server: Server) -> None:
    async with peer(server.url) as client:
        request = await chat_until_client_request(client)
        await client.send(ToolUseResult(id=request.id, success=True, result={"value": "opened"}))
        await client.until(MessageType.RUN_STATUS, status="finished")
    statuses = [e.message for e in client.seen if isinstance(e.message, RunStatus)]
    assert [(status.status, status.message_id) for status in statuses] == [("started", "u1"), ("finished", "u1")]


async def test_what_a_client_acknowledged_is_not_replayed_to_the_next_connection(server: Server) -> None:
    async with peer(server.url) as first:
        request = await chat_until_client_request(first)
        await first.send(ToolUseResult(id=request.id, success=True, result={"value": "opened"}))
        await first.until(MessageType.RUN_STATUS, status="finished")
    async with peer(server.url, conversation=first.connection.conversation_id) as fresh:
        await fresh.send(RegisterTools(groups=(IDE_GROUP,)))
        next_message = (await fresh.receive()).message
    assert next_message.type == MessageType.REGISTER_TOOLS_RESULT


async def test_the_servers_own_page_may_connect_without_being_listed(server: Server) -> None:
    own = Origin(server.url.replace("ws://", "http://").removesuffix("/ws"))
    async with peer(f"{server.url}?token={TOKEN}", token="", origin=own) as client:
        assert client.connection.conversation_id
