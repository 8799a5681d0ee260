"""The server's protocol state of a conversation (`WireStateStore`'s JSON object) as rows of the SQLite file.

`wire_state` keeps the header (role, conversation, numbering, the `version` token of the save that
last rewrote the frames), `wire_outbox` one row per unacknowledged frame, each with the numbering
of the save that wrote it (the numbering only grows), so that a save writes only what changed:
one frame sent after the client acknowledged the last one touches one page. The frames arrive in
base64; a save decodes only those it has not seen in its last save of the thread.
"""

from __future__ import annotations

import base64
import json
import random
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from ..errors import EnvelopeError
from .records import CallState
from .sqlite_schema import dumps

__all__ = ["ANSWER", "DISPATCH", "INSERT_FRAME", "KEPT_OUTBOXES", "SavedWire", "load_wire", "save_wire", "wire_parts"]

DISPATCH: Final = (
    f"UPDATE ledger SET state = '{CallState.DISPATCHED.value}' WHERE thread_id = ? AND call_id = ?"
    f" AND state IN ('{CallState.PENDING.value}', '{CallState.AWAITING_APPROVAL.value}')"
)
ANSWER: Final = (
    f"UPDATE ledger SET state = '{CallState.ANSWERED.value}', answer = ? WHERE thread_id = ? AND call_id = ?"
    f" AND state = '{CallState.DISPATCHED.value}'"
)
INSERT_FRAME: Final = (
    "INSERT INTO wire_outbox (thread_id, stanza, frame, next_stanza, last_seen) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (thread_id, stanza) DO UPDATE SET frame = excluded.frame,"
    " next_stanza = excluded.next_stanza, last_seen = excluded.last_seen"
)
NUMBERING: Final = ("nextStanza", "lastSeen")
KEPT_OUTBOXES: Final = 1024
"""Threads whose last saved outbox a store remembers, to write only what changed (the oldest are forgotten)."""


def load_wire(db: sqlite3.Connection, thread_id: str) -> dict[str, Any] | None:
    """Read a conversation's protocol state (the JSON object saved; None when there is none)."""
    row = db.execute("SELECT state FROM wire_state WHERE thread_id = ?", (thread_id,)).fetchone()
    if row is None:
        return None
    state = json.loads(row[0])
    if "outbox" in state:  # written before schema version 5 and not migrated: as it was
        return state
    rows = db.execute(
        "SELECT stanza, frame, next_stanza, last_seen FROM wire_outbox WHERE thread_id = ? ORDER BY stanza",
        (thread_id,),
    ).fetchall()
    if rows:  # the numbering of the last save may be on its frame's row
        state["nextStanza"] = max(state["nextStanza"], *(row[2] for row in rows))
        state["lastSeen"] = max(state["lastSeen"], *(row[3] for row in rows))
    state["outbox"] = [[stanza, base64.b64encode(frame).decode("ascii")] for stanza, frame, _, _ in rows]
    return state


def save_wire(
    db: sqlite3.Connection,
    outboxes: dict[str, SavedWire],
    thread_id: str,
    parts: WireParts | None,
    dispatched: Sequence[str],
    answered: Mapping[str, str],
    saved_answers: set[str],
) -> None:
    """Write a conversation's protocol state inside a (possibly shared) write transaction.

    `parts` is `wire_parts()` of the state (None deletes it); `outboxes` is what the store
    remembers of its last save of each thread, updated here; `answered` maps call ids to their
    answers' JSON, and the calls whose answers were saved join `saved_answers`. See
    `SqliteStore.save_wire_state`.
    """
    if dispatched:
        db.executemany(DISPATCH, [(thread_id, call_id) for call_id in dispatched])
    for call_id, answer in answered.items():
        if db.execute(ANSWER, (answer, thread_id, call_id)).rowcount == 1:
            saved_answers.add(call_id)
    known = outboxes.pop(thread_id, None)
    if parts is None:
        db.execute("DELETE FROM wire_state WHERE thread_id = ?", (thread_id,))
        db.execute("DELETE FROM wire_outbox WHERE thread_id = ?", (thread_id,))
        return
    header, texts, decoded, base = parts
    saved = SavedWire(known.version if known is not None else 0, header, texts)
    if known is not None and known.continued_by(saved):
        row = db.execute("SELECT version FROM wire_state WHERE thread_id = ?", (thread_id,)).fetchone()
        if row is None or row[0] != known.version:
            known = None  # another writer saved this thread since
    else:
        known = None
    numbering = (header["nextStanza"], header["lastSeen"])
    if known is not None:
        stored = known.texts
        # Set operations on the dicts' views: no Python loop over the frames that stay.
        if known is base:  # what is new since it was found before the transaction
            added = [(thread_id, stanza, frame, *numbering) for stanza, frame in decoded.items()]
        else:
            new = texts.items() - stored.items()
            added = [(thread_id, stanza, _frame(decoded, stanza, text), *numbering) for stanza, text in new]
        gone = [(thread_id, stanza) for stanza in stored.keys() - texts.keys()]
        # An added row carries the numbering; without one, the header must (load takes the max).
        if not added and (gone or numbering != (known.header["nextStanza"], known.header["lastSeen"])):
            db.execute(
                "UPDATE wire_state SET state = ?, updated_at = ? WHERE thread_id = ?",
                (dumps(header), time.time(), thread_id),
            )
        if gone:
            db.executemany("DELETE FROM wire_outbox WHERE thread_id = ? AND stanza = ?", gone)
    else:
        saved.version = random.getrandbits(62) + 1  # not a secret: tells this store's saves apart
        db.execute(
            "INSERT INTO wire_state (thread_id, state, updated_at, version) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (thread_id) DO UPDATE SET state = excluded.state,"
            " updated_at = excluded.updated_at, version = excluded.version",
            (thread_id, dumps(header), time.time(), saved.version),
        )
        db.execute("DELETE FROM wire_outbox WHERE thread_id = ?", (thread_id,))
        added = [(thread_id, stanza, _frame(decoded, stanza, text), *numbering) for stanza, text in texts.items()]
    if added:
        db.executemany(INSERT_FRAME, added)
    # Remembered for the next save of the thread (in this transaction or a later one); a failed
    # transaction makes the store forget everything it remembered (`GroupCommit`'s rolled_back).
    outboxes[thread_id] = saved
    if len(outboxes) > KEPT_OUTBOXES:
        del outboxes[next(iter(outboxes))]


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


def _frame(decoded: dict[int, bytes], stanza: int, text: str) -> bytes:
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
