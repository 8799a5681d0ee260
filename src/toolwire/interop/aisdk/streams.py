"""Resumable streams: each thread's last assistant message as its responses streamed it (`PartLog`).

`useChat` with `resume: true` asks for the stream again after a reload or a dropped connection
(`GET {api}/{chatId}/stream`; `DefaultChatTransport.reconnectToStream`). The SDK takes the
replay as the whole assistant message (it resets the message at the replay's first `start`), so a
thread's log holds every part of its last message, across the responses that built it:

```
POST prompt        start(messageId) ─ parts ─ finish(tool-calls)     the log: start, parts
POST output(s)     start ─ parts ─ finish(stop)                      the log: + answers, parts
GET  …/stream      start(messageId), every part so far, then live parts, finish
```

A response's own `start` and `finish` are left out of the log but for the first `start` (the
message's id) and the last response's end; the front end's answers (`tool-approval-response`,
its tools' outputs), which its request carried and the live stream does not repeat, go in as the
parts that rebuild them. Bounded: past `max_parts` a log stops keeping parts and its message is
not resumable (`204`), nor is a message whose first response this process did not stream (a
continuation after a restart); an ended log is kept `keep_seconds` for a client that comes back
late, and the thread's next message replaces it.
"""

from __future__ import annotations

import time
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .parts import Part

__all__ = ["KEEP_SECONDS", "MAX_PARTS", "PartLog", "PartLogs"]

MAX_PARTS: Final = 10_000
"""The most parts a message's log holds; past it the message is not resumable."""
KEEP_SECONDS: Final = 300.0
"""How long an ended message stays resumable (a client that dropped may come back after the run ended)."""

_ENDS: Final = frozenset({"finish", "error"})


class PartLog:
    """One assistant message's parts, and the streams following it (the responses and the replays)."""

    def __init__(self, start: Part, *, max_parts: int = MAX_PARTS) -> None:
        self.start = start
        """The first response's `start` (with the message's id when a prompt began it)."""
        self.parts: list[Part] = []
        self.end: Part | None = None
        """The last response's `finish` or `error`; None while a response streams."""
        self.ended_at: float | None = None
        """When the last response ended (`time.monotonic()`)."""
        self.replayable = True
        """False past `max_parts`, or when the log does not begin where its message began."""
        self._max_parts = max_parts
        self._followers: list[MemoryObjectSendStream[Part]] = []

    def follow(self, *, replay: bool) -> MemoryObjectReceiveStream[Part]:
        """A stream of the message from its start (`replay`), or of the current response from now on.

        Call while a response streams (or, with `replay`, after: the stream then holds the whole message).
        """
        send, receive = anyio.create_memory_object_stream[Part](float("inf"))
        if replay:
            for part in [self.start, *self.parts]:
                send.send_nowait(part)
        if self.end is not None:
            send.send_nowait(self.end)
            send.close()
        else:
            self._followers.append(send)
        return receive

    def resume(self) -> None:
        """A response goes on with this message (a continuation)."""
        self.end = self.ended_at = None

    def record(self, parts: list[Part]) -> None:
        """Parts a follower of the current response does not get, for replays only (the front end's answers)."""
        self._keep(parts)

    def add(self, part: Part) -> None:
        """A part of the current response: to the followers, and kept; `finish`/`error` ends the response."""
        for follower in list(self._followers):
            try:
                follower.send_nowait(part)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                follower.close()  # that client went away; the others go on
                self._followers.remove(follower)
        if part.get("type") in _ENDS:
            self.end, self.ended_at = part, time.monotonic()
            for follower in self._followers:
                follower.close()
            self._followers.clear()
        else:
            self._keep([part])

    def close(self) -> None:
        """The response's stream ended without an end part (the server stopped): the followers end too."""
        for follower in self._followers:
            follower.close()
        self._followers.clear()
        if self.end is None:
            self.ended_at = time.monotonic()

    def _keep(self, parts: list[Part]) -> None:
        if not self.replayable:
            return
        self.parts.extend(parts)
        if len(self.parts) > self._max_parts:
            self.replayable = False
            self.parts.clear()


class PartLogs:
    """The logs of the threads' last messages (one per thread), ended ones kept `keep_seconds`."""

    def __init__(self, *, max_parts: int = MAX_PARTS, keep_seconds: float = KEEP_SECONDS) -> None:
        self._logs: dict[str, PartLog] = {}
        self._max_parts = max_parts
        self._keep_seconds = keep_seconds

    def begin(self, thread_id: str, start: Part) -> tuple[PartLog, bool]:
        """The log of a response that starts with `start`: the thread's, when it continues its message.

        Returns:
            The log, and whether the response continues the message the log holds.
        """
        self._expire()
        log = self._logs.get(thread_id)
        continued = "messageId" not in start
        if log is not None and continued:
            log.resume()
            return log, True
        log = self._logs[thread_id] = PartLog(start, max_parts=self._max_parts)
        # A continuation of a message this process did not stream (it restarted, or the log expired):
        # a replay would be the message's end without its beginning, which the SDK cannot rebuild.
        log.replayable = not continued
        return log, False

    def get(self, thread_id: str) -> PartLog | None:
        """The thread's log, when its message can be replayed."""
        self._expire()
        log = self._logs.get(thread_id)
        return log if log is not None and log.replayable else None

    def _expire(self) -> None:
        now = time.monotonic()
        for thread_id, log in list(self._logs.items()):
            if log.ended_at is not None and now - log.ended_at > self._keep_seconds:
                del self._logs[thread_id]
