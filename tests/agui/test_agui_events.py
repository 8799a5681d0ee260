"""toolwire's run events as AG-UI events (`toolwire.interop.agui.event_map`): pure, one fact each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel

from toolwire import ToolCall, ToolMode, ToolResult
from toolwire.events import ModelRequestStarted, RunFinished, RunResult
from toolwire.interop.agui.event_map import EventMapper, render_result, run_finished, run_started, state_snapshot
from toolwire.interop.agui.interrupts import interrupt
from toolwire.interop.frontends.live_runs import Asking
from toolwire.messages import Usage
from toolwire.models import TextDelta
from toolwire.pipeline import ConsentRequested, ToolCallFinished, ToolCallStarted
from toolwire.policy import ConsentRequest

CALL = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})


def wire(events: Sequence[BaseModel]) -> list[dict[str, Any]]:
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


def asked(call: ToolCall = CALL, *, running: bool = False) -> ConsentRequested:
    request = ConsentRequest(call, call.name, ToolMode.LOCAL, "local tools ask for consent", "t1", "", True)
    return ConsentRequested(replace(request, running=running))


def test_a_consent_question_announces_its_call() -> None:
    events = wire(EventMapper().events(asked()))
    assert [event["type"] for event in events] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]


def test_a_question_about_a_front_end_tool_says_it_runs_on_the_client() -> None:
    [start, *_] = wire(EventMapper({"get_weather"}).events(asked()))
    assert start["metadata"]["toolwire"] == {"execution": "client", "mode": "local"}


def test_a_question_while_a_call_runs_maps_to_nothing() -> None:
    assert EventMapper().events(asked(running=True)) == []


def test_an_interrupt_names_the_call_it_asks_about() -> None:
    [question] = wire([interrupt(Asking(asked().request, asked_at=0.0), 300)])
    assert (question["id"], question["toolCallId"], question["reason"]) == ("approval-c1", "c1", "tool_call")


def test_an_interrupt_expires_after_the_consent_timeout() -> None:
    [question] = wire([interrupt(Asking(asked().request, asked_at=0.0), 300)])
    assert question["expiresAt"] == "1970-01-01T00:05:00Z"


def test_an_interrupt_offers_no_scope_when_always_is_not_honoured() -> None:
    request = replace(asked().request, allow_always=False)
    [question] = wire([interrupt(Asking(request, asked_at=0.0), 300)])
    assert "scope" not in question["responseSchema"]["properties"]


def test_the_state_snapshot_lists_the_client_tools_by_name() -> None:
    saved = {
        "groups": [
            {"name": "agui", "startCollapsed": False, "tools": [{"name": "pick_color"}]},
            {"name": "Files", "startCollapsed": True, "tools": [{"name": "Open"}]},
        ],
        "expanded": [],
        "skills": [],
        "hidden": [],
        "context": [{"key": "cwd", "value": "/"}],
    }
    [snapshot] = wire([state_snapshot(saved)])
    assert snapshot["snapshot"]["toolwire"]["clientTools"] == {
        "groups": [
            {"name": "agui", "tools": ["pick_color"], "collapsed": False},
            {"name": "Files", "tools": ["Open"], "collapsed": True},
        ],
        "skills": [],
        "hidden": [],
        "context": ["cwd"],
    }


def test_the_state_snapshot_of_a_thread_without_client_tools_is_empty() -> None:
    [snapshot] = wire([state_snapshot(None)])
    assert snapshot["snapshot"]["toolwire"]["clientTools"]["groups"] == []
