"""The server's protocol state of a conversation (`WireStateStore`'s JSON object) in PostgreSQL.

The rows are SQLite's (`sqlite_wire`): `wire_state` holds the header and the `version` token of the
save that last rewrote the frames, `wire_outbox` one row per unacknowledged frame with the
numbering of the save that wrote it, so that a save writes only what changed.

A save is one statement, so one round trip and one transaction, ledger moves included:

- a *delta* save (the store saved the thread last, as far as it knows) locks the header row if
  its `version` is still the store's (`FOR UPDATE`), and only then deletes the acknowledged
  frames, inserts the new ones and moves the calls; if another writer saved the thread since,
  it writes nothing and says so, and the store sends the whole save instead;
- a *whole* save writes the header with a new `version`, every frame, and moves the calls.

Data-modifying CTEs of one statement all see the same snapshot, so a call both dispatched and
answered in one save is moved once, straight to ANSWERED (as two statements in a row would).
"""

from __future__ import annotations

import base64
import json
import random
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, LiteralString

from .outbox import KEPT_OUTBOXES, SavedWire, WireParts, frame_bytes
from .sqlite_schema import dumps

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["load_wire", "remember", "save_wire"]

_LOAD: Final = (
    "SELECT w.state, o.stanza, o.frame, o.next_stanza, o.last_seen FROM wire_state w"
    " LEFT JOIN wire_outbox o ON o.thread_id = w.thread_id WHERE w.thread_id = %s ORDER BY o.stanza"
)


def _ledger_moves(guard: LiteralString) -> LiteralString:
    """The CTEs that move calls to DISPATCHED and ANSWERED (`guard`: a condition that must also hold)."""
    return (
        "dispatched AS (UPDATE ledger SET state = 'dispatched' WHERE thread_id = %(t)s"
        " AND call_id = ANY(%(dispatched)s::text[]) AND NOT call_id = ANY(%(answered)s::text[])"
        " AND state IN ('pending', 'awaiting_approval')" + guard + "),"
        " answered AS (UPDATE ledger l SET state = 'answered', answer = a.answer"
        " FROM unnest(%(answered)s::text[], %(answers)s::text[]) AS a (call_id, answer)"
        " WHERE l.thread_id = %(t)s AND l.call_id = a.call_id AND (l.state = 'dispatched'"
        " OR (l.state IN ('pending', 'awaiting_approval') AND l.call_id = ANY(%(dispatched)s::text[])))"
        + guard
        + " RETURNING l.call_id)"
    )


_PUT_FRAMES: Final = (
    "INSERT INTO wire_outbox (thread_id, stanza, frame, next_stanza, last_seen)"
    " SELECT %(t)s, n.stanza, n.frame, %(next)s, %(seen)s"
    " FROM unnest(%(stanzas)s::bigint[], %(frames)s::bytea[]) AS n (stanza, frame)"
)
_ON_FRAME_CONFLICT: Final = (
    " ON CONFLICT (thread_id, stanza) DO UPDATE SET frame = excluded.frame,"
    " next_stanza = excluded.next_stanza, last_seen = excluded.last_seen"
)
_MINE: Final = " AND EXISTS (SELECT 1 FROM mine)"

_DELTA: Final = (
    "WITH mine AS (SELECT thread_id FROM wire_state WHERE thread_id = %(t)s AND version = %(version)s FOR UPDATE), "
    + _ledger_moves(_MINE)
    + ", head AS (UPDATE wire_state w SET state = %(header)s, updated_at = %(now)s FROM mine"
    " WHERE w.thread_id = mine.thread_id AND %(new_header)s),"
    " gone AS (DELETE FROM wire_outbox o USING mine WHERE o.thread_id = mine.thread_id"
    " AND o.stanza = ANY(%(gone)s::bigint[])),"
    " put AS ("
    + _PUT_FRAMES
    + " WHERE EXISTS (SELECT 1 FROM mine)"
    + _ON_FRAME_CONFLICT
    + ") SELECT EXISTS (SELECT 1 FROM mine), ARRAY(SELECT call_id FROM answered)"
)
_WHOLE: Final = (
    "WITH " + _ledger_moves("") + ", head AS (INSERT INTO wire_state (thread_id, state, updated_at, version)"
    " VALUES (%(t)s, %(header)s, %(now)s, %(version)s) ON CONFLICT (thread_id) DO UPDATE"
    " SET state = excluded.state, updated_at = excluded.updated_at, version = excluded.version),"
    " gone AS (DELETE FROM wire_outbox WHERE thread_id = %(t)s AND stanza <> ALL(%(stanzas)s::bigint[])),"
    " put AS (" + _PUT_FRAMES + _ON_FRAME_CONFLICT + ") SELECT true, ARRAY(SELECT call_id FROM answered)"
)
_DELETE: Final = (
    "WITH " + _ledger_moves("") + ", head AS (DELETE FROM wire_state WHERE thread_id = %(t)s),"
    " frames AS (DELETE FROM wire_outbox WHERE thread_id = %(t)s)"
    " SELECT true, ARRAY(SELECT call_id FROM answered)"
)


