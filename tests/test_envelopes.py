from __future__ import annotations

from typing import Any

import msgpack
import pytest

from toolwire.envelopes import (
    CODE_RESULT_TYPES,
    DEFAULT_CODES,
    ResultType,
    ToolCall,
    ToolResult,
    is_terminal_result,
    result_type_for_code,
)
from toolwire.errors import EnvelopeError

CALL = {"id": "c_42", "name": "create_event", "arguments": {"title": "Lunch"}}


def _same_bytes(a: Any, b: Any) -> bool:
    """Equal as JSON values and in key order (MessagePack keeps the order of maps)."""
    return msgpack.packb(a) == msgpack.packb(b)


# -- ToolCall -----------------------------------------------------------------------------------------


def test_tool_call_decodes_its_three_fields():
    call = ToolCall.from_dict(CALL)
    assert (call.id, call.name, call.arguments) == ("c_42", "create_event", {"title": "Lunch"})


def test_tool_call_to_dict_is_id_name_arguments_in_order():
    assert list(ToolCall.from_dict(CALL).to_dict()) == ["id", "name", "arguments"]


def test_tool_call_rejects_unknown_field():
    with pytest.raises(EnvelopeError, match="'traceId'"):
        ToolCall.from_dict({**CALL, "traceId": "t1"})


@pytest.mark.parametrize("missing", ["id", "name", "arguments"])
def test_tool_call_rejects_missing_field(missing: str):
    value = {key: item for key, item in CALL.items() if key != missing}
    with pytest.raises(EnvelopeError, match=f"missing field.*'{missing}'"):
        ToolCall.from_dict(value)


@pytest.mark.parametrize("arguments", [["Lunch"], "title=Lunch", None, 3])
def test_tool_call_rejects_non_object_arguments(arguments: Any):
    with pytest.raises(EnvelopeError, match=r"ToolCall\.arguments"):
        ToolCall.from_dict({**CALL, "arguments": arguments})


@pytest.mark.parametrize("call_id", [42, None, True, ["c_42"], ""])
def test_tool_call_rejects_non_string_id(call_id: Any):
    with pytest.raises(EnvelopeError, match=r"ToolCall\.id"):
        ToolCall.from_dict({**CALL, "id": call_id})


@pytest.mark.parametrize("name", [7, None, ""])
def test_tool_call_rejects_non_string_name(name: Any):
    with pytest.raises(EnvelopeError, match=r"ToolCall\.name"):
        ToolCall.from_dict({**CALL, "name": name})


def test_tool_call_rejects_non_object():
    with pytest.raises(EnvelopeError, match="ToolCall must be a JSON object"):
        ToolCall.from_dict([CALL])


def test_envelope_error_is_a_value_error():
    with pytest.raises(ValueError):
        ToolCall.from_dict({})


# -- ResultType ---------------------------------------------------------------------------------------


def test_result_type_values_are_seed_000s():
    assert {member.name: member.value for member in ResultType} == {
        "SUCCESS": 0,
        "ERROR": 1,
        "CANCELED": 2,
        "TIMEOUT": 3,
        "DENIED": 4,
    }


def test_unknown_type_value_decodes_as_error_and_keeps_raw_number():
    result = ToolResult.from_dict({"success": False, "type": 9, "error": "from a newer version"})
    assert result.type is ResultType.ERROR
    assert result.raw_type == 9


def test_unknown_type_value_is_re_encoded():
    value = {"type": 9, "success": False, "error": "from a newer version"}
    assert _same_bytes(ToolResult.from_dict(value).to_dict(), value)


@pytest.mark.parametrize(
    ("success", "type_value"),
    [(True, 1), (True, 3), (True, 9), (False, 0)],
    ids=["success-error", "success-timeout", "success-unknown", "failure-success"],
)
def test_success_contradicting_type_is_rejected(success: bool, type_value: int):
    with pytest.raises(EnvelopeError, match="success"):
        ToolResult.from_dict({"success": success, "type": type_value})


@pytest.mark.parametrize("type_value", ["1", 1.0, True])
def test_non_integer_type_is_rejected(type_value: Any):
    with pytest.raises(EnvelopeError, match=r"ToolResult\.type"):
        ToolResult.from_dict({"success": False, "type": type_value})


def test_tool_result_without_success_is_rejected():
    with pytest.raises(EnvelopeError, match="'success'"):
        ToolResult.from_dict({"message": "hi"})


def test_type_is_written_only_when_success_does_not_imply_it():
    assert "type" not in ToolResult.ok("c", 1).to_dict()
    assert "type" not in ToolResult.failed("c", "boom").to_dict()
    assert ToolResult.timeout("c", 10).to_dict()["type"] == 3


# -- extra fields -------------------------------------------------------------------------------------


def test_unknown_tool_result_fields_are_kept():
    result = ToolResult.from_dict({"success": True, "durationMs": 12, "trace": {"span": "s1"}})
    assert dict(result.extra) == {"durationMs": 12, "trace": {"span": "s1"}}


