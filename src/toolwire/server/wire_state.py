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

    __slots__ = ("_pairs",)

    def __init__(self) -> None:
        self._pairs: dict[int, tuple[bytes, list[Any]]] = {}
        """Stanza → the frame last seen under it and its `[stanza, base64]` pair (never changed once made)."""

    def of(self, state: Sequencing | None) -> dict[str, Any] | None:
        """Return `state.to_dict()` (None for None), encoding only the frames new since the last call."""
        if state is None:
            return None
        pairs = self._pairs
        outbox: list[list[Any]] = []
        for stanza, frame in state.outbox:
            known = pairs.get(stanza)
            if known is None or known[0] is not frame:
                known = pairs[stanza] = (frame, [stanza, base64.b64encode(frame).decode("ascii")])
            outbox.append(known[1])
        if len(pairs) > 2 * len(outbox) + 16:  # forget the acknowledged frames now and then, not on every call
            self._pairs = {stanza: pairs[stanza] for stanza, _ in state.outbox}
        return {
            "role": state.role,
            "conversationId": state.conversation_id,
            "nextStanza": state.next_stanza,
            "lastSeen": state.last_seen,
            "outbox": outbox,
        }
