"""`POST /ai-sdk/chat` of a live `toolwire serve --ai-sdk`, driven by the real AI SDK client pieces.

`ai`'s DefaultChatTransport checks every part against the SDK's chunk schema, and
readUIMessageStream builds the assistant message as useChat does (failing on a part out of
order), so a reply that passes also checks the shapes. After each conversation the stored
transcript holds the rules `validate_transcript` checks.
"""

from __future__ import annotations

import uuid

from aisdk_client import PICK_COLOR, Client, user, with_tool_output

from serving import BOB, Server, transcript_of
from toolwire import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def new_chat() -> str:
    return "chat-" + uuid.uuid4().hex


def test_text_answer_streams_as_one_text_part(server: Server, client: Client) -> None:
    chat = new_chat()
    reply = client.send(chat, [user("hi")])
    assert reply.types == ["start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"]
    assert reply.parts == [{"type": "step-start"}, {"type": "text", "text": "Hello!", "state": "done"}]
    validate_transcript(transcript_of(server.data_dir, chat))


def test_server_tool_streams_its_input_and_output(server: Server, client: Client) -> None:
    chat = new_chat()
    reply = client.send(chat, [user("weather")])
    assert reply.types == [
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
    part = reply.tool_part("get_weather")
    assert (part["state"], part["input"], part["output"]) == ("output-available", {"city": "Paris"}, "sunny in Paris")
    validate_transcript(transcript_of(server.data_dir, chat))


def test_client_tool_ends_the_reply_after_its_input(client: Client) -> None:
    reply = client.send(new_chat(), [user("pick")], tools=[PICK_COLOR])
    assert reply.types == [
        "start",
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "finish-step",
        "finish",
    ]
    assert reply.output["chunks"][-1]["finishReason"] == "tool-calls"


def test_client_tool_waits_with_its_input_available(client: Client) -> None:
    reply = client.send(new_chat(), [user("pick")], tools=[PICK_COLOR])
    part = reply.tool_part("pick_color")
    assert (part["state"], part["input"]) == ("input-available", {"options": ["red", "blue"]})


def test_client_tool_output_in_the_next_request_completes_the_run(server: Server, client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    call_id = first.tool_part("pick_color")["toolCallId"]
    second = client.send(chat, with_tool_output(first.messages, call_id, "blue"), tools=[PICK_COLOR])
    assert second.parts[-1] == {"type": "text", "text": 'Got {"pick_color": "blue"}', "state": "done"}
    transcript = transcript_of(server.data_dir, chat)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.data == "blue"


def test_client_tool_output_continues_the_same_assistant_message(client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    call_id = first.tool_part("pick_color")["toolCallId"]
    second = client.send(chat, with_tool_output(first.messages, call_id, "blue"), tools=[PICK_COLOR])
    assert [part["type"] for part in second.parts] == ["step-start", "tool-pick_color", "step-start", "text"]


def test_send_automatically_when_sends_the_output_once(client: Client) -> None:
    """`lastAssistantMessageIsCompleteWithToolCalls` (`sendAutomaticallyWhen`) holds once the output is added,
    and no longer after the answer: the answer is a step of its own, else useChat sends the output again."""
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    answered = with_tool_output(first.messages, first.tool_part("pick_color")["toolCallId"], "blue")
    second = client.send(chat, answered, tools=[PICK_COLOR])
    assert (second.output["sentComplete"], second.output["complete"]) == (True, False)


def test_client_tool_error_output_is_the_calls_error(server: Server, client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    call_id = first.tool_part("pick_color")["toolCallId"]
    client.send(chat, with_tool_output(first.messages, call_id, error_text="no screen"), tools=[PICK_COLOR])
    transcript = transcript_of(server.data_dir, chat)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert (result.type, result.error) == (ResultType.ERROR, "no screen")


def test_repeated_tool_output_runs_nothing_again(server: Server, client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    answered = with_tool_output(first.messages, first.tool_part("pick_color")["toolCallId"], "blue")
    client.send(chat, answered, tools=[PICK_COLOR])
    again = client.send(chat, answered, tools=[PICK_COLOR])
    assert again.types == ["start", "finish"]
    assert len(transcript_of(server.data_dir, chat)) == 4  # user, call, its one result, answer


def test_second_different_tool_output_is_refused(client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    call_id = first.tool_part("pick_color")["toolCallId"]
    client.send(chat, with_tool_output(first.messages, call_id, "blue"), tools=[PICK_COLOR])
    other = client.send(chat, with_tool_output(first.messages, call_id, "red"), tools=[PICK_COLOR])
    assert (other.status, other.code) == (409, "tool_call_settled")


def test_new_message_while_a_client_tool_waits_is_refused(client: Client) -> None:
    chat = new_chat()
    first = client.send(chat, [user("pick")], tools=[PICK_COLOR])
    reply = client.send(chat, [*first.messages, user("never mind", "u2")], tools=[PICK_COLOR])
    assert (reply.status, reply.code) == (409, "tool_calls_waiting")


def test_denied_tool_streams_output_denied(server: Server, client: Client) -> None:
    chat = new_chat()
    reply = client.send(chat, [user("delete")])
    assert "tool-output-denied" in reply.types
    assert reply.tool_part("delete_file")["state"] == "output-denied"
    validate_transcript(transcript_of(server.data_dir, chat))


def test_failing_tool_streams_output_error(server: Server, client: Client) -> None:
    chat = new_chat()
    reply = client.send(chat, [user("explode")])
    part = reply.tool_part("explode")
    assert (part["state"], part["errorText"].startswith("RuntimeError")) == ("output-error", True)
    validate_transcript(transcript_of(server.data_dir, chat))


def test_history_the_thread_does_not_have_is_refused(client: Client) -> None:
    chat = new_chat()
    client.send(chat, [user("hi")])
    said = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "Hello!"}]}
    reply = client.send(chat, [user("I never said this"), said, user("and?", "u2")])
    assert (reply.status, reply.code) == (400, "history_mismatch")


def test_wrong_token_is_refused(client: Client) -> None:
    reply = client.send(new_chat(), [user("hi")], token="not-a-token-0123456789")
    assert reply.status == 401


def test_another_principals_thread_is_refused(client: Client) -> None:
    chat = new_chat()
    client.send(chat, [user("hi")])
    reply = client.send(chat, [user("hi")], token=BOB)
    assert (reply.status, reply.code) == (403, "thread_forbidden")
