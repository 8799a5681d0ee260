"""The `messages` rule (`toolwire.interop.agui.reconcile.reconcile`): pure, one fact each."""

from __future__ import annotations

from typing import Any

import pytest
from ag_ui.core import Message as AguiMessage
from pydantic import TypeAdapter

from toolwire import ToolCall, ToolResult
from toolwire.interop.agui.reconcile import Answer, HistoryConflict, reconcile
from toolwire.messages import AssistantMessage, Message, ToolResultMessage, UserMessage

MESSAGES = TypeAdapter(list[AguiMessage])
PICK = ToolCall(id="c1", name="pick_color", arguments={})
WEATHER = ToolCall(id="c2", name="get_weather", arguments={})
STORED: list[Message] = [UserMessage("pick"), AssistantMessage("", (PICK,))]


def agui(*messages: dict[str, Any]) -> list[AguiMessage]:
    return MESSAGES.validate_python(list(messages))


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def calling(*call_ids: str) -> dict[str, Any]:
    calls = [{"id": call_id, "type": "function", "function": {"name": "x", "arguments": "{}"}} for call_id in call_ids]
    return {"id": "a1", "role": "assistant", "toolCalls": calls}


def tool(call_id: str, content: str, message_id: str = "t1") -> dict[str, Any]:
    return {"id": message_id, "role": "tool", "toolCallId": call_id, "content": content}


def test_new_user_message_at_the_end_is_the_prompt() -> None:
    assert reconcile([], (), agui(user("hi"))).prompt == "hi"


def test_several_new_user_messages_are_joined() -> None:
    assert reconcile([], (), agui(user("a"), user("b", "u2"))).prompt == "a\n\nb"


def test_history_the_thread_has_is_accepted() -> None:
    stored: list[Message] = [UserMessage("hi"), AssistantMessage("Hello!")]
    messages = agui(user("hi"), {"id": "a1", "role": "assistant", "content": "Hello!"}, user("more", "u2"))
    assert reconcile(stored, (), messages).prompt == "more"


def test_a_client_may_leave_out_history() -> None:
    stored: list[Message] = [
        UserMessage("hi"),
        AssistantMessage("Hello!"),
        UserMessage("again"),
        AssistantMessage("Hi"),
    ]
    messages = agui(user("again"), {"id": "a2", "role": "assistant", "content": "Hi"}, user("more", "u2"))
    assert reconcile(stored, (), messages).prompt == "more"


def test_history_the_thread_does_not_have_is_refused() -> None:
    with pytest.raises(HistoryConflict, match="not in this thread's transcript"):
        reconcile([UserMessage("hi")], (), agui(user("hello?"), {"id": "a1", "role": "assistant", "content": "x"}))


def test_history_out_of_order_is_refused() -> None:
    stored: list[Message] = [UserMessage("a"), AssistantMessage("A"), UserMessage("b"), AssistantMessage("B")]
    messages = agui(user("b"), {"id": "a1", "role": "assistant", "content": "A"}, user("c", "u3"))
    with pytest.raises(HistoryConflict):
        reconcile(stored, (), messages)


def test_tool_message_for_a_waiting_call_is_its_answer() -> None:
    new = reconcile(STORED, {"c1"}, agui(user("pick"), calling("c1"), tool("c1", "blue")))
    assert (new.prompt, new.answers) == (None, (Answer("c1", "blue"),))


def test_tool_message_error_is_a_failed_answer() -> None:
    messages = agui(user("pick"), calling("c1"), {**tool("c1", ""), "error": "the user closed it"})
    [answer] = reconcile(STORED, {"c1"}, messages).answers
    assert answer.result("pick_color").error == "the user closed it"


def test_tool_message_for_an_unknown_call_is_refused() -> None:
    with pytest.raises(HistoryConflict) as refused:
        reconcile(STORED, {"c1"}, agui(user("pick"), calling("c1"), tool("c9", "blue")))
    assert (refused.value.status, refused.value.code) == (400, "unknown_tool_call")


def test_same_result_for_a_settled_call_is_history() -> None:
    stored = [
        *STORED,
        ToolResultMessage("pick_color", Answer("c1", "blue").result("pick_color")),
        AssistantMessage("ok"),
    ]
    new = reconcile(stored, (), agui(user("pick"), calling("c1"), tool("c1", "blue")))
    assert (new.prompt, new.answers) == (None, ())


def test_other_result_for_a_settled_call_is_refused() -> None:
    stored = [*STORED, ToolResultMessage("pick_color", ToolResult.timeout("c1", 30000, True))]
    with pytest.raises(HistoryConflict) as refused:
        reconcile(stored, (), agui(user("pick"), calling("c1"), tool("c1", "blue")))
    assert (refused.value.status, refused.value.code) == (409, "tool_call_settled")


def test_server_result_as_rendered_is_history() -> None:
    stored: list[Message] = [UserMessage("w"), AssistantMessage("", (WEATHER,))]
    stored.append(ToolResultMessage("get_weather", ToolResult.ok("c2", {"temp": 21})))
    new = reconcile(stored, (), agui(user("w"), calling("c2"), tool("c2", '{"temp":21}'), user("thanks", "u2")))
    assert new.prompt == "thanks"


def test_decided_result_of_the_open_batch_may_precede_the_answers() -> None:
    stored: list[Message] = [UserMessage("both"), AssistantMessage("", (WEATHER, PICK))]
    decided = {"c2": ToolResultMessage("get_weather", ToolResult.ok("c2", "sunny"))}
    messages = agui(user("both"), calling("c2", "c1"), tool("c2", "sunny"), tool("c1", "green", "t2"))
    assert reconcile(stored, {"c1"}, messages, decided).answers == (Answer("c1", "green"),)


def test_two_answers_for_one_call_are_refused() -> None:
    with pytest.raises(HistoryConflict, match="same call"):
        reconcile(STORED, {"c1"}, agui(user("pick"), calling("c1"), tool("c1", "a"), tool("c1", "b", "t2")))


def test_system_messages_are_the_clients_own() -> None:
    messages = agui({"id": "s1", "role": "system", "content": "Be brief"}, user("hi"))
    assert reconcile([], (), messages).prompt == "hi"


def test_non_text_parts_are_refused() -> None:
    image = {"type": "image", "source": {"type": "url", "value": "https://example.invalid/a.png"}}
    with pytest.raises(HistoryConflict, match="not supported"):
        reconcile([], (), agui({"id": "u1", "role": "user", "content": [image]}))
