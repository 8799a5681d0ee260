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
