"""Message bodies: round trips, field checks, and the ToolUseResult ↔ ToolResult mapping."""

from __future__ import annotations

from typing import Any

import pytest
from protocol_support import hex_bytes

from toolwire import ResultType, ToolResult
from toolwire.client_tools.definitions import Augmentation, ClientToolGroup, ClientToolResponse
from toolwire.protocol import (
    Acknowledgement,
    AssistantMessageBody,
    AssistantSentence,
    Configuration,
    ConsentAnswerBody,
    ConsentRequestBody,
    ControlStop,
    Envelope,
    ErrorCode,
    ErrorMessage,
    MessageBody,
    MessageType,
    ProtocolError,
    RegisterTools,
    RegisterToolsResult,
    RunStatus,
    Severity,
    StartAnswer,
    ToolUseCancel,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
    decode,
    encode,
    parse_body,
    result_message,
    tool_result,
)
from toolwire.protocol.results import failure_result

EVERY_MESSAGE: list[MessageBody] = [
    ErrorMessage(id="e1", code=105, message="bad", severity=Severity.ERROR, recoverable=True, originating_id=4),
    UserMessageBody(id="m1", content="hi", previous_id="m0"),
    AssistantMessageBody(id="m2", content="hello"),
    ToolUseRequest(id="r1", tool_name="Open", arguments={"p": 1}, execution="either", timeout_ms=10, mode="read"),
    ToolUseResult(id="r1", success=True, result={"n": [1, 2.5, None, b"\x00"]}, needs_followup=True),
    ToolUseResult(id="r2", success=False, error_code="x", error_message="y", result_type=2, terminal=True, message="m"),
    Acknowledgement(acknowledged_stanza_id=-9),
    ControlStop(),
    ControlStop(run_id="run_1", reason="stop"),
    Configuration(conversation_id="c", last_sequence_seen=3, client_version="v", device="d", features=("a", "b")),
    StartAnswer(message_id="a1"),
    AssistantSentence(message_id="a1", sequence=2, text="…", is_final=False),
    RegisterTools(groups=({"name": "IDE"},), expanded_containers=("IDE",), reset_client_state=True),
    RegisterToolsResult(ok=False, error="no", group="IDE", tool="Open"),
    ConsentRequestBody(id="k1", call_id="c1", tool_name="Del", mode="destructive", reason="r", arguments={"p": "x"}),
    ConsentAnswerBody(id="k1", allow=True, scope="thread"),
    RunStatus(run_id="run_1", status="failed", detail="boom"),
    RunStatus(run_id="run_2", status="queued", position=3, message_id="m1"),
    ToolUseCancel(id="req_1", code="timeout", reason="Tool execution exceeded timeout of 30000ms"),
]


def test_every_message_type_is_covered_here():
    assert {message.type for message in EVERY_MESSAGE} == set(MessageType)


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda message: type(message).__name__)
def test_every_message_round_trips_through_the_codec(message: MessageBody):
    envelope = Envelope(5, "c", message, {"timestamp": 7})
    assert decode(encode(envelope)) == envelope
    assert parse_body(message.type, message.to_body()) == message


