"""`POST /agui` of a live `toolwire serve --agui`, driven by the real client: `@ag-ui/client`'s HttpAgent.

The client raises on any event out of order (its own verifier), so a run that passes also checks
the order. After each conversation the stored transcript holds the rules `validate_transcript`
checks.
"""

from __future__ import annotations

import json
import uuid

from agui_client import PICK_COLOR, Client, tool_message, user

from serving import BOB, Server, transcript_of
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def new_thread() -> str:
    return "thread-" + uuid.uuid4().hex


def test_text_answer_streams_as_one_text_message(server: Server, client: Client) -> None:
    thread = new_thread()
    run = client.run(thread, [user("hi")])
    assert run.types == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert run.messages[-1]["content"] == "Hello!"
    validate_transcript(transcript_of(server.data_dir, thread))


def test_run_started_declares_the_protocol_version(client: Client) -> None:
    run = client.run(new_thread(), [user("hi")])
    assert run.output["events"][0]["protocolVersion"] == "1.0"


def test_server_tool_call_streams_its_call_and_result(server: Server, client: Client) -> None:
    thread = new_thread()
    run = client.run(thread, [user("weather")])
    assert run.types == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert run.messages[-1]["content"] == 'Got {"get_weather": "sunny in Paris"}'
    validate_transcript(transcript_of(server.data_dir, thread))


def test_tool_call_carries_its_mode_in_metadata(client: Client) -> None:
    run = client.run(new_thread(), [user("weather")])
    [call] = [message for message in run.messages if message.get("toolCalls")][0]["toolCalls"]
    assert call["metadata"]["toolwire"] == {"execution": "server", "mode": "read"}


def test_front_end_tool_call_ends_the_run_pending(client: Client) -> None:
    run = client.run(new_thread(), [user("pick")], tools=[PICK_COLOR])
    assert run.types == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert run.pending == [run.last_call_id()]


def test_front_end_tool_result_completes_the_run(server: Server, client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("pick")], tools=[PICK_COLOR])
    second = client.run(thread, [*first.messages, tool_message(first.last_call_id(), "blue")], tools=[PICK_COLOR])
    assert second.messages[-1]["content"] == 'Got {"pick_color": "blue"}'
    transcript = transcript_of(server.data_dir, thread)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.data == "blue"


def test_repeated_resume_runs_nothing_again(server: Server, client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("pick")], tools=[PICK_COLOR])
    resume = [*first.messages, tool_message(first.last_call_id(), "blue")]
    client.run(thread, resume, tools=[PICK_COLOR])
    again = client.run(thread, resume, tools=[PICK_COLOR])
    assert again.types == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    transcript = transcript_of(server.data_dir, thread)
    validate_transcript(transcript)
    assert len(transcript) == 4  # user, call, its one result, answer


def test_second_different_result_is_refused(client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("pick")], tools=[PICK_COLOR])
    client.run(thread, [*first.messages, tool_message(first.last_call_id(), "blue")], tools=[PICK_COLOR])
    other = client.run(thread, [*first.messages, tool_message(first.last_call_id(), "red")], tools=[PICK_COLOR])
    assert (other.status, other.output["payload"]["code"]) == (409, "tool_call_settled")


def test_result_for_unknown_call_is_refused(client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("hi")])
    other = client.run(thread, [*first.messages, tool_message("call_nope", "blue")])
    assert (other.status, other.output["payload"]["code"]) == (400, "unknown_tool_call")


def test_history_the_thread_does_not_have_is_refused(client: Client) -> None:
    thread = new_thread()
    client.run(thread, [user("hi")])
    invented = [user("hi"), {"id": "a9", "role": "assistant", "content": "I never said this"}, user("and?", "u2")]
    run = client.run(thread, invented)
    assert (run.status, run.output["payload"]["code"]) == (400, "history_mismatch")


def test_new_message_while_a_front_end_call_waits_is_refused(client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("pick")], tools=[PICK_COLOR])
    run = client.run(thread, [*first.messages, user("never mind", "u2")], tools=[PICK_COLOR])
    assert (run.status, run.output["payload"]["code"]) == (409, "tool_calls_waiting")


def test_server_and_front_end_calls_of_one_batch(server: Server, client: Client) -> None:
    thread = new_thread()
    first = client.run(thread, [user("both")], tools=[PICK_COLOR])
    assert first.types.count("TOOL_CALL_RESULT") == 1  # the server's call; the front end's waits
    [pick] = first.pending
    second = client.run(thread, [*first.messages, tool_message(pick, "green")], tools=[PICK_COLOR])
    answer = json.loads(second.messages[-1]["content"].removeprefix("Got "))
    assert answer == {"get_weather": "sunny in Oslo", "pick_color": "green"}
    validate_transcript(transcript_of(server.data_dir, thread))


def test_wrong_token_is_refused(client: Client) -> None:
    run = client.run(new_thread(), [user("hi")], token="not-a-token-0123456789")
    assert run.status == 401


def test_another_principals_thread_is_refused(client: Client) -> None:
    thread = new_thread()
    client.run(thread, [user("hi")])
    run = client.run(thread, [user("hi")], token=BOB)
    assert (run.status, run.output["payload"]["code"]) == (403, "thread_forbidden")
