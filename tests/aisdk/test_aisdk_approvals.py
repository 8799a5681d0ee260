"""Consent questions over `/ai-sdk/chat`, with the real chat: the AI SDK's tool approval.

`run_command` is a `local` tool: the default policy asks before it runs. The first response ends
with the call's `tool-approval-request` (the part is `approval-requested`); `addToolApprovalResponse`
makes it `approval-responded` and the chat sends the messages on
(`lastAssistantMessageIsCompleteWithApprovalResponses`); that response streams the call's outcome
and the answer. After each conversation the transcript holds `validate_transcript`.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from aisdk_client import Client, Flow

from serving import Server, transcript_of
from toolwire.envelopes import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def new_chat() -> str:
    return "chat-" + uuid.uuid4().hex


def results(server: Server, chat: str) -> list[ToolResultMessage]:
    transcript = transcript_of(server.data_dir, chat)
    validate_transcript(transcript)
    return [message for message in transcript if isinstance(message, ToolResultMessage)]


def answered(client: Client, approved: bool, reason: str | None = None) -> tuple[str, Flow]:
    chat = new_chat()
    answer: dict[str, Any] = {"approved": approved} if reason is None else {"approved": approved, "reason": reason}
    return chat, client.flow(chat, "chat", prompt="run", approvals=[answer])


def test_a_call_the_policy_asks_about_ends_the_response_with_an_approval_request(client: Client) -> None:
    flow = client.flow(new_chat(), "chat", prompt="run")
    assert flow.types(0) == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-approval-request",
        "finish-step",
        "finish",
    ]
    assert flow.requests[0]["chunks"][-1]["finishReason"] == "tool-calls"


def test_the_part_waits_for_approval_with_the_policys_reason(client: Client) -> None:
    flow = client.flow(new_chat(), "chat", prompt="run")
    part = flow.tool_part("run_command")
    assert (part["state"], part["input"]) == ("approval-requested", {"command": "ls"})
    assert part["approval"]["id"] == "approval-" + part["toolCallId"]
    assert part["approval"]["requestReason"]
    assert part["toolMetadata"] == {"toolwire": {"execution": "server", "mode": "local"}}


def test_approved_runs_the_call_and_streams_its_output_and_the_answer(server: Server, client: Client) -> None:
    chat, flow = answered(client, True)
    assert flow.types(1) == [
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    part = flow.tool_part("run_command")
    assert (part["state"], part["output"], part["approval"]["approved"]) == ("output-available", "ran ls", True)
    assert flow.messages[-1]["parts"][-1]["text"] == 'Got {"run_command": "ran ls"}'
    assert [message.result.data for message in results(server, chat)] == ["ran ls"]


def test_the_approval_is_sent_as_the_part_approval_responded(client: Client) -> None:
    _, flow = answered(client, True)
    body = flow.requests[1]["body"]
    [part] = [part for part in body["messages"][-1]["parts"] if part["type"] == "tool-run_command"]
    assert (body["trigger"], part["state"], part["approval"]["approved"]) == (
        "submit-message",
        "approval-responded",
        True,
    )


def test_refused_is_denied_and_the_model_sees_the_reason(server: Server, client: Client) -> None:
    chat, flow = answered(client, False, "not on my machine")
    assert flow.types(1)[:3] == ["start", "tool-output-denied", "start-step"]
    part = flow.tool_part("run_command")
    assert (part["state"], part["approval"]["reason"]) == ("output-denied", "not on my machine")
    assert "not on my machine" in flow.messages[-1]["parts"][-1]["text"]
    [result] = results(server, chat)
    assert result.result.type is ResultType.DENIED and "not on my machine" in str(result.result.payload())


def test_the_answering_request_completes_the_chat(client: Client) -> None:
    _, flow = answered(client, True)
    assert (len(flow.requests), flow.errors) == (2, [])
    assert [message["role"] for message in flow.messages] == ["user", "assistant"]


def test_repeated_approval_runs_nothing_again(server: Server, client: Client) -> None:
    chat, flow = answered(client, True)
    again = client.send(chat, flow.requests[1]["body"]["messages"])
    assert again.types == ["start", "finish"]
    assert [message.result.data for message in results(server, chat)] == ["ran ls"]


def test_approval_for_a_call_the_thread_never_made_is_refused(server: Server, client: Client) -> None:
    chat, flow = answered(client, True)
    messages = copy.deepcopy(flow.requests[1]["body"]["messages"])
    for part in messages[-1]["parts"]:
        if part["type"] == "tool-run_command":
            part["toolCallId"] = "call_nope"
    reply = client.send(chat, messages)
    assert (reply.status, reply.code) == (400, "unknown_interrupt")
    validate_transcript(transcript_of(server.data_dir, chat))


def test_new_message_while_a_question_waits_is_refused(client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="run")
    reply = client.send(chat, [*flow.messages, {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "hi"}]}])
    assert (reply.status, reply.code) == (409, "approvals_waiting")


def test_approval_that_is_not_a_boolean_is_refused(client: Client) -> None:
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="run")
    messages = copy.deepcopy(flow.messages)
    part = next(part for part in messages[-1]["parts"] if part["type"] == "tool-run_command")
    part.update(state="approval-responded", approval={"id": part["approval"]["id"], "approved": "yes"})
    reply = client.send(chat, messages)
    assert (reply.status, reply.code) == (400, "invalid_approval")


def test_two_calls_asked_about_are_answered_in_turn(server: Server, client: Client) -> None:
    """`local` calls run one at a time: the second is asked about once the first has its result."""
    chat = new_chat()
    flow = client.flow(chat, "chat", prompt="run twice", approvals=[{"approved": True}, {"approved": False}])
    assert (len(flow.requests), flow.errors) == (3, [])
    assert flow.types(1) == [
        "start",
        "tool-output-available",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-approval-request",
        "finish",
    ]
    states = [part["state"] for part in flow.messages[-1]["parts"] if part["type"] == "tool-run_command"]
    assert states == ["output-available", "output-denied"]
    assert flow.messages[-1]["parts"][-1]["text"].startswith('Got ["ran ls", {"denied"')
    assert [message.result.type for message in results(server, chat)] == [ResultType.SUCCESS, ResultType.DENIED]