def test_unknown_tool_result_fields_are_re_emitted():
    value = {"success": True, "message": "done", "durationMs": 12, "trace": {"span": "s1"}}
    assert _same_bytes(ToolResult.from_dict(value).to_dict(), value)


# -- constructors and seed 000's payloads -------------------------------------------------------------


@pytest.mark.parametrize("value", [{"answer": 42.5}, "text", 3, [1, 2], None, True])
def test_ok_payload_is_the_value(value: Any):
    assert ToolResult.ok("c", value).payload() == value


def test_error_payload_is_seed_000s():
    result = ToolResult.failed("c", "...", code="OPTIONAL_CODE", error_type="OptionalType")
    expected = {"error": {"message": "...", "code": "OPTIONAL_CODE", "type": "OptionalType"}}
    assert _same_bytes(result.payload(), expected)


def test_error_payload_omits_type_when_unset_and_defaults_the_code():
    assert ToolResult.failed("c", "boom").payload() == {"error": {"message": "boom", "code": "execution_error"}}


@pytest.mark.parametrize("by", ["user", "policy", "system"])
def test_canceled_payload_is_seed_000s(by: Any):
    result = ToolResult.canceled("c", "...", by)
    assert _same_bytes(result.payload(), {"canceled": {"reason": "...", "by": by}})


def test_canceled_rejects_an_unknown_canceller():
    with pytest.raises(ValueError, match="by must be one of"):
        ToolResult.canceled("c", "...", "model")  # pyright: ignore[reportArgumentType]


def test_timeout_payload_is_seed_000s():
    assert _same_bytes(ToolResult.timeout("c", 30000).payload(), {"timeout": {"durationMs": 30000}})


def test_timeout_with_unknown_effect_says_so_inside_the_timeout_object():
    result = ToolResult.timeout("c", 30000, effect_unknown=True)
    assert _same_bytes(result.payload(), {"timeout": {"durationMs": 30000, "effectUnknown": True}})


def test_denied_payload_is_seed_000s():
    assert _same_bytes(ToolResult.denied("c", "...", "...").payload(), {"denied": {"tool": "...", "reason": "..."}})


@pytest.mark.parametrize(
    "result",
    [
        ToolResult.failed("c", "boom", code="unknown_tool"),
        ToolResult.canceled("c", "stopped", "system"),
        ToolResult.timeout("c", 5000),
        ToolResult.denied("c", "delete_file", "not allowed"),
    ],
    ids=["error", "canceled", "timeout", "denied"],
)
def test_every_failure_sets_the_error_string(result: ToolResult):
    assert isinstance(result.error, str) and result.error


@pytest.mark.parametrize("type_", [ResultType.CANCELED, ResultType.TIMEOUT, ResultType.DENIED])
def test_failure_without_its_payload_is_rejected(type_: ResultType):
    with pytest.raises(EnvelopeError, match=type_.name):
        ToolResult(call_id="c", type=type_, error="x")


# -- ToolResult.failed and the error field --------------------------------------------------------------


def test_failed_builds_an_error_result():
    result = ToolResult.failed("c_1", "boom", code="invalid_parameters")
    assert isinstance(result, ToolResult)
    assert (result.call_id, result.type, result.error_code) == ("c_1", ResultType.ERROR, "invalid_parameters")


def test_error_is_the_string_of_a_failure():
    assert ToolResult.failed("c_1", "boom").error == "boom"
    assert ToolResult.ok("c_1", 1).error is None


def test_error_field_round_trips_through_dict():
    result = ToolResult.from_dict({"success": False, "error": "Invalid date format"})
    assert result.error == "Invalid date format"
    assert result.to_dict()["error"] == "Invalid date format"


def test_failed_results_ask_for_followup_unless_terminal():
    assert ToolResult.failed("c", "boom").needs_followup is True
    terminal = ToolResult.failed("c", "boom", terminal=True)
    assert (terminal.terminal, terminal.needs_followup) == (True, False)


# -- success and type ---------------------------------------------------------------------------------

ONE_OF_EACH = {
    ResultType.SUCCESS: ToolResult.ok("c", {"a": 1}),
    ResultType.ERROR: ToolResult.failed("c", "boom"),
    ResultType.CANCELED: ToolResult.canceled("c", "stop", "user"),
    ResultType.TIMEOUT: ToolResult.timeout("c", 1000),
    ResultType.DENIED: ToolResult.denied("c", "t", "no"),
}


@pytest.mark.parametrize("type_", list(ResultType), ids=lambda t: t.name)
def test_success_is_true_exactly_when_type_is_success(type_: ResultType):
    result = ONE_OF_EACH[type_]
    assert result.type is type_
    assert result.success is (type_ is ResultType.SUCCESS)
    assert result.to_dict()["success"] is (type_ is ResultType.SUCCESS)


@pytest.mark.parametrize("type_", list(ResultType), ids=lambda t: t.name)
def test_every_constructor_round_trips_through_dict(type_: ResultType):
    result = ONE_OF_EACH[type_]
    assert ToolResult.from_dict(result.to_dict()) == result


