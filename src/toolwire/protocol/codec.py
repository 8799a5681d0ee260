"""MessagePack with limits: `encode(envelope) -> bytes` and `decode(data) -> Envelope`.

`decode` reads a frame from a peer that may be hostile: every length, the number of containers,
the memory they take once built and the nesting depth are bounded before anything large is built
(a 0.95 MiB frame of a million empty maps would otherwise become ~70 MiB of Python objects, and
one of short arrays of empty maps 4.5 MiB within the container count), map keys must be unique strings,
extension types and trailing bytes are refused, and every failure is a `ProtocolError` with
the code of `errors.ErrorCode`, never another exception.

One extension is read: type 0 with the single byte 0x00 (`d4 00 00`), which msgpackr, a
JavaScript encoder, writes for `undefined`. As a map value it makes the key absent, as
`JSON.stringify` would; as an array item it reads as nil. Every other extension is refused (101).

`read_frame` is the first half of `decode`: it checks the bytes and the envelope and keeps the
body unread, so that a connection can drop a duplicate stanza before reading its body.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, NoReturn, cast

import msgpack  # pyright: ignore[reportMissingTypeStubs]

from .bodies import CONVERSATION_IN_BODY, Envelope, MessageBody, parse_body
from .error_codes import ErrorCode, ProtocolError
from .wire import kind

__all__ = ["DEFAULT_LIMITS", "Frame", "Limits", "decode", "encode", "read_frame"]

_packb = cast("Callable[..., bytes]", msgpack.packb)  # pyright: ignore[reportUnknownMemberType]
_unpackb = cast("Callable[..., Any]", msgpack.unpackb)  # pyright: ignore[reportUnknownMemberType]
MiB: Final = 1024 * 1024
_INT32: Final = 2**31 - 1
_TRACE_FIELDS: Final = (("trace_id", "messaging.trace_id"), ("span_id", "messaging.span_id"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Bounds on what `decode` accepts from a peer; all configurable."""

    max_frame_bytes: int = MiB
    """Bytes in one frame (the WebSocket message)."""
    max_str_len: int = MiB
    """Bytes in one string."""
    max_bin_len: int = MiB
    """Bytes in one binary value (a file or image a client tool returns)."""
    max_array_len: int = 65_536
    """Items in one array."""
    max_map_len: int = 65_536
    """Pairs in one map."""
    max_containers: int = 65_536
    """Maps and arrays in the whole frame: bounds the Python objects a small frame can become."""
    max_container_bytes: int = 3 * MiB // 2
    """Memory the frame's maps and arrays take once built (`sys.getsizeof` of each: an empty map
    is 64 bytes for its one byte on the wire, an array 56 plus 8 per item), counted as they are
    built: decoding the worst 1 MiB frame stays under 2 MiB of containers."""
    max_depth: int = 32
    """Nesting of maps and arrays, the envelope being depth 1."""


DEFAULT_LIMITS: Final = Limits()
"""The defaults of RELIABILITY's table: 1 MiB frames, depth 32, 65,536 items and containers, whose
memory is at most 1.5 MiB."""


@dataclass(frozen=True, slots=True)
class Frame:
    """A frame whose bytes and envelope were checked; the body is not read yet."""

    stanza_id: int
    """As sent; 0 when the peer sent none."""
    conversation_id: str
    """The envelope's conversation id ("" when absent)."""
    type: int
    """The numeric message type, known or not."""
    meta: dict[str, Any]
    """The metadata, with a dialect's top-level trace fields moved in."""
    body: dict[str, Any]
    """The body, unread."""

    def open(self) -> Envelope:
        """Read the body into its message class.

        Raises:
            ProtocolError: 102 for an unknown type, 105 for a bad field; `originating_id` is the
                stanza id.
        """
        try:
            message = parse_body(self.type, self.body)
            conversation_id = self._conversation_id(message)
        except ProtocolError as exc:
            raise ProtocolError(exc.code, exc.message, exc.recoverable, self.stanza_id or None) from None
        except Exception:  # a bug here must not escape `decode`; the fuzz tests look for this code
            message = "the message could not be read"
            raise ProtocolError(ErrorCode.INTERNAL, message, True, self.stanza_id or None) from None
        return Envelope(self.stanza_id, conversation_id, message, self.meta)

    def _conversation_id(self, message: MessageBody) -> str:
        in_body = self.body.get("conversationId")
        if message.type not in CONVERSATION_IN_BODY or in_body is None or in_body == self.conversation_id:
            return self.conversation_id
        if not isinstance(in_body, str):
            _refuse(ErrorCode.INVALID_MESSAGE, f"body.conversationId must be a string, got {kind(in_body)}")
        if self.conversation_id:
            _refuse(ErrorCode.INVALID_MESSAGE, "body.conversationId differs from the envelope's conversationId")
        return in_body


