"""toolwire's run events as AG-UI events (`toolwire.interop.agui.event_map`): pure, one fact each."""

from __future__ import annotations

from typing import Any

from ag_ui.core import BaseEvent

from toolwire import ToolCall, ToolMode, ToolResult
from toolwire.events import ModelRequestStarted, RunFinished, RunResult
from toolwire.interop.agui.event_map import EventMapper, render_result, run_finished, run_started
from toolwire.messages import Usage
from toolwire.models import TextDelta
from toolwire.pipeline import ToolCallFinished, ToolCallStarted

CALL = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})


def wire(events: list[BaseEvent]) -> list[dict[str, Any]]:
    return [event.model_dump(mode="json", by_alias=True) for event in events]


def started(mode: ToolMode | None = ToolMode.READ) -> ToolCallStarted:
    return ToolCallStarted(CALL, mode, None, 0, 0)


def test_first_text_delta_opens_a_text_message() -> None:
    [start, content] = wire(EventMapper().events(TextDelta("Hel")))
    assert (start["type"], start["role"], content["delta"]) == ("TEXT_MESSAGE_START", "assistant", "Hel")


def test_later_deltas_only_add_content() -> None:
    mapper = EventMapper()
    mapper.events(TextDelta("Hel"))
    assert [event["type"] for event in wire(mapper.events(TextDelta("lo")))] == ["TEXT_MESSAGE_CONTENT"]


def test_empty_delta_maps_to_nothing() -> None:
    assert EventMapper().events(TextDelta("")) == []


def test_tool_call_ends_the_open_text_message_first() -> None:
    mapper = EventMapper()
    mapper.events(TextDelta("Let me look"))
    types = [event["type"] for event in wire(mapper.events(started()))]
    assert types == ["TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]


def test_tool_call_belongs_to_the_turns_text_message() -> None:
    mapper = EventMapper()
    [text, _] = wire(mapper.events(TextDelta("Let me look")))
    [_, start, *_] = wire(mapper.events(started()))
    assert start["parentMessageId"] == text["messageId"]


def test_tool_call_arguments_travel_as_json() -> None:
    [_, arguments, _] = wire(EventMapper().events(started()))
    assert arguments["delta"] == '{"city": "Paris"}'


def test_tool_call_metadata_names_its_mode_and_where_it_runs() -> None:
    [start, _, _] = wire(EventMapper().events(started()))
    assert start["metadata"] == {"toolwire": {"execution": "server", "mode": "read"}}


def test_a_new_model_request_starts_a_new_assistant_message() -> None:
    mapper = EventMapper()
    [first, _] = wire(mapper.events(TextDelta("a")))
    [end] = wire(mapper.events(ModelRequestStarted(1)))
    [second, _] = wire(mapper.events(TextDelta("b")))
    assert end["type"] == "TEXT_MESSAGE_END" and first["messageId"] != second["messageId"]


def test_finished_call_gives_its_result_as_text() -> None:
    finished = ToolCallFinished(CALL, ToolResult.ok("c1", "sunny"), 1.0, 0, 0)
    [result] = wire(EventMapper().events(finished))
    assert (result["type"], result["toolCallId"], result["content"]) == ("TOOL_CALL_RESULT", "c1", "sunny")


def test_failed_call_gives_its_outcome_payload() -> None:
    finished = ToolCallFinished(CALL, ToolResult.timeout("c1", 5000, False), 1.0, 0, 0)
    [result] = wire(EventMapper().events(finished))
    assert (result["content"], result["metadata"]) == (
        '{"timeout":{"durationMs":5000}}',
        {"toolwire": {"outcome": "timeout"}},
    )


def test_structured_success_renders_as_json() -> None:
    assert render_result(ToolResult.ok("c1", {"temp": 21})) == '{"temp":21}'


def test_run_finished_closes_the_open_text_message() -> None:
    mapper = EventMapper()
    mapper.events(TextDelta("Hello"))
    result = RunResult(output="Hello", reason="answer", thread_id="t", transcript=[], new_messages=[], usage=Usage())
    assert [event["type"] for event in wire(mapper.events(RunFinished(result)))] == ["TEXT_MESSAGE_END"]


def test_run_started_declares_the_protocol_version() -> None:
    assert wire([run_started("t", "r")])[0]["protocolVersion"] == "1.0"


def test_run_finished_names_the_pending_front_end_calls() -> None:
    [finished] = wire([run_finished("t", "r", None, ["c1"])])
    assert finished["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}


def test_run_finished_without_pending_calls_has_no_outcome() -> None:
    [finished] = wire([run_finished("t", "r", None)])
    assert "outcome" not in finished
