"""`Sequencing`: what one end of a conversation remembers across connections and restarts.

A `Connection` exports it with `state()` and continues from it with `Connection.resume(state)`;
the server keeps it in its store, the Python client in memory (or on disk), so that a new
connection goes on numbering where the last one stopped and resends what the peer missed.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Self, cast

from ..errors import EnvelopeError
from .error_codes import ErrorCode, ProtocolError

__all__ = ["Role", "Sequencer", "Sequencing"]

Role = Literal["server", "client"]
"""Which end: client stanza ids count 1, 2, 3…, server stanza ids -1, -2, -3…."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sequencing:
    """The numbering of one end of a conversation and the frames its peer has not acknowledged."""

    role: Role
    """The end this state belongs to; it fixes the sign of its stanza ids."""
    conversation_id: str
    """The conversation (thread) id."""
    next_stanza: int = 1
    """The absolute value of the next stanza id this end sends."""
    last_seen: int = 0
    """The absolute value of the last stanza processed from the peer (its `lastSequenceSeen`)."""
    outbox: tuple[tuple[int, bytes], ...] = ()
    """Frames sent and not acknowledged yet, as (absolute stanza id, frame bytes), oldest first;
    a handshake resends those after the peer's `lastSequenceSeen` byte for byte."""

    @property
    def sign(self) -> int:
        """1 for the client's stanza ids, -1 for the server's."""
        return 1 if self.role == "client" else -1

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-safe form for a store (frames as base64)."""
        return {
            "role": self.role,
            "conversationId": self.conversation_id,
            "nextStanza": self.next_stanza,
            "lastSeen": self.last_seen,
            "outbox": [[stanza, base64.b64encode(frame).decode("ascii")] for stanza, frame in self.outbox],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Read the form `to_dict()` gives.

        Raises:
            EnvelopeError: The data is not such a form.
        """
        try:
            role = data["role"]
            if role not in ("server", "client"):
                raise ValueError(role)
            outbox = tuple(
                (int(stanza), base64.b64decode(frame, validate=True))
                for stanza, frame in cast("list[tuple[Any, Any]]", data["outbox"])
            )
            return cls(
                role=role,
                conversation_id=str(data["conversationId"]),
                next_stanza=int(data["nextStanza"]),
                last_seen=int(data["lastSeen"]),
                outbox=outbox,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EnvelopeError(f"not a Sequencing state: {exc!r:.80}") from None


class Sequencer:
    """The live numbering of one end, which a `Connection` updates as frames come and go."""

    __slots__ = ("acked", "conversation_id", "last_seen", "max_outbox", "next", "outbox")

    def __init__(self, conversation_id: str | None, *, max_outbox: int, state: Sequencing | None = None) -> None:
        self.conversation_id = conversation_id if state is None else state.conversation_id
        self.next = 1 if state is None else state.next_stanza
        self.last_seen = 0 if state is None else state.last_seen
        # What a resumed state has seen, its next handshake's `lastSequenceSeen` tells the peer.
        self.acked = self.last_seen
        self.outbox: dict[int, bytes] = {} if state is None else dict(state.outbox)
        self.max_outbox = max_outbox

    def export(self, role: Role) -> Sequencing | None:
        """Return the state to persist, or None before a conversation is bound."""
        if self.conversation_id is None:
            return None
        return Sequencing(
            role=role,
            conversation_id=self.conversation_id,
            next_stanza=self.next,
            last_seen=self.last_seen,
            outbox=tuple(self.outbox.items()),
        )

    def keep(self, frame: bytes) -> None:
        """Record a frame sent under the stanza number `next`, and move on to the following one."""
        self.outbox[self.next] = frame
        self.next += 1
        while len(self.outbox) > self.max_outbox:
            del self.outbox[next(iter(self.outbox))]

    def see(self, stanza: int) -> bool:
        """Record a peer's stanza as processed; False when it is a duplicate."""
        if abs(stanza) <= self.last_seen:
            return False
        self.last_seen = abs(stanza)
        return True

    def acknowledged(self, upto: int) -> None:
        """Drop the frames up to stanza `upto` (absolute) from the outbox.

        Raises:
            ProtocolError: 105 when `upto` was never sent.
        """
        if upto >= self.next:
            message = f"Acknowledgement of stanza {upto}, which was never sent (the last is {self.next - 1})"
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, message)
        for stanza in [stanza for stanza in self.outbox if stanza <= upto]:
            del self.outbox[stanza]

    def replay_after(self, peer_seen: int) -> list[bytes]:
        """Return the frames after the peer's `lastSequenceSeen`, dropping those it has seen."""
        self.acknowledged(min(peer_seen, self.next - 1))
        # A peer that saw more than this end remembers sending lost our state: number on after it.
        self.next = max(self.next, peer_seen + 1)
        return list(self.outbox.values())

    def unacknowledged(self) -> int:
        """How many stanzas were seen since the last acknowledgement."""
        return self.last_seen - self.acked
