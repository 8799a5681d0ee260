"""`/conversations` over HTTP against a real `toolwire serve` subprocess: list, show, delete, per principal."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from server_support import IDE_GROUP, OTHER_TOKEN, TOKEN, Peer, Server, peer, serve
from websockets.exceptions import ConnectionClosed

from toolwire.protocol import (
    ErrorCode,
    ErrorMessage,
    MessageBody,
    MessageType,
    RegisterTools,
    ToolUseCancel,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
    decode,
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob {OTHER_TOKEN}\n")
    with serve(tmp_path, "--tokens", str(tokens), "--allow-origin", ALLOWED) as running:
        yield running


ALLOWED = "https://app.example"


def base_url(server: Server) -> str:
    return server.url.replace("ws://", "http://").removesuffix("/ws")


@pytest.fixture
async def alice(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url(server), headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        yield http


@pytest.fixture
async def bob(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base_url(server), headers={"Authorization": f"Bearer {OTHER_TOKEN}"}) as http:
        yield http


async def until_client_request(client: Peer, prompt: str = "Open the config file") -> ToolUseRequest:
    """Register the IDE group and chat until the server asks the client to run OpenFile."""
    await client.send(RegisterTools(groups=(IDE_GROUP,)))
    await client.until(MessageType.REGISTER_TOOLS_RESULT)
    await client.send(UserMessageBody(id="u1", content=prompt))
    envelope = await client.until(MessageType.TOOL_USE_REQUEST, execution="client")
    assert isinstance(envelope.message, ToolUseRequest)
    return envelope.message


async def answered_conversation(server: Server) -> str:
    """A conversation of alice's whose run answered."""
    async with peer(server.url) as client:
        request = await until_client_request(client, "Open   the\nconfig file, please")
        await client.send(ToolUseResult(id=request.id, success=True, result={"value": "opened"}))
        await client.until(MessageType.RUN_STATUS, status="finished")
        conversation = client.connection.conversation_id
    assert conversation is not None
    return conversation


async def until_closed(client: Peer) -> tuple[list[MessageBody], int | None]:
    """Read what the server sends until it closes the socket; return it and the close code."""
    seen: list[MessageBody] = []
    with anyio.fail_after(30):
        try:
            while True:
                data = await client.socket.recv()
                assert isinstance(data, bytes)
                seen.append(decode(data).message)
        except ConnectionClosed:
            pass
    return seen, client.socket.close_code


def rows_of(data_dir: Path, thread_id: str) -> dict[str, int]:
    """How many rows each table of the server's SQLite file keeps of a thread."""
    tables = ("messages", "ledger", "client_state", "wire_state", "wire_outbox", "grants", "approvals", "denials")
    with closing(sqlite3.connect(data_dir / "toolwire.sqlite3")) as db:
        counts = {
            t: db.execute(f"SELECT count(*) FROM {t} WHERE thread_id = ?", (thread_id,)).fetchone()[0] for t in tables
        }
        counts["threads"] = db.execute("SELECT count(*) FROM threads WHERE id = ?", (thread_id,)).fetchone()[0]
    return counts


async def test_without_a_valid_token_every_endpoint_is_401(server: Server) -> None:
    async with httpx.AsyncClient(base_url=base_url(server)) as http:
        for method, path in (("GET", "/conversations"), ("GET", "/conversations/x"), ("DELETE", "/conversations/x")):
            for headers in ({}, {"Authorization": "Bearer not-a-token-0123456789"}):
                response = await http.request(method, path, headers=headers)
                assert response.status_code == 401
                assert response.json() == {
                    "error": "send a valid token: Authorization: Bearer <token>",
                    "code": "unauthorized",
                }
                assert response.headers["www-authenticate"] == "Bearer"


