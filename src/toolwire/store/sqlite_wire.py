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
from typing import Any, Final

from .outbox import KEPT_OUTBOXES, SavedWire, WireParts, frame_bytes, wire_parts
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
            added = [(thread_id, stanza, frame_bytes(decoded, stanza, text), *numbering) for stanza, text in new]
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
        added = [(thread_id, stanza, frame_bytes(decoded, stanza, text), *numbering) for stanza, text in texts.items()]
    if added:
        db.executemany(INSERT_FRAME, added)
    # Remembered for the next save of the thread (in this transaction or a later one); a failed
    # transaction makes the store forget everything it remembered (`GroupCommit`'s rolled_back).
    outboxes[thread_id] = saved
    if len(outboxes) > KEPT_OUTBOXES:
        del outboxes[next(iter(outboxes))]
