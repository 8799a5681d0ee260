"""`RefusalLimit` and `Refusals`: how many refused frames a principal's connections may cause, and the log.

Every frame the server refuses (a result for a request id the client never got, a malformed
frame, a message of another conversation, a second run while one is in progress) costs a
decode, a store read or write and an ErrorMessage, and one log line each would cost more. A
client that sends such frames in a loop is not making mistakes any more. Each principal has a
token bucket, shared by its connections (reconnecting does not refill it):

```
refused frame ──► takes a token from its principal's bucket: `burst` at once, refilled at `per_second`
  a token was left ──► the frame's ErrorMessage
  none left        ──► the frame's ErrorMessage, then 108 (not recoverable) and close 1008 (policy violation)
new connection while the bucket is empty ──► 108 at once, close 1008 (counted, takes no token)
log ──► the first refusal, the moment the limit is reached, then a count at most every
        `REFUSAL_SUMMARY_SECONDS` (and when the server stops): never a line per frame
```

A well-behaved client is refused a few frames at most (results answered twice after a resume).
With one token for everyone (`toolwire serve --token`) every client is the same principal, so
one client over the limit keeps the others from connecting until its allowance grows back: give
each user a token of their own (`--tokens`).
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ..errors import UsageError

__all__ = ["DEFAULT_REFUSAL_LIMIT", "REFUSAL_SUMMARY_SECONDS", "ConnectionRefusals", "RefusalLimit", "Refusals"]

_log = logging.getLogger("toolwire.server")

REFUSAL_SUMMARY_SECONDS: Final = 10.0
"""A principal whose frames keep being refused gets a log line with their count at most this often."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalLimit:
    """How many refused frames a principal's connections may cause (a token bucket)."""

    burst: int = 100
    """Refusals at once."""
    per_second: float = 10.0
    """How fast the allowance grows back (0: never)."""

    def __post_init__(self) -> None:
        if self.burst < 1 or not (self.per_second >= 0 and math.isfinite(self.per_second)):
            raise UsageError(f"RefusalLimit needs burst >= 1 and per_second >= 0, not {self.burst}, {self.per_second}")

    def describe(self) -> str:
        """The limit in words, for the ErrorMessage and the log."""
        return f"more than {self.burst} at once, {self.per_second:g} a second"


DEFAULT_REFUSAL_LIMIT: Final = RefusalLimit()
"""100 refusals at once, then 10 a second."""


class _Principal:
    """One principal's bucket and what its log has not said yet."""

    __slots__ = ("codes", "connections", "logged", "over", "tokens", "total", "updated")

    def __init__(self, burst: int, now: float) -> None:
        self.tokens = float(burst)
        self.updated = now
        self.codes: Counter[int] = Counter()
        """Refused frames by ErrorMessage code, not logged yet."""
        self.connections = 0
        """Connections refused at the handshake, not logged yet."""
        self.total = 0
        """Refused frames since the bucket was last full."""
        self.logged = -math.inf
        self.over = False
        """The limit was reached since the bucket was last full (and said so in the log)."""

    @property
    def unlogged(self) -> bool:
        return bool(self.codes or self.connections)


class Refusals:
    """The refused frames of every principal: one bucket each, shared by its connections.

    Ask `admits` when a connection opens, and count each refused frame through the connection's
    `connection()`; call `flush` when the server stops.
    """

    def __init__(self, limit: RefusalLimit = DEFAULT_REFUSAL_LIMIT, *, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self._clock = clock
        self._principals: dict[str, _Principal] = {}

    def connection(self, principal: str, conversation_id: str) -> ConnectionRefusals:
        """The counter of one connection's refused frames."""
        return ConnectionRefusals(self, principal, conversation_id)

    def admits(self, principal: str) -> bool:
        """Tell whether a new connection of `principal` may open: not while its bucket is empty."""
        state = self._principals.get(principal)
        if state is None:
            return True
        now = self._refill(principal, state)
        if state.tokens >= self.limit.burst and not state.unlogged:
            del self._principals[principal]  # nothing to remember: a full bucket, everything logged
        if state.tokens >= 1:
            return True
        state.connections += 1
        self._log_count_if_due(principal, state, now)
        return False

    def refused(self, principal: str, conversation_id: str, code: int, reason: str) -> bool:
        """Count a refused frame; False when it found the bucket empty (close its connection)."""
        state = self._principals.get(principal)
        if state is None:
            state = self._principals[principal] = _Principal(self.limit.burst, self._clock())
        now = self._refill(principal, state)
        allowed = state.tokens >= 1
        state.tokens = max(state.tokens - 1, -1.0)  # a principal over its limit waits at most 1/per_second more
        state.total += 1
        if not state.unlogged and not state.over and now - state.logged >= REFUSAL_SUMMARY_SECONDS:
            _log.warning(
                "principal %.80s, conversation %s: refused a frame (%d: %.200s); further refusals are counted",
                principal,
                conversation_id,
                code,
                reason,
            )
            state.logged = now
        else:
            state.codes[code] += 1
        if not allowed and not state.over:
            state.over = True
            _log.warning(
                "principal %.80s: %d frames refused (%s more by code %s), %s: the connection that sent the last "
                "one is closed, and new ones are refused until the allowance grows back",
                principal,
                state.total,
                sum(state.codes.values()),
                _by_code(state.codes),
                self.limit.describe(),
            )
            state.codes.clear()
            state.logged = now
        else:
            self._log_count_if_due(principal, state, now)
        return allowed

    def flush(self) -> None:
        """Log every count not logged yet (the server stops)."""
        now = self._clock()
        for principal, state in self._principals.items():
            if state.unlogged:
                self._log_count(principal, state, now)

    def _refill(self, principal: str, state: _Principal) -> float:
        """Add the tokens grown back since the last look; a full bucket ends an episode of refusals."""
        now = self._clock()
        burst = float(self.limit.burst)
        state.tokens = min(burst, state.tokens + (now - state.updated) * self.limit.per_second)
        state.updated = now
        if state.tokens >= burst:
            state.over, state.total = False, 0
        return now

    def _log_count_if_due(self, principal: str, state: _Principal, now: float) -> None:
        if state.unlogged and now - state.logged >= REFUSAL_SUMMARY_SECONDS:
            self._log_count(principal, state, now)

    def _log_count(self, principal: str, state: _Principal, now: float) -> None:
        seconds = now - state.logged if math.isfinite(state.logged) else 0.0
        _log.warning(
            "principal %.80s: refused %d more frames (by code %s) and %d connections in %.0f s",
            principal,
            sum(state.codes.values()),
            _by_code(state.codes),
            state.connections,
            seconds,
        )
        state.codes.clear()
        state.connections = 0
        state.logged = now


def _by_code(codes: Counter[int]) -> str:
    return ", ".join(f"{code}: {count}" for code, count in sorted(codes.items())) or "none"


class ConnectionRefusals:
    """One connection's refused frames, counted against its principal's bucket."""

    __slots__ = ("conversation_id", "exceeded", "principal", "refusals")

    def __init__(self, refusals: Refusals, principal: str, conversation_id: str) -> None:
        self.refusals = refusals
        self.principal = principal
        self.conversation_id = conversation_id
        self.exceeded = False
        """A refused frame of this connection found its principal's bucket empty: close it."""

    def refused(self, code: int, reason: str) -> None:
        """Count a refused frame (`code` its ErrorMessage's, `reason` what was refused)."""
        if not self.refusals.refused(self.principal, self.conversation_id, code, reason):
            self.exceeded = True