@pytest.mark.parametrize(
    ("type", "body", "field"),
    [
        (MessageType.USER_MESSAGE, {"content": "hi"}, "UserMessage.id"),
        (MessageType.TOOL_USE_REQUEST, {"id": "r", "toolName": "t", "parameters": {}}, "ToolUseRequest.execution"),
        (
            MessageType.TOOL_USE_REQUEST,
            {"id": "r", "toolName": "t", "execution": "client"},
            "ToolUseRequest.parameters",
        ),
        (
            MessageType.TOOL_USE_REQUEST,
            {"id": "r", "toolName": "t", "parameters": {}, "execution": "client", "timeoutMs": 0},
            "ToolUseRequest.timeoutMs",
        ),
        (MessageType.TOOL_USE_RESULT, {"id": "r"}, "ToolUseResult.success"),
        (MessageType.TOOL_USE_RESULT, {"id": "r", "success": True, "resultType": 5}, "ToolUseResult.resultType"),
        (MessageType.TOOL_USE_RESULT, {"id": "r", "success": True, "result": [1]}, "ToolUseResult.result"),
        (
            MessageType.TOOL_USE_RESULT,
            {"id": "r", "success": True, "content": [{"type": "binary", "mimeType": "a/b", "data": "AAAA"}]},
            "ToolUseResult.content[0].data",
        ),
        (MessageType.TOOL_USE_RESULT, {"id": "r", "success": True, "content": [{"type": "html"}]}, "content[0].type"),
        (MessageType.TOOL_USE_RESULT, {"id": "r", "success": True, "content": [{"type": "json"}]}, "content[0].value"),
        (MessageType.ERROR, {"id": "e", "code": 1, "message": "m", "severity": 4}, "ErrorMessage.severity"),
        (MessageType.ERROR, {"id": "e", "code": 1.5, "message": "m"}, "ErrorMessage.code"),
        (MessageType.ACKNOWLEDGEMENT, {"acknowledgedStanzaId": "3"}, "Acknowledgement.acknowledgedStanzaId"),
        (MessageType.CONFIGURATION, {"lastSequenceSeen": -1}, "Configuration.lastSequenceSeen"),
        (MessageType.CONFIGURATION, {"features": ["a", 1]}, "Configuration.features[1]"),
        (MessageType.REGISTER_TOOLS, {"groups": [{"name": "IDE"}, "IDE"]}, "RegisterTools.groups[1]"),
        (MessageType.CONSENT_ANSWER, {"id": "k", "allow": True, "scope": "always"}, "ConsentAnswer.scope"),
        (MessageType.RUN_STATUS, {"runId": "r", "status": "paused"}, "RunStatus.status"),
        (MessageType.RUN_STATUS, {"runId": "r", "status": "queued", "position": 0}, "RunStatus.position"),
        (MessageType.RUN_STATUS, {"runId": "r", "status": "queued", "position": "1"}, "RunStatus.position"),
        (
            MessageType.ASSISTANT_SENTENCE,
            {"messageId": "a", "sequence": True, "text": ""},
            "AssistantSentence.sequence",
        ),
    ],
)
def test_a_bad_field_is_refused_with_105_naming_it(type: MessageType, body: dict[str, Any], field: str):
    with pytest.raises(ProtocolError) as refused:
        parse_body(type, body)
    assert refused.value.code == ErrorCode.INVALID_MESSAGE
    assert field in refused.value.message


def test_nulls_count_as_absent_and_unknown_fields_are_ignored():
    body = {"id": "m1", "content": "hi", "previousId": None, "newField": 1}
    assert parse_body(MessageType.USER_MESSAGE, body) == UserMessageBody(id="m1", content="hi")


def test_features_may_be_a_map_of_flags():
    body = {"features": {"consent": True, "audio": False}}
    assert parse_body(MessageType.CONFIGURATION, body) == Configuration(features=("consent",))


def test_error_message_from_a_protocol_error():
    error = ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "say hello first", originating_id=3)
    message = ErrorMessage.from_error(error, id="e1")
    assert message == ErrorMessage(
        id="e1", code=103, message="say hello first", severity=Severity.CRITICAL, recoverable=False, originating_id=3
    )
    assert ProtocolError(ErrorCode.UNKNOWN_TYPE, "new").severity is Severity.WARNING


# -- ToolUseResult and ToolResult ------------------------------------------------------------------

RESULTS = [
    ToolResult.ok("c1", {"eventId": "e_777"}),
    ToolResult.ok("c1", {"answer": 42.5}, message="done", terminal=True),
    ToolResult.ok("c1"),
    ToolResult.failed("c1", "Invalid date format", code="invalid_parameters"),
    ToolResult.failed("c1", "Calendar service unavailable", needs_followup=False),
    ToolResult.failed("c1", "slow down", code="rate_limited"),
    ToolResult.canceled("c1", "user pressed stop"),
    ToolResult.timeout("c1", 5000),
    ToolResult.timeout("c1", 5000, effect_unknown=True),
    ToolResult.denied("c1", "DeleteFile", "the user said no"),
    ToolResult.denied("c1", "DeleteFile", "not today", needs_followup=False),
]


