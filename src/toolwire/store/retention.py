"""`Retention`: which threads an in-memory store keeps, and which finished ones it drops.

A store that lives in process memory (`MemoryStore`) would otherwise keep every thread it ever
saw. `Retention` orders its threads by last use and, each time a new thread comes in, drops the
least recently used ones while there are more than `max_threads`, and those idle for `max_idle`
seconds or more. Only threads the store says are finished are dropped: one in use is moved to the
most recently used end instead, and looked at again once the others have been.

```
least recently used                                              most recently used
  t_17 (finished: dropped)  t_21 (run open: kept, moved ──►)  ...  t_90  t_new (never looked at)
```

Each new thread looks at no more than `SCAN` others, so a store whose threads are all in use pays
a bounded price per new thread, and holds more than `max_threads` until some of them finish.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from ..errors import UsageError

__all__ = ["DEFAULT_MAX_THREADS", "SCAN", "Retention"]

DEFAULT_MAX_THREADS: Final = 1_000
"""How many threads a `MemoryStore` keeps unless told otherwise (finished ones beyond it are dropped)."""
SCAN: Final = 16
"""The most threads looked at (dropped, or kept as in use) when a new thread comes in."""


class Retention:
    """The threads of a store, least recently used first, and the dropping of finished ones past the bounds.

    Args:
        max_threads: Threads kept at most (beyond it, the least recently used finished ones are
            dropped); None: no bound.
        max_idle: Seconds after its last use a finished thread is dropped (when the next new thread
            comes in); None: no bound.
        finished: Tell whether a thread may be dropped (nothing in it is open or in use).
        drop: Drop a thread and everything kept of it; it calls `forget`.
        clock: The time of a use, in seconds (monotonic).

    Raises:
        UsageError: A bound below 0 (or `max_threads` 0).
    """

    def __init__(
        self,
        *,
        max_threads: int | None,
        max_idle: float | None,
        finished: Callable[[str], bool],
        drop: Callable[[str], object],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if (max_threads is not None and max_threads < 1) or (max_idle is not None and max_idle < 0):
            raise UsageError("a MemoryStore needs max_threads >= 1 and max_idle >= 0 (or None for no bound)")
        self.max_threads = max_threads
        self.max_idle = max_idle
        self._finished = finished
        self._drop = drop
        self._clock = clock
        self._used: OrderedDict[str, float] = OrderedDict()
        """Thread → when it was last used, least recently used first."""

    def __len__(self) -> int:
        return len(self._used)

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._used

    def use(self, thread_id: str) -> None:
        """Record a use of the thread (a read or a write); a new thread may make older finished ones go."""
        used = self._used
        now = self._clock()
        if thread_id in used:
            used.move_to_end(thread_id)
            used[thread_id] = now
            return
        used[thread_id] = now
        if self.max_threads is not None or self.max_idle is not None:
            self._trim(thread_id, now)

    def forget(self, thread_id: str) -> None:
        """Stop tracking the thread (it was deleted)."""
        self._used.pop(thread_id, None)

    def _trim(self, new: str, now: float) -> None:
        used = self._used
        max_threads, max_idle = self.max_threads, self.max_idle
        for _ in range(SCAN):
            oldest, last_used = next(iter(used.items()))
            if oldest == new:  # every other thread was looked at
                return
            over = max_threads is not None and len(used) > max_threads
            if not over and (max_idle is None or now - last_used < max_idle):
                return
            if self._finished(oldest):
                self._drop(oldest)
            else:  # in use: look at it again once the others have been
                used.move_to_end(oldest)
                used[oldest] = now
