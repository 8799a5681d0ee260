"""The converter `ToolResult` ↔ ToolUseResult (`toolwire.protocol.results`), on bytes.

Each outcome type travels with its details as structured fields (seed 000's payload in `result`),
is read back from them, and a frame from another implementation that sends only the seed's
texts still reads as the same outcome.
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from protocol_support import hex_bytes, pack

from toolwire import ResultType, ToolResult
from toolwire.envelopes import DEFAULT_CODES
from toolwire.protocol import Envelope, ProtocolError, ToolUseResult, decode, encode, result_message, tool_result
from toolwire.protocol.results import answer_from_json, answer_json, content_value, failure_result


def _bytes(result: ToolResult, request_id: str = "req_1") -> bytes:
    return encode(Envelope(-1, "thr_1", result_message(result, request_id)))


def _message(data: bytes) -> ToolUseResult:
    message = decode(data).message
    assert isinstance(message, ToolUseResult)
    return message


def _body(data: bytes) -> dict[str, Any]:
    return msgpack.unpackb(data)["body"]


def _foreign(body: dict[str, Any]) -> bytes:
    """A frame as another implementation of the protocol writes it."""
    return pack({"stanzaId": 3, "conversationId": "thr_1", "type": 7, "body": body})


def to_wire(result: ToolResult, request_id: str | None = None) -> dict[str, Any]:
    return result_message(result, request_id or result.call_id or "").to_body()


def from_wire(body: dict[str, Any], **context: Any) -> ToolResult:
    return tool_result(ToolUseResult.from_body(body), **context)


# -- each outcome type, through bytes, with its structured fields -------------------------------------

FIVE = [
    pytest.param(ToolResult.ok("c1", {"answer": 42.5}), {"result": {"answer": 42.5}}, id="success"),
    pytest.param(
        ToolResult.failed("c1", "boom", code="not_found", error_type="KeyError"),
        {"errorCode": "not_found", "errorMessage": "boom", "result": {"error": {"type": "KeyError"}}},
        id="error",
    ),
    pytest.param(
        ToolResult.canceled("c1", "shutting down", "system"),
        {"errorCode": "canceled", "result": {"canceled": {"reason": "shutting down", "by": "system"}}},
        id="canceled",
    ),
    pytest.param(
        ToolResult.timeout("c1", 5000, effect_unknown=True),
        {
            "errorCode": "timeout",
            "errorMessage": "Tool execution exceeded timeout of 5000ms"
            " (the tool could not be stopped; its effect is unknown)",
            "result": {"timeout": {"durationMs": 5000, "effectUnknown": True}},
        },
        id="timeout",
    ),
    pytest.param(
        ToolResult.denied("c1", "DeleteFile", "the user said no"),
        {"errorCode": "denied", "result": {"denied": {"tool": "DeleteFile", "reason": "the user said no"}}},
        id="denied",
    ),
]


@pytest.mark.parametrize(("result", "fields"), FIVE)
def test_each_outcome_type_travels_with_its_structured_fields(result: ToolResult, fields: dict[str, Any]):
    body = _body(_bytes(result))
    assert body["id"] == "req_1" and body["success"] is result.success
    assert {key: body[key] for key in fields} == fields


@pytest.mark.parametrize(("result", "fields"), FIVE)
def test_each_outcome_type_round_trips_through_bytes(result: ToolResult, fields: dict[str, Any]):
    assert tool_result(_message(_bytes(result)), call_id="c1", tool="DeleteFile") == result


def test_the_structured_fields_win_over_the_text():
    # The request named another tool and another deadline: the frame's fields say what happened.
    message = _message(_bytes(ToolResult.timeout("c1", 1234)))
    assert tool_result(message, call_id="c1", deadline_ms=30_000).payload() == {"timeout": {"durationMs": 1234}}


def test_a_denial_names_the_tool_of_the_request():
    data = _bytes(ToolResult.denied("c1", "DeleteFile", "no"))
    assert tool_result(_message(data), tool="OpenFile").payload() == {"denied": {"tool": "OpenFile", "reason": "no"}}


# -- frames of other implementations: the seed's texts are the fallback ---------------------------------


def test_a_foreign_timeout_is_read_from_the_seed_text():
    data = _foreign(
        {
            "id": "req_1",
            "success": False,
            "errorCode": "timeout",
            "errorMessage": "Tool execution exceeded timeout of 5000ms",
        }
    )
    result = tool_result(_message(data), call_id="c1", deadline_ms=30_000)
    assert (result.type, result.payload()) == (ResultType.TIMEOUT, {"timeout": {"durationMs": 5000}})


def test_a_foreign_timeout_whose_effect_is_unknown_is_read_from_the_seed_text():
    text = "Tool execution exceeded timeout of 50ms (the tool could not be stopped; its effect is unknown)"
    data = _foreign({"id": "req_1", "success": False, "errorCode": "timeout", "errorMessage": text})
    assert tool_result(_message(data)).payload() == {"timeout": {"durationMs": 50, "effectUnknown": True}}


def test_a_foreign_timeout_without_a_standard_text_lasts_the_deadline():
    data = _foreign({"id": "req_1", "success": False, "errorCode": "timeout", "errorMessage": "slow"})
    assert tool_result(_message(data), deadline_ms=30_000).payload() == {"timeout": {"durationMs": 30_000}}
    assert tool_result(_message(data)).payload() == {"timeout": {"durationMs": None}}


def test_a_foreign_denial_is_read_from_the_seed_text():
    text = "Call to 'DeleteFile' was denied: not today"
    data = _foreign({"id": "req_1", "success": False, "errorCode": "denied", "errorMessage": text})
    assert tool_result(_message(data)).payload() == {"denied": {"tool": "DeleteFile", "reason": "not today"}}


def test_a_foreign_cancel_without_a_payload_was_the_users():
    data = _foreign({"id": "req_1", "success": False, "errorCode": "canceled", "errorMessage": "stop"})
    assert tool_result(_message(data)).payload() == {"canceled": {"reason": "stop", "by": "user"}}


def test_a_canceled_result_keeps_who_canceled_through_the_wire():
    result = from_wire(to_wire(ToolResult.canceled("c", "shutdown", "system")))
    assert result.payload() == {"canceled": {"reason": "shutdown", "by": "system"}}


# -- codes ----------------------------------------------------------------------------------------------


def test_an_unknown_code_is_an_error_that_keeps_the_code():
    data = _foreign({"id": "req_1", "success": False, "errorCode": "quota_exceeded", "errorMessage": "m"})
    result = tool_result(_message(data))
    assert (result.type, result.error_code, result.payload()) == (
        ResultType.ERROR,
        "quota_exceeded",
        {"error": {"message": "m", "code": "quota_exceeded"}},
    )
    assert to_wire(result) == {"id": "req_1", "success": False, "errorCode": "quota_exceeded", "errorMessage": "m"}


@pytest.mark.parametrize(("code", "type_"), [(code, type_) for type_, code in DEFAULT_CODES.items()])
def test_every_default_code_reads_as_its_type(code: str, type_: ResultType):
    assert from_wire({"id": "r", "success": False, "errorCode": code, "errorMessage": "m"}).type is type_


@pytest.mark.parametrize("type_", [t for t in ResultType if t is not ResultType.SUCCESS], ids=lambda t: t.name)
def test_a_result_type_without_a_code_gets_its_default_code(type_: ResultType):
    result = from_wire({"id": "r", "success": False, "resultType": int(type_), "errorMessage": "m"}, tool="T")
    assert (result.type, result.wire_code) == (type_, DEFAULT_CODES[type_])


def test_a_result_type_out_of_range_is_refused():
    with pytest.raises(ProtocolError, match="resultType"):
        tool_result(ToolUseResult(id="r", success=False, error_code="x", result_type=9))


@pytest.mark.parametrize(
    ("type_", "payload"),
    [
        (ResultType.DENIED, {"denied": {"tool": "OpenFile", "reason": "policy X"}}),
        (ResultType.CANCELED, {"canceled": {"reason": "policy X", "by": "user"}}),
        (ResultType.TIMEOUT, {"timeout": {"durationMs": None}}),
    ],
    ids=["denied", "canceled", "timeout"],
)
def test_failure_result_takes_the_named_type_over_a_custom_code(type_: ResultType, payload: Any):
    result = failure_result("c", "policy_x", "policy X", type=type_, tool="OpenFile")
    assert (result.type, result.payload(), result.wire_code) == (type_, payload, "policy_x")


def test_failure_result_of_a_named_type_keeps_a_custom_code_through_the_envelope():
    result = failure_result("c", "policy_x", "no", type=ResultType.DENIED, tool="OpenFile")
    assert ToolResult.from_dict(result.to_dict()) == result


def test_failure_result_uses_the_deadline_when_the_report_names_no_duration():
    result = failure_result("c", "timeout", "too slow", deadline_ms=30_000)
    assert result.payload() == {"timeout": {"durationMs": 30_000}}


# -- a result is in a frame once ------------------------------------------------------------------------

VALUES = [{"answer": 42.5}, "text", 3, 4.5, [1, 2], True, False, {"value": 1}, {"value": 1, "unit": "cm"}, {}]
VALUE_IDS = ["map", "text", "int", "float", "list", "true", "false", "value-map", "map-with-value", "empty-map"]


@pytest.mark.parametrize("value", VALUES, ids=VALUE_IDS)
def test_a_value_is_in_the_frame_once(value: Any):
    body = _body(_bytes(ToolResult.ok("c1", value)))
    assert "content" not in body
    assert tool_result(_message(_bytes(ToolResult.ok("c1", value)))).data == value


@pytest.mark.parametrize("value", VALUES, ids=VALUE_IDS)
def test_data_is_an_object_in_the_envelope_and_on_the_wire_alike(value: Any):
    result = ToolResult.ok("c", value)
    assert result.to_dict()["data"] == to_wire(result)["result"]


@pytest.mark.parametrize("value", [42, "text", [1, 2], True, 4.5])
def test_a_value_that_is_not_a_map_travels_as_value(value: Any):
    assert to_wire(ToolResult.ok("c", value)) == {"id": "c", "success": True, "result": {"value": value}}


def test_a_map_travels_as_it_is_and_no_value_not_at_all():
    assert to_wire(ToolResult.ok("c", {"answer": 42.5}))["result"] == {"answer": 42.5}
    assert to_wire(ToolResult.ok("c", None)) == {"id": "c", "success": True}


def test_content_items_are_the_value_of_a_frame_that_sends_only_them():
    data = _foreign({"id": "req_1", "success": True, "content": [{"type": "text", "text": "120 lines"}]})
    assert tool_result(_message(data)).data == "120 lines"


def test_a_frame_that_sends_both_is_read_from_its_content():
    # Written by toolwire clients before the value travelled once: both say the same.
    body = {"id": "req_1", "success": True, "result": {"value": 7}, "content": [{"type": "json", "value": 7}]}
    assert tool_result(_message(_foreign(body))).data == 7


def test_content_values_follow_the_client_tools_rules():
    binary = {"type": "binary", "mimeType": "image/png", "data": b"\x89PNG"}
    assert content_value([]) is None
    assert content_value([{"type": "json", "value": {"a": 1}}]) == {"a": 1}
    assert content_value([binary]) == {"type": "binary", "mimeType": "image/png", "data": "iVBORw==", "filename": None}
    assert content_value([{"type": "text", "text": "a"}, {"type": "json", "value": 1}]) == [
        {"type": "text", "text": "a"},
        {"type": "json", "value": 1},
    ]


# -- correlation and malformed bodies --------------------------------------------------------------------


def test_the_request_id_is_the_call_id_unless_told():
    assert from_wire({"requestId": "req_1", "success": True}).call_id == "req_1"
    assert from_wire({"id": "other", "requestId": "req_1", "success": True}).call_id == "req_1"
    assert from_wire({"id": "req_1", "success": True}, call_id="c_42").call_id == "c_42"
    assert to_wire(ToolResult.ok("model_call_1", 1), "req_9")["id"] == "req_9"


@pytest.mark.parametrize(
    "body",
    [{"success": True}, {"id": 5, "success": True}, {"id": "r"}, {"id": "r", "success": "yes"}],
    ids=["no-id", "numeric-id", "no-success", "string-success"],
)
def test_a_malformed_body_is_refused(body: dict[str, Any]):
    with pytest.raises(ProtocolError, match="ToolUseResult"):
        from_wire(body)


def test_a_result_that_is_not_a_map_is_refused():
    with pytest.raises(ProtocolError, match=r"ToolUseResult\.result"):
        from_wire({"id": "r", "success": True, "result": [1]})


# -- the ledger's saved answer ---------------------------------------------------------------------------


def test_a_saved_answer_is_json_and_reads_back_as_the_message():
    message = ToolUseResult(
        id="req_1",
        success=True,
        content=({"type": "binary", "mimeType": "image/png", "data": b"\x89PNG", "filename": "a.png"},),
        augmentation={"expandToolGroups": ["IDE"]},
    )
    saved = answer_json(message)
    assert saved["content"][0]["data"] == "iVBORw=="
    assert answer_from_json(saved) == message


def test_an_answer_saved_in_the_former_shape_reads_back():
    saved = {
        "requestId": "req_1",
        "content": [],
        "success": False,
        "errorMessage": "slow",
        "terminal": False,
        "needsFollowup": None,
        "message": None,
        "errorCode": "timeout",
        "resultType": None,
        "payload": {"timeout": {"durationMs": 5000, "effectUnknown": True}},
        "augmentation": None,
    }
    result = tool_result(answer_from_json(saved), call_id="c1")
    assert result.payload() == {"timeout": {"durationMs": 5000, "effectUnknown": True}}


# -- the protocol fixtures show what the converter writes --------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "tool_use_result_success",
        "tool_use_result_error",
        "tool_use_result_timeout",
        "tool_use_result_denied_terminal",
        "tool_use_result_custom_code_denied",
    ],
)
def test_the_result_fixtures_are_what_the_converter_writes(name: str):
    message = _message(hex_bytes(name))
    assert result_message(tool_result(message, tool="DeleteFile"), message.id) == message