@pytest.mark.parametrize("result", RESULTS, ids=lambda result: f"{result.type.name}")
def test_tool_result_survives_the_wire(result: ToolResult):
    message = result_message(result, "req_1")
    again = decode(encode(Envelope(-1, "c", message))).message
    assert isinstance(again, ToolUseResult)
    assert tool_result(again, call_id="c1", tool="DeleteFile") == result


def test_a_value_that_is_not_a_map_travels_as_value():
    result = ToolResult.ok("c1", ["not", "a", "map"], message="done", terminal=True)
    message = result_message(result, "req_1")
    assert message.to_body() == {
        "id": "req_1",
        "success": True,
        "result": {"value": ["not", "a", "map"]},
        "terminal": True,
        "message": "done",
    }
    assert tool_result(message, call_id="c1") == result


def test_seed_001_body_is_the_body_of_an_error():
    result = ToolResult.failed("c1", "File not found", code="execution_error")
    assert result_message(result, "req_1").to_body() == {
        "id": "req_1",
        "success": False,
        "errorCode": "execution_error",
        "errorMessage": "File not found",
    }


def test_result_type_is_sent_only_when_the_code_does_not_imply_it():
    assert result_message(ToolResult.timeout("c1", 10), "r").result_type is None
    mislabeled = ToolResult.failed("c1", "took too long", code="timeout")
    message = result_message(mislabeled, "r")
    assert message.result_type == 1 and message.error_code == "timeout"
    assert tool_result(message, call_id="c1") == mislabeled


def test_an_explicit_result_type_wins_over_a_custom_code():
    message = ToolUseResult(id="r", success=False, error_code="policy_refused", error_message="no", result_type=4)
    result = tool_result(message, call_id="c1", tool="Del")
    assert (result.type, result.payload(), result.wire_code) == (
        ResultType.DENIED,
        {"denied": {"tool": "Del", "reason": "no"}},
        "policy_refused",
    )


def test_a_denial_with_a_custom_code_round_trips_through_the_message():
    denied = failure_result("c1", "policy_refused", "no", type=ResultType.DENIED, tool="Del")
    assert tool_result(result_message(denied, "r"), call_id="c1", tool="Del") == denied


def test_a_failed_result_may_carry_its_seed_000_payload():
    payload = {"timeout": {"durationMs": 5000, "effectUnknown": True}}
    message = ToolUseResult(id="r", success=False, error_code="timeout", error_message="slow", result=payload)
    assert tool_result(message, call_id="c1").payload() == payload


def test_content_and_augmentation_carry_the_client_tools_shapes():
    message = decode(hex_bytes("tool_use_result_content")).message
    assert isinstance(message, ToolUseResult) and message.augmentation is not None
    response = ClientToolResponse.from_dict(
        {"requestId": message.id, "content": list(message.content), "augmentation": message.augmentation}
    )
    assert [item.type for item in response.content] == ["text", "json", "binary"]
    assert Augmentation.from_dict(message.augmentation).expand_tool_groups == ("IDE",)


def test_register_tools_groups_are_client_tool_group_dicts():
    message = decode(hex_bytes("register_tools")).message
    assert isinstance(message, RegisterTools)
    [group] = [ClientToolGroup.from_dict(group) for group in message.groups]
    assert group.to_dict() == message.groups[0]
    assert [tool.name for tool in group.tools] == ["OpenFile", "DeleteFile"]


def test_a_queued_run_status_on_the_wire():
    status = RunStatus(run_id="run_1", status="queued", position=2, message_id="msg_1")
    frame = encode(Envelope(0, "c", status))
    # unnumbered (stanzaId 0), type 104 (a positive fixint), the position a positive fixint
    assert frame == (
        b"\x84\xa8stanzaId\x00\xaeconversationId\xa1c\xa4type\x68\xa4body\x84"
        b"\xa5runId\xa5run_1\xa6status\xa6queued\xa9messageId\xa5msg_1\xa8position\x02"
    )
    assert decode(frame).message == status
    assert "position" not in RunStatus(run_id="r", status="started").to_body()


def test_server_busy_is_a_recoverable_error():
    refused = ProtocolError(ErrorCode.SERVER_BUSY, "server busy")
    assert ErrorCode.SERVER_BUSY == 503
    assert refused.recoverable and refused.severity == Severity.ERROR
