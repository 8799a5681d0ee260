"""What toolwire reads from other implementations of the protocol: msgpackr's `undefined`, and the
spellings of a deployed dialect (a failure's `error`, `lastSeenStanzaId`, an empty Acknowledgement)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from protocol_support import CONVERSATION, open_pair, pack

from toolwire.protocol import (
    Acknowledgement,
    ControlStop,
    ErrorCode,
    Limits,
    MessageType,
    ProtocolError,
    ToolUseResult,
    UserMessageBody,
    decode,
    tool_result,
)

UNDEFINED = msgpack.ExtType(0, b"\x00")
"""msgpackr's `undefined`: fixext 1, type 0, data 0x00 (`d4 00 00`)."""


def _frame(body: Any, *, type: int = 2, **envelope: Any) -> bytes:
    return pack({"stanzaId": 1, "conversationId": "c", "type": type, **envelope, "body": body})


def _refused(data: bytes, limits: Limits | None = None) -> ProtocolError:
    with pytest.raises(ProtocolError) as refused:
        decode(data) if limits is None else decode(data, limits)
    return refused.value


def _nested_maps(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"x": value}
    return value


# -- undefined (d4 00 00) -------------------------------------------------------------------------


def test_undefined_as_a_field_makes_it_absent():
    message = decode(_frame({"id": "m1", "content": "hi", "previousId": UNDEFINED})).message
    assert message == UserMessageBody(id="m1", content="hi")


def test_undefined_as_an_unknown_field_is_ignored_like_it():
    message = decode(_frame({"targetId": UNDEFINED, "reason": "stop"}, type=MessageType.CONTROL_STOP)).message
    assert message == ControlStop(reason="stop")


def test_undefined_in_meta_is_absent_from_it():
    assert decode(_frame({"id": "m1", "content": "hi"}, meta={"timestamp": 1, "trace": UNDEFINED})).meta == {
        "timestamp": 1
    }


def test_undefined_as_an_envelope_field_makes_it_absent():
    envelope = decode(_frame({"id": "m1", "content": "hi"}, meta=UNDEFINED, stanzaId=UNDEFINED))
    assert (envelope.stanza_id, envelope.meta) == (0, {})


def test_undefined_inside_a_result_is_dropped_from_its_map():
    body = {"id": "r1", "success": True, "result": {"title": "Lunch", "location": UNDEFINED}}
    assert decode(_frame(body, type=MessageType.TOOL_USE_RESULT)).message == ToolUseResult(
        id="r1", success=True, result={"title": "Lunch"}
    )


def test_undefined_as_an_array_item_reads_as_nil():
    body = {"id": "r1", "success": True, "result": {"events": [1, UNDEFINED, 3]}}
    message = decode(_frame(body, type=MessageType.TOOL_USE_RESULT)).message
    assert isinstance(message, ToolUseResult) and message.result == {"events": [1, None, 3]}


def test_undefined_at_depth_32_is_dropped():
    # The envelope is depth 1 and the body depth 2: 30 more maps make 32.
    message = decode(_frame({"id": "m1", "content": "hi", "deep": _nested_maps(30, UNDEFINED)})).message
    assert message == UserMessageBody(id="m1", content="hi")


def test_a_required_field_sent_undefined_is_missing():
    error = _refused(_frame({"id": "m1", "content": UNDEFINED}))
    assert error.code == ErrorCode.INVALID_MESSAGE and error.message == "UserMessage.content must be a string, missing"


def _with_extension(extension: bytes) -> bytes:
    """A UserMessage whose `previousId` is the raw extension `extension`."""
    return _frame({"id": "m1", "content": "hi", "previousId": UNDEFINED}).replace(b"\xd4\x00\x00", extension)


def test_undefined_in_its_ext_8_form_reads_the_same():
    assert decode(_with_extension(b"\xc7\x01\x00\x00")).message == UserMessageBody(id="m1", content="hi")


@pytest.mark.parametrize(
    "extension",
    [
        b"\xd4\x00\x01",
        b"\xd4\x01\x00",
        b"\xd4\xff\x00",
        b"\xc7\x00\x00",
        b"\xd5\x00\x00\x00",
        b"\xd6\xff\x00\x00\x00\x00",
    ],
    ids=["type-0-byte-1", "type-1", "type-minus-1", "type-0-empty", "fixext-2", "timestamp"],
)
def test_every_other_extension_is_still_refused_with_101(extension: bytes):
    error = _refused(_with_extension(extension))
    assert (error.code, error.recoverable) == (ErrorCode.MALFORMED_FRAME, True)


