"""`Transcripts`: the decoded transcripts of the threads a `SqliteStore` loaded last.

Continuing a thread loads its transcript, and decoding a thousand messages costs far more than
the run itself. A transcript only grows, so a load of a thread kept here reads and decodes only
the rows added since (one range scan of the primary key), after checking that the row it last
ended with is still the same (a thread deleted and made again under its id is read anew).
"""

from __future__ import annotations

import json
import sqlite3

from ..messages import Message, message_from_dict

__all__ = ["Transcripts"]

_ALL = "SELECT seq, body FROM messages WHERE thread_id = ? ORDER BY seq"
_SINCE = "SELECT seq, body FROM messages WHERE thread_id = ? AND seq >= ? ORDER BY seq"


class _Kept:
    __slots__ = ("body", "messages", "seq")

    def __init__(self, seq: int, body: str, messages: list[Message]) -> None:
        self.seq = seq
        """The last row's `seq` and `body`: the next load starts there."""
        self.body = body
        self.messages = messages


class Transcripts:
    """The decoded transcripts of the threads loaded last, up to `messages` messages in all.

    The least recently loaded go first; the last one loaded is kept whatever its length.
    """

    __slots__ = ("_count", "_kept", "messages")

    def __init__(self, messages: int = 50_000) -> None:
        self.messages = messages
        self._kept: dict[str, _Kept] = {}
        self._count = 0
        """The messages kept, all threads together."""

    def load(self, db: sqlite3.Connection, thread_id: str) -> list[Message]:
        """The thread's transcript, oldest first (a new list: the caller may change it)."""
        kept = self._kept.pop(thread_id, None)
        if kept is not None:
            self._count -= len(kept.messages)
            rows = db.execute(_SINCE, (thread_id, kept.seq)).fetchall()
            if rows and rows[0][0] == kept.seq and rows[0][1] == kept.body:
                messages = kept.messages
                messages.extend(message_from_dict(json.loads(body)) for _, body in rows[1:])
                return self._keep(thread_id, rows[-1], messages)
        rows = db.execute(_ALL, (thread_id,)).fetchall()
        messages = [message_from_dict(json.loads(body)) for _, body in rows]
        return self._keep(thread_id, rows[-1], messages) if rows else messages

    def _keep(self, thread_id: str, last: tuple[int, str], messages: list[Message]) -> list[Message]:
        kept = self._kept
        kept[thread_id] = _Kept(last[0], last[1], messages)  # (last: the most recently loaded)
        self._count += len(messages)
        while self._count > self.messages and len(kept) > 1:
            self._count -= len(kept.pop(next(iter(kept))).messages)
        return list(messages)

    def forget(self, thread_id: str) -> None:
        """Drop one thread's transcript (it is being deleted)."""
        if (kept := self._kept.pop(thread_id, None)) is not None:
            self._count -= len(kept.messages)

    def clear(self) -> None:
        """Drop every transcript (a transaction rolled back: rows read inside it may not be in the file)."""
        self._kept.clear()
        self._count = 0
