"""Resumable streams over `/ai-sdk/chat`: the chat's `resumeStream` (the transport's GET on the chat).

The model calls `wait_gate`, a server tool that holds the run until the test's FIFO is opened. The
chat drops the response after its first part (`stop`), then resumes: the GET replays the message
from its start and follows the run live; the chat opens the gate once the replay reached the
call, so the rest of the response comes live, on the GET.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from aisdk_client import Client

from serving import BOB, Server, transcript_of
from toolwire.testing import validate_transcript

WHOLE_RESPONSE = [
    "start",
    "start-step",
    "tool-input-start",
    "tool-input-delta",
    "tool-input-available",
    "tool-output-available",
    "finish-step",
    "start-step",
    "text-start",
    "text-delta",
    "text-end",
    "finish-step",
    "finish",
]


def new_chat() -> str:
    return "chat-" + uuid.uuid4().hex


def gate(tmp_path: Path) -> Path:
    path = tmp_path / "gate"
    os.mkfifo(path)
    return path


def test_a_dropped_response_is_replayed_whole_and_followed_live(server: Server, client: Client, tmp_path: Path) -> None:
    chat, fifo = new_chat(), gate(tmp_path)
    flow = client.flow(chat, "reconnect", prompt=f"slow {fifo}", gate=str(fifo))
    post, get = flow.requests
    assert (post["method"], post["chunks"][0]["type"]) == ("POST", "start")
    assert (get["method"], get["status"]) == ("GET", 200)
    assert flow.types(1) == WHOLE_RESPONSE
    assert get["chunks"][0]["messageId"] == post["chunks"][0]["messageId"]
    validate_transcript(transcript_of(server.data_dir, chat))


def test_the_resumed_chat_has_the_whole_message(client: Client, tmp_path: Path) -> None:
    fifo = gate(tmp_path)
    flow = client.flow(new_chat(), "reconnect", prompt=f"slow {fifo}", gate=str(fifo))
    assert [message["role"] for message in flow.messages] == ["user", "assistant"]
    assert [part["type"] for part in flow.messages[-1]["parts"]] == [
        "step-start",
        "tool-wait_gate",
        "step-start",
        "text",
    ]
    assert flow.tool_part("wait_gate")["output"] == "opened"
    assert flow.errors == []


def test_an_ended_message_is_replayed_until_the_next_one(client: Client) -> None:
    chat = new_chat()
    client.send(chat, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "weather"}]}])
    flow = client.flow(chat, "get")
    assert flow.types(0) == WHOLE_RESPONSE


def test_a_continued_message_is_replayed_from_its_first_response(client: Client) -> None:
    chat = new_chat()
    client.flow(chat, "chat", prompt="run", approvals=[{"approved": True}])
    flow = client.flow(chat, "get")
    assert flow.types(0) == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "tool-approval-response",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]


def test_nothing_to_replay_is_204(client: Client) -> None:
    flow = client.flow(new_chat(), "get")
    assert (flow.requests[0]["status"], flow.errors) == (204, [])


def test_another_principals_chat_is_refused(client: Client) -> None:
    chat = new_chat()
    client.send(chat, [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    flow = client.flow(chat, "get", token=BOB)
    assert flow.requests[0]["status"] == 403


def test_a_wrong_token_is_refused(client: Client) -> None:
    flow = client.flow(new_chat(), "get", token="not-a-token-0123456789")
    assert flow.requests[0]["status"] == 401
