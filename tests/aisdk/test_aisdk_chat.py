"""Whole conversations with the real AI SDK chat (`ai`'s AbstractChat, useChat's core) on `/ai-sdk/chat`.

The chat sends, builds its messages from the stream, runs its front-end tool (`onToolCall` →
`addToolOutput`) and sends on by itself (`sendAutomaticallyWhen`), as a page does. After each
conversation the transcript holds `validate_transcript`.
"""

from __future__ import annotations

import uuid

from aisdk_client import PICK_COLOR, Client

from serving import Server, transcript_of
from toolwire.testing import validate_transcript


def new_chat() -> str:
    return "chat-" + uuid.uuid4().hex


def test_text_answer(server: Server, client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="hi")
    assert (len(flow.requests), flow.errors) == (1, [])
    assert flow.messages[-1]["parts"] == [{"type": "step-start"}, {"type": "text", "text": "Hello!", "state": "done"}]
    validate_transcript(transcript_of(server.data_dir, chat))


def test_front_end_tool_output_is_sent_on_once_and_answered(server: Server, client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="pick", tools=[PICK_COLOR], outputs={"pick_color": "blue"})
    assert (len(flow.requests), flow.errors) == (2, [])
    assert [part["type"] for part in flow.messages[-1]["parts"]] == [
        "step-start",
        "tool-pick_color",
        "step-start",
        "text",
    ]
    assert flow.messages[-1]["parts"][-1]["text"] == 'Got {"pick_color": "blue"}'
    validate_transcript(transcript_of(server.data_dir, chat))


def test_tool_the_policy_denies_ends_denied(server: Server, client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="delete")
    assert (len(flow.requests), flow.tool_part("delete_file")["state"]) == (1, "output-denied")
    validate_transcript(transcript_of(server.data_dir, chat))


def test_failing_tool_ends_in_error(server: Server, client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="explode")
    assert flow.tool_part("explode")["state"] == "output-error"
    validate_transcript(transcript_of(server.data_dir, chat))
