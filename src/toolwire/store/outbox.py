"""What every backend shares of the server's protocol state: its parts, and what a store last saved of it.

A `WireStateStore` keeps the state's header (role, conversation, numbering) apart from the frames
of its outbox, one row each, so that a save writes only what changed since the store's last save
of the conversation (`SavedWire`). `wire_parts` splits a state so, decoding (and so checking)
only the frames that are new. `SqliteStore` (`sqlite_wire`) and `PostgresStore`
(`postgres_wire`) write these parts each in their own SQL.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Final, cast

from ..errors import EnvelopeError

__all__ = ["KEPT_OUTBOXES", "NUMBERING", "SavedWire", "WireParts", "frame_bytes", "wire_parts"]

NUMBERING: Final = ("nextStanza", "lastSeen")
KEPT_OUTBOXES: Final = 1024
"""Threads whose last saved outbox a store remembers, to write only what changed (the oldest are forgotten)."""


WireParts = tuple[dict[str, Any], dict[int, str], dict[int, bytes], "SavedWire | None"]
"""A protocol state as its stored parts: everything but the outbox; the outbox (stanza → base64
frame); the frames decoded: those new or changed since `base`, the store's last save of the thread."""


def wire_parts(state: Mapping[str, Any], known: SavedWire | None) -> WireParts:
    """A protocol state as its stored parts, decoding (and so checking) the frames `known` lacks.

    Call it before the write transaction: a state that is refused fails alone. The frames of
    `known` (the store's last save of the thread) were checked when they were saved.

    Raises:
        EnvelopeError: A mapping whose numbering is not integers, or whose outbox is not pairs of
            a stanza number and a base64 frame.
    """
    header = dict(state)
    outbox = header.pop("outbox", None)
    try:
        if type(header.get("nextStanza")) is not int or type(header.get("lastSeen")) is not int:
            raise ValueError("nextStanza and lastSeen must be integers")
        texts = cast("dict[int, str]", dict(outbox or ()))
        decoded: dict[int, bytes] = {}
        for stanza, text in texts.items() - known.texts.items() if known is not None else texts.items():
            if type(stanza) is not int:
                raise ValueError("a stanza number must be an integer")
            decoded[stanza] = base64.b64decode(text, validate=True)
    except (TypeError, ValueError) as exc:
        raise EnvelopeError(f"not a protocol state: {exc!r:.80}") from None
    return header, texts, decoded, known


def frame_bytes(decoded: dict[int, bytes], stanza: int, text: str) -> bytes:
    """A frame's bytes: decoded before the transaction, or (checked by an earlier save) now."""
    frame = decoded.get(stanza)
    return frame if frame is not None else base64.b64decode(text)


class SavedWire:
    """What a store last saved of a conversation's protocol state (to write only what changes)."""

    __slots__ = ("header", "texts", "version")

    def __init__(self, version: int, header: dict[str, Any], texts: dict[int, str]) -> None:
        self.version = version
        self.header = header
        self.texts = texts
        """The outbox as saved: stanza → its frame in base64."""

    def continued_by(self, new: SavedWire) -> bool:
        """True when `new` only moves on from this state: same end, numbering not gone back."""
        old_header, new_header = self.header, new.header
        return (
            new_header["nextStanza"] >= old_header["nextStanza"]
            and new_header["lastSeen"] >= old_header["lastSeen"]
            and len(old_header) == len(new_header)
            and all(new_header.get(key) == value for key, value in old_header.items() if key not in NUMBERING)
        )
