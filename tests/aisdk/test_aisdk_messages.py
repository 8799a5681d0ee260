"""A `useChat` request's UIMessages against the stored transcript (`toolwire.interop.aisdk.ui_messages`): pure."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import ToolCall, ToolResult
from toolwire.interop.aisdk.ui_messages import reconcile
from toolwire.interop.frontends.answers import HistoryConflict
from toolwire.messages import AssistantMessage, ToolResultMessage, UserMessage

PICK = ToolCall(id="c1", name="pick_color", arguments={})
ASKED = [UserMessage("pick"), AssistantMessage("", (PICK,))]
RUN = ToolCall(id="r1", name="run_command", arguments={"command": "ls"})
ASKED_CONSENT = [UserMessage("run"), AssistantMessage("", (RUN,))]


def user(text: str) -> dict[str, Any]:
    return {"id": "u", "role": "user", "parts": [{"type": "text", "text": text}]}


def assistant(**part: Any) -> dict[str, Any]:
    return {"id": "a", "role": "assistant", "parts": [{"type": "tool-pick_color", "toolCallId": "c1", **part}]}


def test_trailing_user_message_is_the_prompt() -> None:
    assert reconcile([], (), [user("hi")]).prompt == "hi"


def test_system_messages_are_ignored() -> None:
    given = [{"id": "s", "role": "system", "parts": [{"type": "text", "text": "be brief"}]}, user("hi")]
    assert reconcile([], (), given).prompt == "hi"


def test_output_for_a_waiting_call_is_its_answer() -> None:
    [answer] = reconcile(ASKED, {"c1"}, [user("pick"), assistant(state="output-available", output="blue")]).answers
    assert (answer.call_id, answer.content, answer.error) == ("c1", "blue", None)


def test_structured_output_is_answered_as_json() -> None:
    given = [user("pick"), assistant(state="output-available", output={"color": "blue"})]
    assert reconcile(ASKED, {"c1"}, given).answers[0].content == '{"color": "blue"}'


def test_output_error_is_a_failed_answer() -> None:
    given = [user("pick"), assistant(state="output-error", errorText="no screen")]
    assert reconcile(ASKED, {"c1"}, given).answers[0].error == "no screen"


def test_call_still_waiting_without_output_answers_nothing() -> None:
    given = [user("pick"), assistant(state="input-available", input={})]
    assert reconcile(ASKED, {"c1"}, given).answers == ()


def test_output_for_an_unknown_call_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        reconcile(ASKED[:1], (), [user("pick"), assistant(state="output-available", output="blue")])
    assert refused.value.code == "unknown_tool_call"


def test_same_output_again_for_a_settled_call_is_history() -> None:
    stored = [*ASKED, ToolResultMessage("pick_color", ToolResult.ok("c1", "blue")), AssistantMessage("Got it")]
    given = [user("pick"), assistant(state="output-available", output="blue")]
    assert reconcile(stored, (), given).answers == ()


def test_other_output_for_a_settled_call_is_refused() -> None:
    stored = [*ASKED, ToolResultMessage("pick_color", ToolResult.ok("c1", "blue")), AssistantMessage("Got it")]
    with pytest.raises(HistoryConflict) as refused:
        reconcile(stored, (), [user("pick"), assistant(state="output-available", output="red")])
    assert (refused.value.status, refused.value.code) == (409, "tool_call_settled")


def test_user_message_the_thread_does_not_have_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        reconcile([UserMessage("hi")], (), [user("something else"), assistant(state="input-available"), user("and?")])
    assert refused.value.code == "history_mismatch"


def test_file_part_in_a_new_message_is_refused() -> None:
    given = [{"id": "u", "role": "user", "parts": [{"type": "file", "mediaType": "image/png", "url": "data:,"}]}]
    with pytest.raises(HistoryConflict):
        reconcile([], (), given)


def responded(call_id: str = "r1", **approval: Any) -> dict[str, Any]:
    part = {
        "type": "tool-run_command",
        "toolCallId": call_id,
        "state": "approval-responded",
        "input": {"command": "ls"},
        "approval": {"id": "approval-" + call_id, **approval},
    }
    return {"id": "a", "role": "assistant", "parts": [part]}


def test_approval_responded_part_is_an_approval() -> None:
    new = reconcile(ASKED_CONSENT, (), [user("run"), responded(approved=True)])
    [approval] = new.approvals
    assert (approval.call_id, approval.answer.allow, new.resumed, new.prompt) == ("r1", True, True, None)


def test_refusal_carries_its_reason() -> None:
    [approval] = reconcile(ASKED_CONSENT, (), [user("run"), responded(approved=False, reason="no")]).approvals
    assert (approval.answer.allow, approval.answer.reason) == (False, "no")


def test_a_request_without_approvals_is_not_a_resume() -> None:
    assert reconcile(ASKED, {"c1"}, [user("pick"), assistant(state="input-available", input={})]).resumed is False


def test_approval_that_is_not_a_boolean_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        reconcile(ASKED_CONSENT, (), [user("run"), responded(approved="yes")])
    assert refused.value.code == "invalid_approval"


def test_approval_for_an_unknown_call_is_left_to_the_endpoint() -> None:
    """Not a history mismatch: the endpoint refuses it as `unknown_interrupt` (the AG-UI code)."""
    [approval] = reconcile(ASKED_CONSENT, (), [user("run"), responded("nope", approved=True)]).approvals
    assert approval.call_id == "nope"