def test_undefined_as_a_map_key_is_refused_with_101():
    frame = pack({"stanzaId": 1, "type": 2, "body": {}})[:-1] + b"\x81\xd4\x00\x00\xa1x"
    assert _refused(frame).code == ErrorCode.MALFORMED_FRAME


def test_a_key_repeated_with_an_undefined_value_is_refused_with_101():
    body = b"\x83\xa2id\xa2m1\xa7content\xa2hi\xa7content\xd4\x00\x00"
    frame = pack({"stanzaId": 1, "type": 2, "body": {}})[:-1] + body
    error = _refused(frame)
    assert error.code == ErrorCode.MALFORMED_FRAME and "repeats a key" in error.message


def test_an_undefined_frame_is_refused_with_105():
    assert _refused(b"\xd4\x00\x00").code == ErrorCode.INVALID_MESSAGE


def test_a_map_left_empty_by_undefined_still_counts_for_the_depth_limit():
    assert _refused(_frame({"id": "m1", "content": "hi", "deep": _nested_maps(31, UNDEFINED)})).code == 106


def test_maps_left_empty_by_undefined_still_count_for_the_container_budget():
    data = _frame({"id": "m1", "content": "hi", "many": [{"x": UNDEFINED}] * 10})
    assert _refused(data, Limits(max_containers=12)).code == ErrorCode.LIMIT_EXCEEDED
    assert decode(data, Limits(max_containers=13)).type is MessageType.USER_MESSAGE


# -- a failure's `error` text -------------------------------------------------------------------


def _result(**body: Any) -> ToolUseResult:
    message = decode(_frame({"id": "r1", **body}, type=MessageType.TOOL_USE_RESULT)).message
    assert isinstance(message, ToolUseResult)
    return message


def test_a_failures_error_text_is_read_as_its_error_message():
    assert _result(success=False, error="Disk full").error_message == "Disk full"


def test_the_error_text_is_what_the_model_sees():
    assert tool_result(_result(success=False, error="Disk full")).error == "Disk full"


def test_error_message_wins_over_error_text():
    assert _result(success=False, errorMessage="Quota", error="Disk full").error_message == "Quota"


def test_the_error_text_of_a_success_is_ignored():
    assert _result(success=True, result={"n": 1}, error="stale").error_message is None


def test_an_error_that_is_not_text_is_ignored():
    assert _result(success=False, error={"message": "Disk full"}).error_message is None


# -- Acknowledgement: `lastSeenStanzaId`, an empty body ------------------------------------------------


def _ack(body: dict[str, Any]) -> bytes:
    return _frame(body, type=MessageType.ACKNOWLEDGEMENT, stanzaId=0)


def test_last_seen_stanza_id_is_read_as_the_acknowledged_stanza():
    assert decode(_ack({"lastSeenStanzaId": -5})).message == Acknowledgement(acknowledged_stanza_id=-5)


def test_acknowledged_stanza_id_wins_over_last_seen():
    message = decode(_ack({"acknowledgedStanzaId": -3, "lastSeenStanzaId": -5})).message
    assert message == Acknowledgement(acknowledged_stanza_id=-3)


def test_an_empty_acknowledgement_acknowledges_nothing():
    assert decode(_ack({})).message == Acknowledgement(acknowledged_stanza_id=0)


def test_a_last_seen_stanza_id_that_is_not_an_integer_is_refused_with_105():
    error = _refused(_ack({"lastSeenStanzaId": "5"}))
    assert error.code == ErrorCode.INVALID_MESSAGE and "Acknowledgement.lastSeenStanzaId" in error.message


def _server_with_three_sent() -> Any:
    _, server = open_pair()
    for n in range(3):
        server.send(UserMessageBody(id=f"a{n}", content="x"))
    return server


def test_a_last_seen_acknowledgement_drops_the_frames_it_names_from_the_outbox():
    server = _server_with_three_sent()
    received = server.receive(
        pack({"stanzaId": 0, "conversationId": CONVERSATION, "type": 8, "body": {"lastSeenStanzaId": 2}})
    )
    assert received.errors == () and [stanza for stanza, _ in server.state().outbox] == [3]


def test_an_empty_acknowledgement_is_not_refused_and_drops_nothing():
    server = _server_with_three_sent()
    received = server.receive(pack({"stanzaId": 0, "conversationId": CONVERSATION, "type": 8, "body": {}}))
    assert (received.replies, received.errors) == ((), ())
    assert [stanza for stanza, _ in server.state().outbox] == [1, 2, 3]
