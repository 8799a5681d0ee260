"""The codec: limits, the MessagePack subset, envelope checks, dialect spellings."""

from __future__ import annotations

import subprocess
import sys
import time
import tracemalloc
from typing import Any

import msgpack
import pytest
from protocol_support import pack

import toolwire.protocol as protocol
from toolwire.protocol import (
    DEFAULT_LIMITS,
    Envelope,
    ErrorCode,
    ErrorMessage,
    Limits,
    MessageType,
    ProtocolError,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
    decode,
    encode,
    read_frame,
)

MIB = 1024 * 1024


def _frame(body: dict[str, Any], *, type: int = 2, **envelope: Any) -> bytes:
    wire = {"stanzaId": 1, "conversationId": "c", "type": type, **envelope, "body": body}
    return pack(wire)


def _refused(data: Any, limits: Limits = DEFAULT_LIMITS) -> ProtocolError:
    with pytest.raises(ProtocolError) as refused:
        decode(data, limits)
    return refused.value


def _user(content: Any = "hi", **extra: Any) -> bytes:
    return _frame({"id": "m1", "content": content, **extra})


def test_encode_then_decode_gives_the_envelope_back():
    envelope = Envelope(3, "c", UserMessageBody(id="m1", content="hi", previous_id="m0"), {"timestamp": 1})
    assert decode(encode(envelope)) == envelope


def test_a_frame_of_1_mib_is_accepted_and_one_byte_more_is_refused_with_104():
    padding = "x" * (MIB - len(_user("")) - 4)  # str32 header: 5 bytes instead of 1
    exact = _user(padding)
    assert len(exact) == MIB
    assert decode(exact).message == UserMessageBody(id="m1", content=padding)
    error = _refused(exact + b"\xc0")
    assert (error.code, error.recoverable) == (ErrorCode.FRAME_TOO_LARGE, True)


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


def test_depth_32_is_accepted_and_33_refused_with_106():
    # The envelope is depth 1 and the body depth 2: 30 more arrays make 32.
    assert decode(_user(deep=_nested(30))).type is MessageType.USER_MESSAGE
    assert _refused(_user(deep=_nested(31))).code == ErrorCode.LIMIT_EXCEEDED


def test_depth_beyond_msgpacks_own_stack_is_refused_with_106():
    data = b"\x82\xa4type\x02\xa4body\x81\xa4deep" + b"\x91" * 5000 + b"\xc0"
    assert _refused(data).code == ErrorCode.LIMIT_EXCEEDED


def test_a_million_empty_maps_in_less_than_1_mib_are_refused_at_once():
    data = (
        b"\x83\xa4type\x02\xa8stanzaId\x01\xa4body\x81\xa1x\xdd" + (1_000_000).to_bytes(4, "big") + b"\x80" * 1_000_000
    )
    assert len(data) < MIB
    started = time.perf_counter()
    assert _refused(data).code == ErrorCode.LIMIT_EXCEEDED
    assert time.perf_counter() - started < 0.5


def test_a_million_empty_maps_split_into_short_arrays_are_refused_by_the_container_budget():
    data = _user(chunks=[[{}] * 10_000] * 99)
    assert len(data) < MIB
    error = _refused(data)
    assert error.code == ErrorCode.LIMIT_EXCEEDED and "too many maps and arrays" in error.message


def _small_arrays_of_empty_maps(size: int, per_array: int) -> bytes:
    """A UserMessage frame of about `size` bytes: arrays of `per_array` empty maps, in chunks
    short enough for `max_array_len`."""
    count = (size - 100) // (per_array + 1)  # a fixarray header and one byte per empty map
    arrays = [[{}] * per_array for _ in range(count)]
    chunks = [arrays[at : at + 50_000] for at in range(0, count, 50_000)]
    return _user(chunks=chunks)