async def load_wire(db: AsyncConnection[Any], thread_id: str) -> dict[str, Any] | None:
    """Read a conversation's protocol state (the JSON object saved; None when there is none), in one query."""
    cursor = await db.execute(_LOAD, (thread_id,))
    rows = await cursor.fetchall()
    if not rows:
        return None
    state: dict[str, Any] = json.loads(rows[0][0])
    frames = [row for row in rows if row[1] is not None]
    if frames:  # the numbering of the last save may be on its frame's row
        state["nextStanza"] = max(state["nextStanza"], *(row[3] for row in frames))
        state["lastSeen"] = max(state["lastSeen"], *(row[4] for row in frames))
    state["outbox"] = [[row[1], base64.b64encode(row[2]).decode("ascii")] for row in frames]
    return state


async def save_wire(
    db: AsyncConnection[Any],
    known: SavedWire | None,
    thread_id: str,
    parts: WireParts | None,
    dispatched: Sequence[str],
    answered: Mapping[str, str],
) -> tuple[frozenset[str], SavedWire | None]:
    """Write a conversation's protocol state and move its calls: one statement (two when another writer saved).

    `parts` is `wire_parts()` of the state (None deletes it); `known` is what the store remembers
    of its last save of the thread (None: nothing, the save is whole); `answered` maps call ids to
    their answers' JSON. Returns the calls whose answers were saved, and what to remember of this
    save once its transaction is committed (see `remember`); not before: a save whose commit
    failed or was cancelled is not in the database, and the next one must not write only what
    changed since it. See `PostgresStore.save_wire_state`.
    """
    moves: dict[str, Any] = {
        "t": thread_id,
        "dispatched": list(dispatched),
        "answered": list(answered),
        "answers": list(answered.values()),
    }
    if parts is None:
        return await _run(db, _DELETE, moves), None
    header, texts, decoded, base = parts
    numbering = (header["nextStanza"], header["lastSeen"])
    common = {**moves, "header": dumps(header), "now": time.time(), "next": numbering[0], "seen": numbering[1]}
    saved = SavedWire(known.version if known is not None else 0, header, texts)
    if known is not None and known.continued_by(saved):
        stored = known.texts
        if known is base:  # what is new since it was found before the statement
            added = list(decoded.items())
        else:
            added = [(stanza, frame_bytes(decoded, stanza, text)) for stanza, text in texts.items() - stored.items()]
        gone = list(stored.keys() - texts.keys())
        # An added row carries the numbering; without one, the header must (load takes the max).
        new_header = not added and bool(gone or numbering != (known.header["nextStanza"], known.header["lastSeen"]))
        delta = {
            **common,
            "version": known.version,
            "new_header": new_header,
            "gone": gone,
            "stanzas": [stanza for stanza, _ in added],
            "frames": [frame for _, frame in added],
        }
        cursor = await db.execute(_DELTA, delta)
        row = await cursor.fetchone()
        if row is not None and row[0]:
            return frozenset(row[1]), saved
        # Another writer saved the thread since: nothing was written; the whole state is.
    saved.version = random.getrandbits(62) + 1  # not a secret: tells this store's saves apart
    whole = {
        **common,
        "version": saved.version,
        "stanzas": list(texts),
        "frames": [frame_bytes(decoded, stanza, text) for stanza, text in texts.items()],
    }
    return await _run(db, _WHOLE, whole), saved


async def _run(db: AsyncConnection[Any], statement: LiteralString, params: dict[str, Any]) -> frozenset[str]:
    cursor = await db.execute(statement, params)
    row = await cursor.fetchone()
    return frozenset(row[1]) if row is not None else frozenset()


def remember(outboxes: dict[str, SavedWire], thread_id: str, saved: SavedWire | None) -> None:
    """Remember a committed save (`save_wire`'s), for the next save of the thread to write only what changed."""
    if saved is None:
        return
    outboxes[thread_id] = saved
    if len(outboxes) > KEPT_OUTBOXES:
        del outboxes[next(iter(outboxes))]
