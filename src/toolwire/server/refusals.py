"""`RefusalLimit` and `Refusals`: how many refused frames a connection may cause, and their log.

Every frame the server refuses (a result for a request id the client never got, a malformed
frame, a message of another conversation, a second run while one is in progress) costs a
decode, a store read or write and an ErrorMessage, and one log line each would cost more. A
client that sends such frames in a loop is not making mistakes any more:

```
refusal ──► counted against the connection's bucket: `burst` at once, refilled at `per_second`
  within it ──► the frame's ErrorMessage (the first refusal of the connection is logged)
  past it   ──► ErrorMessage 108 (not recoverable), close 1008 (policy violation), logged once
connection ends ──► one line: how many frames were refused, by code, in how long
```

A well-behaved client is refused a few frames at most (results answered twice after a resume).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ..errors import UsageError

__all__ = ["DEFAULT_REFUSAL_LIMIT", "REFUSAL_SUMMARY_SECONDS", "RefusalLimit", "Refusals"]

_log = logging.getLogger("toolwire.server")

REFUSAL_SUMMARY_SECONDS: Final = 10.0
"""A connection whose frames keep being refused gets a log line with their count at most this often."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalLimit:
    """How many refused frames a connection may cause before the server closes it (a token bucket)."""

    burst: int = 100
    """Refusals a connection may cause at once."""
    per_second: float = 10.0
    """How fast the allowance grows back (0: a connection gets `burst` refusals in its life)."""

    def __post_init__(self) -> None:
        if self.burst < 1 or not self.per_second >= 0:
            raise UsageError(f"RefusalLimit needs burst >= 1 and per_second >= 0, not {self.burst}, {self.per_second}")

    def describe(self) -> str:
        """The limit in words, for the ErrorMessage and the log."""
        return f"more than {self.burst} at once, {self.per_second:g} a second"


DEFAULT_REFUSAL_LIMIT: Final = RefusalLimit()
"""100 refusals at once, then 10 a second."""


class Refusals:
    """The refused frames of one connection: its bucket and its log lines.

    Call `refused` for each refusal, then check `exceeded`; call `close` when the connection ends.
    """

    __slots__ = (
        "_clock",
        "_codes",
        "_logged",
        "_opened",
        "_tokens",
        "_unlogged",
        "_updated",
        "conversation_id",
        "limit",
        "total",
    )

    def __init__(
        self, limit: RefusalLimit, conversation_id: str, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit = limit
        self.conversation_id = conversation_id
        self.total = 0
        """Frames refused on this connection."""
        self._clock = clock
        self._opened = self._updated = self._logged = clock()
        self._tokens = float(limit.burst)
        self._codes: Counter[int] = Counter()
        """This connection's refusals by ErrorMessage code."""
        self._unlogged = 0
        """Refusals since the last log line."""

    @property
    def exceeded(self) -> bool:
        """True once the connection was refused more frames than its limit allows: close it."""
        return self._tokens < 0

    def refused(self, code: int, reason: str) -> None:
        """Count a refused frame (`code` its ErrorMessage's, `reason` what was refused)."""
        now = self._clock()
        limit = self.limit
        self._tokens = min(float(limit.burst), self._tokens + (now - self._updated) * limit.per_second) - 1
        self._updated = now
        self.total += 1
        self._codes[code] += 1
        if self.total == 1:
            _log.warning(
                "conversation %s: refused a frame (%d: %.200s); further refusals on this connection are counted",
                self.conversation_id,
                code,
                reason,
            )
            self._logged = now
            return
        self._unlogged += 1
        if self.exceeded:
            _log.warning(
                "conversation %s: closing the connection: %d frames refused in %.1f s (by code %s), %s",
                self.conversation_id,
                self.total,
                now - self._opened,
                self._by_code(),
                limit.describe(),
            )
            self._unlogged = 0
        elif now - self._logged >= REFUSAL_SUMMARY_SECONDS:
            self._log_count(now)

    def close(self) -> None:
        """The connection ended: log the refusals not logged yet."""
        if self._unlogged:
            self._log_count(self._clock())

    def _log_count(self, now: float) -> None:
        _log.warning(
            "conversation %s: refused %d more frames in %.0f s; %d on this connection (by code %s)",
            self.conversation_id,
            self._unlogged,
            now - self._logged,
            self.total,
            self._by_code(),
        )
        self._unlogged = 0
        self._logged = now

    def _by_code(self) -> str:
        return ", ".join(f"{code}: {count}" for code, count in sorted(self._codes.items()))