def encode(envelope: Envelope) -> bytes:
    """Return the MessagePack frame of an envelope (deterministic: the same envelope, the same bytes)."""
    return _packb(envelope.to_map(), use_bin_type=True)


def decode(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Envelope:
    """Read one frame from a peer.

    Raises:
        ProtocolError: For every frame that is not a valid envelope; nothing else escapes.
    """
    return read_frame(data, limits).open()


def read_frame(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Frame:
    """Check a frame's bytes and envelope, leaving the body unread (see `Frame.open`).

    Raises:
        ProtocolError: 104 too large, 101 not MessagePack (or an extension type, a non-string or
            repeated key, trailing bytes), 106 a limit, 105 an envelope field.
    """
    try:
        size = len(data)
    except Exception:
        _refuse(ErrorCode.MALFORMED_FRAME, f"a frame must be bytes, got {kind(data)}")
    if size > limits.max_frame_bytes:
        _refuse(ErrorCode.FRAME_TOO_LARGE, f"frame of {size} bytes exceeds the limit of {limits.max_frame_bytes}")
    root, containers = _unpack(data, limits)
    if containers > limits.max_depth:  # nesting cannot be deeper than the number of containers
        _check_depth(root, limits.max_depth)
    return _envelope(root)


class _Absent:
    """What `undefined` (extension 0, byte 0x00) reads as until its map or array is built."""

    __slots__ = ()


_ABSENT: Final = _Absent()
_UNDEFINED: Final = (0, b"\x00")
"""msgpackr's `undefined`: extension type 0 with one byte 0."""


class _Budget:
    """Counts containers and their memory while msgpack builds them; checks keys, places `undefined`.

    Each container is charged as soon as it is built, before its parent is: a frame over budget
    is refused having built at most the budget and one container more.
    """

    __slots__ = ("absent", "bytes_left", "left")

    def __init__(self, containers: int, container_bytes: int) -> None:
        self.left = containers
        self.bytes_left = container_bytes
        self.absent = 0
        """`undefined` values read and not yet dropped from their map (or turned nil in an array)."""

    def undefined(self, code: int, data: bytes) -> _Absent:
        """The ext_hook: msgpackr's `undefined` reads as absent; any other extension is refused."""
        if (code, data) != _UNDEFINED:
            _refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted")
        self.absent += 1
        return _ABSENT

    def _spend(self, container: dict[str, Any] | list[Any]) -> None:
        self.left -= 1
        self.bytes_left -= sys.getsizeof(container)
        if self.left < 0 or self.bytes_left < 0:
            _refuse(ErrorCode.LIMIT_EXCEEDED, "too many maps and arrays in one frame")

    def map(self, pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
        built = dict(pairs)
        self._spend(built)
        if len(built) != len(pairs):
            _refuse(ErrorCode.MALFORMED_FRAME, "a map repeats a key")
        if bytes in map(type, built):  # `strict_map_key` lets only str and bytes keys through
            _refuse(ErrorCode.MALFORMED_FRAME, "map keys must be strings")
        if self.absent:  # msgpack builds values before their map: an `undefined` here is one of these
            for key in [key for key, value in pairs if value is _ABSENT]:
                del built[key]
                self.absent -= 1
        return built

    def array(self, items: list[Any]) -> list[Any]:
        self._spend(items)
        if self.absent:  # no key to leave out: nil, as JSON writes `undefined` in an array
            for index, item in enumerate(items):
                if item is _ABSENT:
                    items[index] = None
                    self.absent -= 1
        return items


def _unpack(data: bytes, limits: Limits) -> tuple[Any, int]:
    """The frame's value and how many maps and arrays it holds."""
    budget = _Budget(limits.max_containers, limits.max_container_bytes)
    try:
        root = _unpackb(
            data,
            raw=False,
            strict_map_key=True,
            use_list=True,
            object_pairs_hook=budget.map,
            list_hook=budget.array,
            ext_hook=budget.undefined,
            max_str_len=limits.max_str_len,
            max_bin_len=limits.max_bin_len,
            max_array_len=limits.max_array_len,
            max_map_len=limits.max_map_len,
            max_ext_len=len(_UNDEFINED[1]),
        )
        return (None if root is _ABSENT else root), limits.max_containers - budget.left
    except ProtocolError:
        raise
    except msgpack.ExtraData:
        _refuse(ErrorCode.MALFORMED_FRAME, "trailing bytes after the MessagePack value")
    except UnicodeDecodeError:
        _refuse(ErrorCode.MALFORMED_FRAME, "a string is not valid UTF-8")
    except msgpack.StackError:
        _refuse(ErrorCode.LIMIT_EXCEEDED, f"maps and arrays nested deeper than {limits.max_depth}")
    except ValueError as exc:
        # msgpack names the limit in its message: "70000 exceeds max_array_len(65536)".
        text = str(exc)
        if "max_ext_len" in text:
            _refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted")
        if "exceeds max_" in text:
            _refuse(ErrorCode.LIMIT_EXCEEDED, text[:120])
        if "map key" in text:
            _refuse(ErrorCode.MALFORMED_FRAME, "map keys must be strings")
        _refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value (truncated, or invalid bytes)")
    except Exception:
        # Don't include exception details, which may be security-sensitive.
        _refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value")


def _check_depth(root: Any, max_depth: int) -> None:
    """Refuse nesting deeper than `max_depth`, without recursion."""
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            _refuse(ErrorCode.LIMIT_EXCEEDED, f"maps and arrays nested deeper than {max_depth}")
        children: Iterable[Any] = cast("dict[str, Any]", node).values() if isinstance(node, dict) else ()
        if isinstance(node, list):
            children = cast("list[Any]", node)
        for child in children:
            if isinstance(child, dict | list):
                stack.append((cast(Any, child), depth + 1))


def _envelope(root: Any) -> Frame:
    if not isinstance(root, dict):
        _refuse(ErrorCode.INVALID_MESSAGE, f"a frame must be a map (the envelope), got {kind(root)}")
    wire = cast("dict[str, Any]", root)
    stanza_id = wire.get("stanzaId", 0)  # peers of one dialect number nothing
    if not isinstance(stanza_id, int) or isinstance(stanza_id, bool) or not -_INT32 <= stanza_id <= _INT32:
        _refuse(ErrorCode.INVALID_MESSAGE, f"envelope.stanzaId must be an int32, got {kind(stanza_id)}")
    conversation_id = wire.get("conversationId")
    if conversation_id is None:
        conversation_id = ""
    elif not isinstance(conversation_id, str):
        _refuse(ErrorCode.INVALID_MESSAGE, f"envelope.conversationId must be a string, got {kind(conversation_id)}")
    message_type = wire.get("type")
    if not isinstance(message_type, int) or isinstance(message_type, bool) or not 0 <= message_type <= 0xFFFF:
        _refuse(ErrorCode.INVALID_MESSAGE, f"envelope.type must be a uint16, got {kind(message_type)}", stanza_id)
    meta, body = _map_field(wire, "meta", stanza_id), _map_field(wire, "body", stanza_id)
    for top, inside in _TRACE_FIELDS:
        # A dialect puts tracing beside the envelope's fields instead of in meta.
        if top in wire and inside not in meta:
            meta = {**meta, inside: wire[top]}
    return Frame(stanza_id, conversation_id, message_type, meta, body)


def _map_field(wire: dict[str, Any], name: str, stanza_id: int) -> dict[str, Any]:
    value: Any = wire.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        _refuse(ErrorCode.INVALID_MESSAGE, f"envelope.{name} must be a map, got {kind(value)}", stanza_id)
    return cast("dict[str, Any]", value)


def _refuse(code: ErrorCode, message: str, stanza_id: int = 0) -> NoReturn:
    raise ProtocolError(code, message, None, stanza_id or None)