def _peak_decoding(data: bytes) -> int:
    """Bytes allocated at the peak of decoding `data`, refused or not (tracemalloc)."""
    tracemalloc.start()
    try:
        try:
            decode(data)
        except ProtocolError:
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("per_array", [1, 2, 15])
def test_a_1_mib_frame_of_small_arrays_of_empty_maps_takes_under_twice_its_size_to_decode(per_array: int):
    data = _small_arrays_of_empty_maps(MIB, per_array)
    assert MIB - 200 < len(data) <= MIB
    assert _peak_decoding(data) < 2 * len(data)


def test_a_frame_whose_containers_take_too_much_memory_is_refused_with_106():
    error = _refused(_small_arrays_of_empty_maps(MIB, 15))
    assert error.code == ErrorCode.LIMIT_EXCEEDED and "too many maps and arrays" in error.message


def test_the_container_memory_budget_is_configurable():
    data = _user(items=[{}] * 100)  # 100 maps of 64 bytes and an array of 100 slots: ~7 KiB
    assert decode(data).type is MessageType.USER_MESSAGE
    assert _refused(data, Limits(max_container_bytes=4096)).code == ErrorCode.LIMIT_EXCEEDED


def test_a_256_kib_tool_result_of_records_is_within_the_container_memory_budget():
    record = {"name": "Ada Lovelace", "id": 123456, "email": "ada@example.com", "active": True, "score": 1.5}
    records = [dict(record, id=n) for n in range(3_600)]
    data = pack({"stanzaId": 1, "type": 7, "body": {"id": "req_1", "success": True, "result": {"value": records}}})
    assert 240 * 1024 < len(data) <= 256 * 1024
    assert decode(data).type is MessageType.TOOL_USE_RESULT


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        ("x" * 11, "max_str_len"),
        (b"x" * 11, "max_bin_len"),
        (list(range(11)), "max_array_len"),
        ({str(key): key for key in range(11)}, "max_map_len"),
    ],
)
def test_each_length_limit_is_refused_with_106(value: Any, limit: str):
    limits = Limits(**{limit: 10})
    error = _refused(_user(extra=value), limits)
    assert error.code == ErrorCode.LIMIT_EXCEEDED and limit in error.message


def test_extension_types_are_refused_with_101():
    assert _refused(pack({"type": 2, "body": msgpack.ExtType(5, b"abc")})).code == ErrorCode.MALFORMED_FRAME
    assert _refused(pack({"type": 2, "body": msgpack.ExtType(5, b"")})).code == ErrorCode.MALFORMED_FRAME


def test_trailing_bytes_are_refused_with_101():
    error = _refused(_user() + b"\x00")
    assert error.code == ErrorCode.MALFORMED_FRAME and "trailing" in error.message


def test_non_string_keys_are_refused_with_101():
    assert _refused(pack({"type": 2, "body": {1: "one"}})).code == 101
    assert _refused(pack({"type": 2, "body": {b"id": "m1"}})).code == ErrorCode.MALFORMED_FRAME


def test_truncated_frames_and_non_bytes_are_refused_with_101():
    assert _refused(_user()[:-3]).code == ErrorCode.MALFORMED_FRAME
    assert _refused(b"").code == ErrorCode.MALFORMED_FRAME
    assert _refused("not bytes").code == ErrorCode.MALFORMED_FRAME


def test_unknown_type_is_refused_with_a_recoverable_102_naming_the_stanza():
    error = _refused(_frame({}, type=4242))
    assert (error.code, error.recoverable, error.originating_id) == (ErrorCode.UNKNOWN_TYPE, True, 1)


def test_a_bad_field_is_refused_with_105_naming_it():
    error = _refused(_user(content=["not", "text"]))
    assert (error.code, error.recoverable) == (ErrorCode.INVALID_MESSAGE, True)
    assert error.message == "UserMessage.content must be a string, got an array"


@pytest.mark.parametrize(
    ("envelope", "field"),
    [
        ({"stanzaId": 2**31}, "stanzaId"),
        ({"stanzaId": True}, "stanzaId"),
        ({"conversationId": 7}, "conversationId"),
        ({"type": "2"}, "type"),
        ({"type": 70_000}, "type"),
        ({"meta": []}, "meta"),
        ({"body": "hi"}, "body"),
    ],
)
def test_envelope_fields_of_the_wrong_type_are_refused_with_105(envelope: dict[str, Any], field: str):
    wire = {"stanzaId": 1, "conversationId": "c", "type": 2, "body": {"id": "m1", "content": "hi"}, **envelope}
    error = _refused(pack(wire))
    assert error.code == ErrorCode.INVALID_MESSAGE and f"envelope.{field}" in error.message


