"""Consent questions over AG-UI, with the real client: an `interrupt` outcome, answered by `resume`.

`run_command` is a `local` tool: the default policy asks before it runs. The first request ends
with `RUN_FINISHED` whose outcome is `interrupt`; the second answers it (`approved`, `editedArgs`,
`reason`, or `cancelled`). After each conversation the transcript holds `validate_transcript`.
"""

from __future__ import annotations

import uuid

from agui_client import Client, Run, approval, user

from serving import Server, transcript_of
from toolwire.envelopes import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def asked(client: Client) -> tuple[str, Run]:
    thread = "thread-" + uuid.uuid4().hex
    return thread, client.run(thread, [user("run")])


def results(server: Server, thread: str) -> list[ToolResultMessage]:
    transcript = transcript_of(server.data_dir, thread)
    validate_transcript(transcript)
    return [message for message in transcript if isinstance(message, ToolResultMessage)]


def test_a_call_the_policy_asks_about_ends_the_run_with_an_interrupt(client: Client) -> None:
    _, run = asked(client)
    assert run.types == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert run.output["finished"]["outcome"] == "interrupt"


def test_the_interrupt_names_the_call_and_its_answer_schema(client: Client) -> None:
    _, run = asked(client)
    [interrupt] = run.interrupts
    call_id = run.last_call_id()
    assert (interrupt["id"], interrupt["reason"], interrupt["toolCallId"]) == (
        "approval-" + call_id,
        "tool_call",
        call_id,
    )
    assert interrupt["responseSchema"]["required"] == ["approved"]
    assert interrupt["metadata"]["toolwire"]["mode"] == "local"


def test_approved_runs_the_call(server: Server, client: Client) -> None:
    thread, first = asked(client)
    call_id = first.last_call_id()
    second = client.run(thread, first.messages, resume=[approval(call_id, {"approved": True})])
    assert second.messages[-1]["content"] == 'Got {"run_command": "ran ls"}'
    assert [message.result.data for message in results(server, thread)] == ["ran ls"]


def test_the_answering_run_streams_the_result_and_the_answer(client: Client) -> None:
    thread, first = asked(client)
    second = client.run(thread, first.messages, resume=[approval(first.last_call_id(), {"approved": True})])
    assert second.types == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STATE_SNAPSHOT",
        "RUN_FINISHED",
    ]


def test_refused_is_denied_with_the_reason(server: Server, client: Client) -> None:
    thread, first = asked(client)
    answer = {"approved": False, "reason": "not on my machine"}
    client.run(thread, first.messages, resume=[approval(first.last_call_id(), answer)])
    [result] = results(server, thread)
    assert result.result.payload() == {"denied": {"tool": "run_command", "reason": "not on my machine"}}


def test_cancelled_is_denied(server: Server, client: Client) -> None:
    thread, first = asked(client)
    client.run(thread, first.messages, resume=[approval(first.last_call_id(), status="cancelled")])
    [result] = results(server, thread)
    assert result.result.type is ResultType.DENIED


def test_edited_arguments_are_what_the_call_runs_with(server: Server, client: Client) -> None:
    thread, first = asked(client)
    answer = {"approved": True, "editedArgs": {"command": "pwd"}}
    second = client.run(thread, first.messages, resume=[approval(first.last_call_id(), answer)])
    assert second.messages[-1]["content"] == 'Got {"run_command": "ran pwd"}'
    assert [message.result.data for message in results(server, thread)] == ["ran pwd"]


def test_invalid_edited_arguments_are_the_calls_invalid_parameters_error(server: Server, client: Client) -> None:
    thread, first = asked(client)
    answer = {"approved": True, "editedArgs": {"command": 7}}
    client.run(thread, first.messages, resume=[approval(first.last_call_id(), answer)])
    [result] = results(server, thread)
    assert (result.result.type, result.result.error_code) == (ResultType.ERROR, "invalid_parameters")


def test_a_repeated_resume_runs_nothing_again(server: Server, client: Client) -> None:
    thread, first = asked(client)
    resume = [approval(first.last_call_id(), {"approved": True})]
    second = client.run(thread, first.messages, resume=resume)
    third = client.run(thread, second.messages, resume=resume)
    assert third.types == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert len(results(server, thread)) == 1


def test_an_answer_that_is_not_a_boolean_is_refused_and_the_question_stays_open(client: Client) -> None:
    thread, first = asked(client)
    call_id = first.last_call_id()
    refused = client.run(thread, first.messages, resume=[approval(call_id, {"approved": "yes"})])
    assert (refused.status, refused.output["payload"]["code"]) == (400, "invalid_resume")
    again = client.run(thread, first.messages, resume=[approval(call_id, {"approved": True})])
    assert again.messages[-1]["content"] == 'Got {"run_command": "ran ls"}'


def test_a_new_message_while_a_question_waits_is_refused(client: Client) -> None:
    thread, first = asked(client)
    refused = client.run(thread, [*first.messages, user("hi", "u2")])
    assert (refused.status, refused.output["payload"]["code"]) == (409, "approvals_waiting")


def test_an_answer_for_a_call_never_made_is_refused(client: Client) -> None:
    thread, first = asked(client)
    refused = client.run(thread, first.messages, resume=[approval("call_nope", {"approved": True})])
    assert (refused.status, refused.output["payload"]["code"]) == (400, "unknown_interrupt")


def test_a_request_without_an_answer_is_asked_the_open_question_again(client: Client) -> None:
    thread, first = asked(client)
    again = client.run(thread, first.messages)
    assert [interrupt["toolCallId"] for interrupt in again.interrupts] == [first.last_call_id()]


def test_two_questions_at_once_are_two_interrupts(client: Client) -> None:
    thread = "thread-" + uuid.uuid4().hex
    run = client.run(thread, [user("secrets")])
    calls = [call["id"] for call in run.messages[-1]["toolCalls"]]
    assert sorted(interrupt["toolCallId"] for interrupt in run.interrupts) == sorted(calls)


def test_a_resume_must_answer_every_open_question(client: Client) -> None:
    thread = "thread-" + uuid.uuid4().hex
    first = client.run(thread, [user("secrets")])
    one = first.interrupts[0]["toolCallId"]
    refused = client.run(thread, first.messages, resume=[approval(one, {"approved": True})])
    assert (refused.status, refused.output["payload"]["code"]) == (400, "interrupts_unanswered")


def test_answers_to_both_questions_run_what_was_allowed(server: Server, client: Client) -> None:
    thread = "thread-" + uuid.uuid4().hex
    first = client.run(thread, [user("secrets")])
    a, b = (call["id"] for call in first.messages[-1]["toolCalls"])
    resume = [approval(a, {"approved": True}), approval(b, {"approved": False})]
    client.run(thread, first.messages, resume=resume)
    assert [message.result.type for message in results(server, thread)] == [ResultType.SUCCESS, ResultType.DENIED]
