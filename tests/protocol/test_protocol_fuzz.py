"""Fuzzing: over 10,000 random and mutated frames into `decode()` and `Connection.receive()`.

The properties: `decode` raises nothing but `ProtocolError` (and never 501, which marks a bug in
a body reader); `receive` never raises, answers each refused frame with exactly one ErrorMessage
(a duplicate gets none), and stays usable after a recoverable error.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from protocol_support import CONVERSATION, GOOD, errors_in, hex_bytes, open_pair, pack

from toolwire.protocol import (
    Connection,
    Envelope,
    ErrorCode,
    ErrorMessage,
    MessageType,
    ProtocolError,
    UserMessageBody,
    decode,
    encode,
    read_frame,
)

FRAMES = [hex_bytes(entry["name"]) for entry in GOOD]
FUZZ = settings(derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _mutated(seed: int) -> bytes:
    """A valid fixture frame with one to four flips, truncations, insertions, deletions or overwrites."""
    rng = random.Random(seed)
    data = bytearray(rng.choice(FRAMES))
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        match rng.choice(["flip", "truncate", "insert", "delete", "overwrite"]):
            case "flip" if at < len(data):
                data[at] ^= 1 << rng.randint(0, 7)
            case "truncate":
                del data[at:]
            case "insert":
                data[at:at] = rng.randbytes(rng.randint(1, 8))
            case "delete":
                del data[at : at + rng.randint(1, 8)]
            case _:
                data[at : at + 1] = bytes([rng.choice([0x00, 0x7F, 0x80, 0x90, 0xC0, 0xC1, 0xD4, 0xDD, 0xFF])])
    return bytes(data)


# Values at the edges of what the body readers check.
_VALUES = (
    [
        None, True, False, 0, 1, -1, 3, 5, 2**31, -(2**63), 1.5, float("inf"), "", "x", "client", "server",
        "either", "thread", "once", "started", "text", "json", "binary", "timeout", "12", b"", b"\x00",
        [], [1], ["a"], [{}], [None], {}, {"a": 1}, {"name": "IDE"}, {"value": None}, {"type": "text", "text": 1},
        [{"type": "binary", "mimeType": "a/b", "data": b"x"}], [{"type": "json"}], {"consent": True},
    ]
)  # fmt: skip
_KEYS = (
    [
        "id", "content", "previousId", "toolName", "parameters", "arguments", "execution", "timeoutMs", "callId",
        "success", "result", "errorCode", "errorMessage", "resultType", "needsFollowup", "terminal", "message",
        "augmentation", "requestId", "code", "severity", "recoverable", "originatingId", "acknowledgedStanzaId",
        "conversationId", "lastSequenceSeen", "features", "messageId", "sequence", "text", "isFinal", "groups",
        "expandedContainers", "resetClientState", "ok", "allow", "scope", "runId", "status", "mode", "reason",
    ]
)  # fmt: skip


def _random_envelope(seed: int) -> bytes:
    """An envelope of a known (or unknown) type whose body has edge values under real field names."""
    rng = random.Random(seed)
    wire: dict[str, Any] = {
        "stanzaId": rng.randint(-5, 5),
        "conversationId": rng.choice([CONVERSATION, "", "other"]),
        "type": rng.choice([*map(int, MessageType), 0, 42, 65535]),
        "body": {rng.choice(_KEYS): rng.choice(_VALUES) for _ in range(rng.randint(0, 10))},
    }
    return pack(wire)


# Hypothesis chooses the seeds (deterministically); plain `random` builds each frame from its seed,
# which is ten times faster than drawing every byte and key through strategies.
_SEEDS = st.integers(0, 2**64)
mutated_frames = _SEEDS.map(_mutated)
random_envelopes = _SEEDS.map(_random_envelope)


def _decode_raises_only_protocol_errors(data: bytes) -> ProtocolError | None:
    try:
        decode(data)
    except ProtocolError as error:
        assert error.code != ErrorCode.INTERNAL, error.message
        assert 100 <= error.code < 200
        return error
    return None


@settings(FUZZ, max_examples=3_000)
@given(st.binary(max_size=300))
def test_random_bytes_never_escape_decode(data: bytes):
    _decode_raises_only_protocol_errors(data)


@settings(FUZZ, max_examples=3_000)
@given(mutated_frames)
def test_mutated_fixture_frames_never_escape_decode(data: bytes):
    _decode_raises_only_protocol_errors(data)


@settings(FUZZ, max_examples=3_000)
@given(random_envelopes)
def test_random_bodies_never_escape_decode(data: bytes):
    if _decode_raises_only_protocol_errors(data) is None:
        again = encode(decode(data))
        assert encode(decode(again)) == again


def _is_duplicate(server: Connection, data: bytes) -> bool:
    try:
        frame = read_frame(data)
    except ProtocolError:
        return False
    state = server.state()
    assert state is not None
    numbered = frame.stanza_id > 0 and frame.type not in (MessageType.CONFIGURATION, MessageType.ACKNOWLEDGEMENT)
    return numbered and frame.stanza_id <= state.last_seen


@settings(FUZZ, max_examples=3_000)
@given(st.lists(mutated_frames | random_envelopes, min_size=1, max_size=4))
def test_a_connection_answers_each_bad_frame_once_and_stays_usable(frames: list[bytes]):
    client, server = open_pair()
    server.receive(client.send(UserMessageBody(id="m0", content="first")))  # so that stanza 1 is a duplicate
    for data in frames:
        duplicate, refused = _is_duplicate(server, data), _decode_raises_only_protocol_errors(data)
        received = server.receive(data)
        errors = errors_in(received)
        assert len(errors) <= 1
        if refused is not None and not duplicate:
            assert len(errors) == 1
            assert isinstance(errors[0].message, ErrorMessage) and errors[0].stanza_id == 0
        if received.close:  # only a peer's own final ErrorMessage closes an open connection
            assert [envelope.type for envelope in received.messages] == [MessageType.ERROR]
            return
    state = server.state()
    assert state is not None
    follow_up = Envelope(state.last_seen + 1, CONVERSATION, UserMessageBody(id="m_ok", content="still there?"))
    assert [envelope.message for envelope in server.receive(encode(follow_up)).messages] == [follow_up.message]