async def test_a_principal_lists_and_reads_its_own_conversations(
    server: Server, alice: httpx.AsyncClient, bob: httpx.AsyncClient
) -> None:
    conversation = await answered_conversation(server)
    listed = (await alice.get("/conversations")).json()["conversations"]
    assert [item["id"] for item in listed] == [conversation]
    [item] = listed
    assert item["title"] == "Open the config file, please"
    assert (item["run"], item["openCalls"], item["messageCount"]) == ("answered", 0, 8)
    assert item["createdAt"] <= item["updatedAt"] and item["updatedAt"].endswith("Z")
    shown = (await alice.get(f"/conversations/{conversation}")).json()
    assert {key: shown[key] for key in item} == item
    assert shown["pending"] == []
    messages: list[dict[str, Any]] = shown["messages"]
    assert messages[0] == {"role": "user", "content": "Open   the\nconfig file, please"}
    assert [m["role"] for m in messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    calls = [m["toolCalls"][0] for m in messages if m["role"] == "assistant" and "toolCalls" in m]
    assert [(c["id"], c["name"]) for c in calls] == [
        ("c_expand", "IDE"),
        ("c_weather", "get_weather"),
        ("c_open", "OpenFile"),
    ]
    results = [(m["toolName"], m["result"]["callId"], m["result"]["success"]) for m in messages if m["role"] == "tool"]
    assert results == [("IDE", "c_expand", True), ("get_weather", "c_weather", True), ("OpenFile", "c_open", True)]
    assert messages[-1]["text"].startswith("Done: ")
    # Bob sees none of it: not in his list, and the conversation "does not exist" for him.
    assert (await bob.get("/conversations")).json() == {"conversations": [], "more": False}
    for method in ("GET", "DELETE"):
        refused = await bob.request(method, f"/conversations/{conversation}")
        assert refused.status_code == 404
        assert refused.json() == {"error": f"no conversation {conversation!r}", "code": "not_found"}
    assert (await alice.get(f"/conversations/{conversation}")).status_code == 200  # still there
    unknown = await alice.get("/conversations/conv_nope")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


async def test_the_list_shows_a_running_conversation_and_its_open_call(
    server: Server, alice: httpx.AsyncClient
) -> None:
    async with peer(server.url) as client:
        await until_client_request(client)
        conversation = client.connection.conversation_id
        [item] = (await alice.get("/conversations")).json()["conversations"]
        assert (item["id"], item["run"], item["openCalls"]) == (conversation, "running", 1)
        shown = (await alice.get(f"/conversations/{conversation}")).json()
        assert shown["pending"] == [
            {"callId": "c_open", "toolName": "OpenFile", "state": "dispatched", "execution": "client"}
        ]


async def test_deleting_an_idle_conversation_removes_every_row_of_it(server: Server, alice: httpx.AsyncClient) -> None:
    conversation = await answered_conversation(server)
    kept = await answered_conversation(server)
    assert rows_of(server.data_dir, conversation)["wire_state"] == 1
    deleted = await alice.delete(f"/conversations/{conversation}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": conversation, "deleted": True})
    assert set(rows_of(server.data_dir, conversation).values()) == {0}
    assert [item["id"] for item in (await alice.get("/conversations")).json()["conversations"]] == [kept]
    assert (await alice.get(f"/conversations/{conversation}")).status_code == 404
    assert (await alice.delete(f"/conversations/{conversation}")).status_code == 404
    assert rows_of(server.data_dir, kept)["messages"] == 8


async def test_a_run_in_progress_is_refused_unless_forced_which_cancels_it_first(
    server: Server, alice: httpx.AsyncClient
) -> None:
    async with peer(server.url) as client:
        request = await until_client_request(client)
        conversation = client.connection.conversation_id
        assert conversation is not None
        refused = await alice.delete(f"/conversations/{conversation}")
        assert (refused.status_code, refused.json()["code"]) == (409, "run_active")
        assert "?force=true" in refused.json()["error"]
        assert (await alice.get(f"/conversations/{conversation}")).json()["run"] == "running"
        forced = await alice.delete(f"/conversations/{conversation}", params={"force": "true"})
        assert (forced.status_code, forced.json()) == (200, {"id": conversation, "deleted": True})
        seen, close_code = await until_closed(client)
    # The client was told: its call withdrawn (canceled by the server), then the conversation is gone.
    [withdrawn] = [message for message in seen if isinstance(message, ToolUseCancel)]
    assert (withdrawn.id, withdrawn.code) == (request.id, "canceled")
    assert "deleted" in (withdrawn.reason or "")
    [gone] = [message for message in seen if isinstance(message, ErrorMessage)]
    assert (gone.code, gone.recoverable, close_code) == (ErrorCode.CONVERSATION_NOT_FOUND, False, 1008)
    assert set(rows_of(server.data_dir, conversation).values()) == {0}
    # Coming back to it finds nothing, and nothing dangles in the server: a new conversation works.
    assert (await alice.get("/conversations")).json() == {"conversations": [], "more": False}
    await answered_conversation(server)


async def test_a_list_is_limited_and_says_when_there_are_more(server: Server, alice: httpx.AsyncClient) -> None:
    first = await answered_conversation(server)
    latest = await answered_conversation(server)
    one = (await alice.get("/conversations", params={"limit": "1"})).json()
    assert ([item["id"] for item in one["conversations"]], one["more"]) == ([latest], True)
    both = (await alice.get("/conversations", params={"limit": "2"})).json()
    assert ([item["id"] for item in both["conversations"]], both["more"]) == ([latest, first], False)
    for wrong in ("0", "1001", "-1", "many"):
        refused = await alice.get("/conversations", params={"limit": wrong})
        assert (refused.status_code, refused.json()["code"]) == (400, "bad_request")


async def test_browsers_of_other_origins_are_refused_and_allowed_ones_get_cors(
    server: Server, alice: httpx.AsyncClient
) -> None:
    refused = await alice.get("/conversations", headers={"Origin": "https://evil.example"})
    assert (refused.status_code, refused.json()["code"]) == (403, "origin_refused")
    assert "access-control-allow-origin" not in refused.headers
    preflight = await alice.options(
        "/conversations/conv_x", headers={"Origin": ALLOWED, "Access-Control-Request-Method": "DELETE"}
    )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == ALLOWED
    assert "DELETE" in preflight.headers["access-control-allow-methods"]
    assert preflight.headers["access-control-allow-headers"] == "Authorization"
    listed = await alice.get("/conversations", headers={"Origin": ALLOWED})
    assert (listed.status_code, listed.headers["access-control-allow-origin"]) == (200, ALLOWED)
    assert listed.headers["cache-control"] == "no-store"