def test_a_frame_that_is_not_a_map_is_refused_with_105():
    assert _refused(pack([1, 2])).code == ErrorCode.INVALID_MESSAGE


def test_body_conversation_id_must_agree_with_the_envelope():
    assert decode(_user(conversationId="c")).conversation_id == "c"
    assert _refused(_user(conversationId="other")).code == ErrorCode.INVALID_MESSAGE


def test_bodies_of_types_1_2_3_8_13_repeat_the_conversation_id_second():
    wire = msgpack.unpackb(encode(Envelope(1, "c", UserMessageBody(id="m1", content="hi"))))
    assert list(wire) == ["stanzaId", "conversationId", "type", "body"]
    assert list(wire["body"]) == ["id", "conversationId", "content"]


# -- dialects: accepted, never sent ---------------------------------------------------------------


def test_an_envelope_without_stanza_id_decodes_as_unnumbered():
    data = pack({"conversationId": "c", "type": 2, "body": {"id": "m1", "content": "hi"}})
    assert decode(data).stanza_id == 0


def test_trace_fields_at_top_level_move_into_meta():
    data = _frame({"id": "m1", "content": "hi"}, trace_id="t1", span_id="s1")
    assert decode(data).meta == {"messaging.trace_id": "t1", "messaging.span_id": "s1"}


def test_conversation_id_only_in_the_body_is_taken():
    data = pack({"stanzaId": 1, "type": 2, "body": {"id": "m1", "conversationId": "c9", "content": "hi"}})
    assert decode(data).conversation_id == "c9"


def test_request_arguments_and_message_id_dialect():
    body = {"id": "r1", "messageId": "m7", "toolName": "Open", "arguments": {"path": "a"}, "execution": "client"}
    message = decode(_frame(body, type=6, stanzaId=-1)).message
    assert message == ToolUseRequest(id="r1", tool_name="Open", arguments={"path": "a"}, execution="client")
    assert "arguments" not in message.to_body() and message.to_body()["parameters"] == {"path": "a"}


def test_result_request_id_dialect_names_the_request():
    body = {"id": "own_result_id", "requestId": "r1", "success": True, "result": {"n": 1}}
    message = decode(_frame(body, type=7)).message
    assert message == ToolUseResult(id="r1", success=True, result={"n": 1})


@pytest.mark.parametrize(
    ("code", "expected_code", "expected_message"),
    [("101", 101, "bad"), ("E_PARSE", 0, "E_PARSE: bad"), (101, 101, "bad")],
)
def test_error_message_code_may_be_a_string(code: Any, expected_code: int, expected_message: str):
    body = {"id": "e1", "code": code, "message": "bad", "severity": 2, "recoverable": True}
    message = decode(_frame(body, type=1, stanzaId=-1)).message
    assert isinstance(message, ErrorMessage)
    assert (message.code, message.message) == (expected_code, expected_message)


def test_read_frame_leaves_the_body_unread():
    frame = read_frame(_user(content=5))
    assert (frame.stanza_id, frame.type, frame.body) == (1, 2, {"id": "m1", "content": 5})
    with pytest.raises(ProtocolError):
        frame.open()


def test_protocol_imports_no_io_library():
    code = (
        "import sys, toolwire.protocol; "
        "print([m for m in ('anyio', 'asyncio', 'websockets', 'socket', 'starlette', 'sqlite3') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_protocol_all_is_sorted_and_complete():
    assert protocol.__all__ == sorted(protocol.__all__, key=lambda name: (not name.isupper(), name))
    public = {name for name in vars(protocol) if not name.startswith("_")}
    modules = {"codec", "connection", "published", "error_codes", "extensions", "bodies", "results", "sequencing"}
    assert public - modules - {"tool_use", "wire", "annotations"} == set(protocol.__all__)
