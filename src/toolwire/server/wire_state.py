"""A conversation's protocol state (`Sequencing`) as the JSON object its `WireStateStore` keeps.

The store knows nothing of the protocol: the server saves `Sequencing.to_dict()`'s form and
reads it back with `Sequencing.from_dict`. It saves before each frame it writes, and a frame
waits in the outbox over several saves until the client acknowledges it, so `WireForm` makes each
frame's base64 text once and reuses it while the frame stays.
"""

from __future__ import annotations

import base64
from typing import Any

from ..protocol import Sequencing

__all__ = ["WireForm"]


class WireForm:
    """Turns one conversation's successive states into their JSON form (`Sequencing.to_dict()`'s)."""

    __slots__ = ("_texts",)

    def __init__(self) -> None:
        self._texts: dict[int, tuple[bytes, str]] = {}
        """Stanza → the frame of the last state and its base64 text."""

    def of(self, state: Sequencing | None) -> dict[str, Any] | None:
        """Return `state.to_dict()` (None for None), encoding only the frames new since the last call."""
        if state is None:
            return None
        texts = self._texts
        kept: dict[int, tuple[bytes, str]] = {}
        outbox: list[list[Any]] = []
        for stanza, frame in state.outbox:
            known = texts.get(stanza)
            if known is None or known[0] is not frame:
                known = (frame, base64.b64encode(frame).decode("ascii"))
            kept[stanza] = known
            outbox.append([stanza, known[1]])
        self._texts = kept
        return {
            "role": state.role,
            "conversationId": state.conversation_id,
            "nextStanza": state.next_stanza,
            "lastSeen": state.last_seen,
            "outbox": outbox,
        }
