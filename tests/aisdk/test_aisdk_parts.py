"""toolwire's run events as AI SDK UI message stream parts (`toolwire.interop.aisdk.parts`): pure, one fact each."""

from __future__ import annotations

import json
from dataclasses import replace

from toolwire import ToolCall, ToolMode, ToolResult
from toolwire.events import ModelRequestStarted, RunFinished, RunResult
from toolwire.interop.aisdk.parts import PartMapper, approval_response, encode, error, finish, output, start
from toolwire.messages import Usage
from toolwire.models import TextDelta
from toolwire.pipeline import ConsentRequested, ToolCallFinished, ToolCallStarted
from toolwire.policy import ConsentRequest

CALL = ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})


def started(mode: ToolMode | None = ToolMode.READ) -> ToolCallStarted:
    return ToolCallStarted(CALL, mode, None, 0, 0)


def test_first_text_delta_opens_a_text_part() -> None:
    [opened, delta] = PartMapper().events(TextDelta("Hel"))
    assert (opened["type"], delta["type"], delta["delta"], delta["id"]) == (
        "text-start",
        "text-delta",
        "Hel",
        opened["id"],
    )


def test_later_deltas_only_add_text() -> None:
    mapper = PartMapper()
    mapper.events(TextDelta("Hel"))
    assert [part["type"] for part in mapper.events(TextDelta("lo"))] == ["text-delta"]


def test_empty_delta_maps_to_nothing() -> None:
    assert PartMapper().events(TextDelta("")) == []


def test_model_turn_starts_a_step() -> None:
    assert PartMapper().events(ModelRequestStarted(0)) == [{"type": "start-step"}]


def test_new_model_turn_ends_the_open_text_part_and_step() -> None:
    mapper = PartMapper()
    mapper.events(ModelRequestStarted(0))
    mapper.events(TextDelta("Hel"))
    assert [part["type"] for part in mapper.events(ModelRequestStarted(1))] == ["text-end", "finish-step", "start-step"]


def test_close_ends_the_open_step_once() -> None:
    mapper = PartMapper()
    mapper.events(ModelRequestStarted(0))
    mapper.events(started())
    assert mapper.close() == [{"type": "finish-step"}]
    assert mapper.close() == []


def test_tool_call_ends_the_open_text_part_first() -> None:
    mapper = PartMapper()
    mapper.events(TextDelta("Let me look"))
    types = [part["type"] for part in mapper.events(started())]
    assert types == ["text-end", "tool-input-start", "tool-input-delta", "tool-input-available"]


def test_tool_input_delta_is_the_arguments_as_json() -> None:
    [_, delta, _] = PartMapper().events(started())
    assert json.loads(delta["inputTextDelta"]) == {"city": "Paris"}


def test_tool_input_available_carries_the_arguments() -> None:
    [_, _, available] = PartMapper().events(started())
    assert (available["toolCallId"], available["toolName"], available["input"]) == ("c1", "get_weather", CALL.arguments)


def test_tool_call_carries_its_mode_and_execution() -> None:
    [_, _, available] = PartMapper().events(started(ToolMode.DESTRUCTIVE))
    assert available["toolMetadata"] == {"toolwire": {"execution": "server", "mode": "destructive"}}


def test_success_is_output_available_with_the_value() -> None:
    finished = ToolCallFinished(CALL, ToolResult.ok("c1", {"temp": 21}), 1.0, 0, 0)
    assert PartMapper().events(finished) == [
        {"type": "tool-output-available", "toolCallId": "c1", "output": {"temp": 21}}
    ]


def test_denied_is_output_denied() -> None:
    assert output("c1", ToolResult.denied("c1", "get_weather", "not allowed")) == {
        "type": "tool-output-denied",
        "toolCallId": "c1",
    }


def test_error_is_output_error_with_its_message() -> None:
    part = output("c1", ToolResult.failed("c1", "no such city"))
    assert (part["type"], part["errorText"]) == ("tool-output-error", "no such city")


def test_timeout_is_output_error() -> None:
    assert output("c1", ToolResult.timeout("c1", 5000, False))["type"] == "tool-output-error"


def test_run_finished_closes_the_open_text_part_and_step() -> None:
    mapper = PartMapper()
    mapper.events(ModelRequestStarted(0))
    mapper.events(TextDelta("Hello"))
    result = RunResult(output="Hello", reason="answer", thread_id="t", transcript=[], new_messages=[], usage=Usage())
    assert [part["type"] for part in mapper.events(RunFinished(result))] == ["text-end", "finish-step"]


def test_start_of_a_continuation_names_no_message() -> None:
    assert start() == {"type": "start"}


def test_finish_while_front_end_calls_wait_says_tool_calls() -> None:
    assert finish(waiting=True) == {"type": "finish", "finishReason": "tool-calls"}


def test_finish_of_an_ended_run_says_stop() -> None:
    assert finish(waiting=False)["finishReason"] == "stop"


def test_error_part_carries_the_text() -> None:
    assert error("the model failed") == {"type": "error", "errorText": "the model failed"}


def test_part_is_encoded_as_one_sse_data_event() -> None:
    assert encode({"type": "start"}) == 'data: {"type":"start"}\n\n'


def asked(call: ToolCall = CALL, *, running: bool = False) -> ConsentRequested:
    request = ConsentRequest(call, call.name, ToolMode.LOCAL, "local tools ask for consent", "t1", "", True)
    return ConsentRequested(replace(request, running=running))


def test_a_consent_question_announces_its_call_then_asks_for_approval() -> None:
    types = [part["type"] for part in PartMapper().events(asked())]
    assert types == ["tool-input-start", "tool-input-delta", "tool-input-available", "tool-approval-request"]


def test_the_approval_request_names_the_call_and_the_policys_reason() -> None:
    *_, request = PartMapper().events(asked())
    assert request == {
        "type": "tool-approval-request",
        "approvalId": "approval-c1",
        "toolCallId": "c1",
        "reason": "local tools ask for consent",
    }


def test_a_question_about_a_front_end_tool_says_it_runs_on_the_client() -> None:
    [_, _, available, _] = PartMapper({"get_weather"}).events(asked())
    assert available["toolMetadata"] == {"toolwire": {"execution": "client", "mode": "local"}}


def test_a_question_while_a_call_runs_maps_to_nothing() -> None:
    assert PartMapper().events(asked(running=True)) == []


def test_approval_response_carries_the_reason_of_a_refusal() -> None:
    assert approval_response("c1", False, "no") == {
        "type": "tool-approval-response",
        "approvalId": "approval-c1",
        "approved": False,
        "reason": "no",
    }
    assert "reason" not in approval_response("c1", True, None)