# -- is_terminal_result (seed 002) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("result", "terminal"),
    [
        (ToolResult.ok("c", 1), False),
        (ToolResult.ok("c", 1, terminal=True), True),
        (ToolResult.failed("c", "boom"), False),
        (ToolResult.failed("c", "boom", needs_followup=False), True),
        (ToolResult.failed("c", "boom", terminal=True), True),
        (ToolResult.canceled("c", "stop", "user"), True),
        (ToolResult.canceled("c", "stop", "policy"), False),
        (ToolResult.timeout("c", 1000, needs_followup=False), True),
    ],
    ids=[
        "success",
        "success-terminal",
        "failure-followup",
        "failure-no-followup",
        "failure-terminal",
        "canceled-by-user",
        "canceled-by-policy",
        "timeout-no-followup",
    ],
)
def test_is_terminal_result_for_tool_result(result: ToolResult, terminal: bool):
    assert is_terminal_result(result) is terminal


@pytest.mark.parametrize(
    ("value", "terminal"),
    [
        ({"success": True}, False),
        ({"success": True, "terminal": True}, True),
        ({"success": True, "needsFollowup": False}, False),
        ({"success": False}, True),
        ({"success": False, "needsFollowup": True}, False),
        ({"success": False, "needs_followup": True}, False),
        ({"success": False, "needsFollowup": False}, True),
        ({"success": False, "needs_followup": False}, True),
        ({"success": False, "needsFollowup": True, "terminal": True}, True),
        ({"terminal": False}, False),
    ],
    ids=[
        "success",
        "success-terminal",
        "success-no-followup",
        "failure",
        "failure-followup-camel",
        "failure-followup-snake",
        "failure-no-followup-camel",
        "failure-no-followup-snake",
        "terminal-beats-followup",
        "success-absent-is-not-false",
    ],
)
def test_is_terminal_result_for_dict(value: dict[str, Any], terminal: bool):
    assert is_terminal_result(value) is terminal


def test_is_terminal_result_of_no_result_is_false():
    assert is_terminal_result(None) is False


# -- data: one rule for every JSON form ----------------------------------------------------------------

VALUES = [{"answer": 42.5}, "text", 3, 4.5, [1, 2], True, False, {"value": 1}, {"value": 1, "unit": "cm"}, {}]
VALUE_IDS = ["map", "text", "int", "float", "list", "true", "false", "value-map", "map-with-value", "empty-map"]


@pytest.mark.parametrize("value", ["text", 3, [1, 2], True, {"value": 1}], ids=["text", "int", "list", "bool", "value"])
def test_to_dict_writes_data_that_is_not_a_plain_object_as_a_value_object(value: Any):
    assert ToolResult.ok("c", value).to_dict()["data"] == {"value": value}


def test_to_dict_writes_an_object_as_it_is():
    assert ToolResult.ok("c", {"eventId": "e_777"}).to_dict()["data"] == {"eventId": "e_777"}


@pytest.mark.parametrize("value", VALUES, ids=VALUE_IDS)
def test_data_round_trips_through_the_envelope(value: Any):
    assert ToolResult.from_dict(ToolResult.ok("c", value).to_dict()).data == value


def test_error_data_is_an_object_in_the_envelope_too():
    result = ToolResult.failed("c", "boom", data=["partial", "rows"])
    assert result.to_dict()["data"] == {"value": ["partial", "rows"]}


def test_from_dict_reads_bare_data_written_before_the_rule():
    assert ToolResult.from_dict({"success": True, "data": "text"}).data == "text"


def test_the_model_sees_the_value_itself():
    assert ToolResult.ok("c", "21 degrees").payload() == "21 degrees"


# -- outcome texts ------------------------------------------------------------------------------------


def test_a_timeout_without_a_duration_says_so_in_words():
    assert ToolResult.timeout("c", None).error == "Tool execution exceeded its timeout"


# -- wire codes ---------------------------------------------------------------------------------------


def test_code_table_holds_seed_001s_codes_and_toolwires_own():
    assert set(CODE_RESULT_TYPES) == {
        "unknown_tool",
        "timeout",
        "execution_error",
        "invalid_parameters",
        "canceled",
        "denied",
        "client_disconnected",
        "result_too_large",
        "invalid_result",
    }


@pytest.mark.parametrize(("code", "type_"), list(CODE_RESULT_TYPES.items()))
def test_every_code_maps_to_its_type(code: str, type_: ResultType):
    assert result_type_for_code(code) is type_


@pytest.mark.parametrize("code", ["quota_exceeded", "", "TIMEOUT"])
def test_custom_codes_are_errors(code: str):
    assert result_type_for_code(code) is ResultType.ERROR


@pytest.mark.parametrize("type_", [t for t in ResultType if t is not ResultType.SUCCESS], ids=lambda t: t.name)
def test_every_failed_type_has_a_default_code_of_its_own_type(type_: ResultType):
    assert result_type_for_code(DEFAULT_CODES[type_]) is type_


def test_success_has_no_default_code():
    assert ResultType.SUCCESS not in DEFAULT_CODES
    assert ToolResult.ok("c", 1).wire_code is None
