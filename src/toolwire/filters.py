"""The built-in filters: `Retry`, `Cache`, `Audit` and `RateLimit`.

Each is a configurable object called like a filter function. Pass them to `Pipeline` (or
`invoke`) in the order they should wrap the call, the first outermost:

```python
pipeline = Pipeline(toolbox, filters=[Audit(), RateLimit({"search_*": (10, 60.0)}), Retry(), Cache()])
```

Audit outermost logs one record per call, whatever the filters inside decided; a rate limit
outside `Retry` counts a call once however many attempts it takes; `Cache` innermost stores
only what the tool really returned.
"""

from __future__ import annotations

import fnmatch
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from random import Random
from typing import Any, Final

import anyio
from anyio import CancelScope

from .envelopes import ResultType, ToolResult, arguments_hash, canonical_json
from .errors import UsageError
from .modes import ToolMode
from .pipeline import InvocationContext, Next

__all__ = ["TRANSIENT_ERRORS", "Audit", "Cache", "RateLimit", "Retry"]

TRANSIENT_ERRORS: Final = frozenset(
    ("TimeoutError", "ConnectionError", "ConnectionResetError", "ConnectionRefusedError", "BrokenPipeError")
)
"""Names of the exceptions that `Retry` treats as transient by default."""


class Retry:
    """Run a call again after a transient failure, for tools where that is safe.

    Only calls of read-mode tools and of tools declared `idempotent` are retried: for any other
    tool a second run could repeat its effect. A failure is transient when the result is a
    Timeout, an Error with `next_action == "retry"` (a `ToolError(retryable=True)`), or an Error
    whose `error_type` names one of `retry_on`. Every attempt builds a fresh `ToolContext` from
    the same call, so the tool sees the same `idempotency_key` each time.
    `ctx.properties["attempts"]` tells how many attempts were made.

    Args:
        attempts: How many times the call may run in all (at least 1).
        backoff: Seconds to wait before the first retry; doubles on every retry after it.
        max_backoff: The longest wait between attempts, before jitter.
        jitter: Up to this many seconds, drawn uniformly, added to every wait.
        retry_on: Exception names whose Error results are transient.
        sleep: Waits between attempts (inject a fake in tests).
        random: The source of jitter (seed one for reproducible waits).

    Raises:
        UsageError: `attempts` is below 1 or a delay is negative.
    """

    def __init__(
        self,
        attempts: int = 3,
        *,
        backoff: float = 0.1,
        max_backoff: float = 2.0,
        jitter: float = 0.1,
        retry_on: Iterable[str] = TRANSIENT_ERRORS,
        sleep: Callable[[float], Awaitable[object]] = anyio.sleep,
        random: Random | None = None,
    ) -> None:
        if attempts < 1:
            raise UsageError(f"Retry needs attempts >= 1, got {attempts}")
        if min(backoff, max_backoff, jitter) < 0:
            raise UsageError("Retry delays (backoff, max_backoff, jitter) must not be negative")
        self.attempts = attempts
        self.backoff, self.max_backoff, self.jitter = backoff, max_backoff, jitter
        self.retry_on = frozenset(retry_on)
        self._sleep = sleep
        self._random = random if random is not None else Random()

    async def __call__(self, ctx: InvocationContext, call_next: Next) -> None:
        """Run the call, then again while it failed transiently and attempts remain."""
        retryable = ctx.mode is ToolMode.READ or (ctx.tool is not None and ctx.tool.idempotent)
        attempt = 1
        while True:
            ctx.properties["attempts"] = attempt
            await call_next(ctx)
            if not retryable or attempt >= self.attempts or not self.is_transient(ctx.result):
                return
            await self._wait(ctx, attempt)
            if ctx.cancellation.cancelled:
                # The caller gave up during the wait: answer as the pipeline does for a cancel.
                reason = ctx.cancellation.reason or "Canceled"
                ctx.result = ToolResult.canceled(ctx.tool_call.id, reason, ctx.cancellation.by)
                return
            ctx.result = None
            attempt += 1

    def is_transient(self, result: ToolResult | None) -> bool:
        """Tell whether `result` is a failure that another attempt may not repeat."""
        if result is None:
            return False
        if result.type is ResultType.TIMEOUT:
            return True
        return result.type is ResultType.ERROR and (result.next_action == "retry" or result.error_type in self.retry_on)

    async def _wait(self, ctx: InvocationContext, attempt: int) -> None:
        delay = min(self.backoff * 2 ** (attempt - 1), self.max_backoff) + self._random.uniform(0, self.jitter)
        # The caller's cancellation must end the wait too, not only the tool.
        with CancelScope() as scope:
            ctx.cancellation.attach(scope)
            try:
                await self._sleep(delay)
            finally:
                ctx.cancellation.detach(scope)


_CacheKey = tuple[str | None, str, str]


class Cache:
    """Answer repeated calls from memory, per thread, while the answer is fresh.

    A call is looked up by thread, tool name and canonical arguments. A hit answers with the stored
    result bound to the new call id, without running the tool. Only Success results are stored.
    A successful call of a tool whose mode is not cached (a write) clears its thread's entries,
    since it may have changed what the reads returned. `ctx.properties["cache"]` is `"hit"` or
    `"miss"` for calls of cached modes.

    Args:
        ttl: Seconds a stored result stays valid.
        modes: The tool modes whose results are cached.
        max_entries: Past this many entries, the least recently used is dropped.
        clock: Monotonic seconds (inject a fake in tests).

    Raises:
        UsageError: `ttl` or `max_entries` is not positive.
    """

    def __init__(
        self,
        ttl: float = 60.0,
        *,
        modes: Iterable[ToolMode] = frozenset({ToolMode.READ}),
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl <= 0 or max_entries < 1:
            raise UsageError("Cache needs ttl > 0 and max_entries >= 1")
        self.ttl = ttl
        self.modes = frozenset(modes)
        self.max_entries = max_entries
        self._clock = clock
        self._entries: OrderedDict[_CacheKey, tuple[float, ToolResult]] = OrderedDict()
        self._generation = 0

    async def __call__(self, ctx: InvocationContext, call_next: Next) -> None:
        """Answer from the cache, or run the call and store a Success."""
        if ctx.mode not in self.modes:
            await call_next(ctx)
            if ctx.result is not None and ctx.result.success:
                self._drop(lambda key: key[0] == ctx.thread_id)
            return
        try:
            key = (ctx.thread_id, ctx.tool_call.name, canonical_json(ctx.tool_call.arguments))
        except (TypeError, ValueError):  # arguments with no canonical form (NaN, objects) are not cached
            await call_next(ctx)
            return
        entry = self._entries.get(key)
        if entry is not None:
            if self._clock() - entry[0] < self.ttl:
                self._entries.move_to_end(key)
                ctx.properties["cache"] = "hit"
                ctx.result = entry[1].with_call_id(ctx.tool_call.id)
                return
            del self._entries[key]
        ctx.properties["cache"] = "miss"
        generation = self._generation
        await call_next(ctx)
        # A write that finished while this read ran may have made its result stale.
        if ctx.result is not None and ctx.result.success and generation == self._generation:
            self._entries[key] = (self._clock(), ctx.result)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def clear(self, thread_id: str | None = None) -> None:
        """Forget the stored results of one thread, or of every thread when `thread_id` is None."""
        self._drop(lambda key: thread_id is None or key[0] == thread_id)

    def __len__(self) -> int:
        return len(self._entries)

    def _drop(self, matches: Callable[[_CacheKey], bool]) -> None:
        self._generation += 1
        for key in [key for key in self._entries if matches(key)]:
            del self._entries[key]


class Audit:
    """Log one structured record per call: who ran what, how it was allowed, how it ended.

    The record goes to `logger.info` with `extra={"toolwire": fields}`; `fields` holds `event`
    (`"call"`), `tool`, `call_id`, `thread_id`, `mode`, `decision` and `source` (how the policy
    allowed the call), `outcome` (the `ResultType` name), `error_code`, `duration_ms` and
    `arguments_hash` (SHA-256 of the canonical arguments). Raw arguments may hold personal data
    or secrets, so they are logged only when asked for. When the rest of the chain raises, the
    record names the exception in `exception` and the exception propagates.

    Args:
        logger: Where records go (`toolwire.audit`, shared with the policy's records, by default).
        log_arguments: Also log the raw arguments under `arguments`.
        clock: Seconds, for the duration (inject a fake in tests).
    """

    def __init__(
        self,
        logger: logging.Logger | None = None,
        *,
        log_arguments: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.logger = logger if logger is not None else logging.getLogger("toolwire.audit")
        self.log_arguments = log_arguments
        self._clock = clock

    async def __call__(self, ctx: InvocationContext, call_next: Next) -> None:
        """Run the rest of the chain and log how the call ended."""
        start = self._clock()
        try:
            await call_next(ctx)
        except BaseException as exc:  # also a cancellation: the call ended, so it is recorded
            self._record(ctx, self._clock() - start, exc)
            raise
        self._record(ctx, self._clock() - start, None)

    def _record(self, ctx: InvocationContext, seconds: float, exc: BaseException | None) -> None:
        call, result, permission = ctx.tool_call, ctx.result, ctx.permission
        try:
            digest: str | None = arguments_hash(call.arguments)
        except (TypeError, ValueError):  # no canonical form: the record must still be written
            digest = None
        fields: dict[str, Any] = {
            "event": "call",
            "tool": call.name,
            "call_id": call.id,
            "thread_id": ctx.thread_id,
            "mode": None if ctx.mode is None else str(ctx.mode),
            "decision": None if permission is None else str(permission.decision),
            "source": None if permission is None else permission.source,
            "outcome": None if result is None else result.type.name,
            "error_code": None if result is None else result.wire_code,
            "duration_ms": round(seconds * 1000, 3),
            "arguments_hash": digest,
        }
        if exc is not None:
            fields["exception"] = type(exc).__name__
        if self.log_arguments:
            fields["arguments"] = call.arguments
        outcome = fields["outcome"] or fields.get("exception")
        self.logger.info(
            "call %s %s: %s in %.1f ms", call.name, call.id, outcome, fields["duration_ms"], extra={"toolwire": fields}
        )


class _Window:
    """The start times of the recent calls of one tool (in one thread)."""

    __slots__ = ("max_calls", "per_seconds", "times")

    def __init__(self, max_calls: int, per_seconds: float) -> None:
        self.max_calls, self.per_seconds = max_calls, per_seconds
        self.times: deque[float] = deque()

    def expire(self, now: float) -> None:
        while self.times and self.times[0] <= now - self.per_seconds:
            self.times.popleft()


class RateLimit:
    """Refuse calls of a tool past `max_calls` in any `per_seconds` window.

    A refused call does not run: it ends as an Error with code `rate_limited` that asks the
    model to follow up, and its message says when to try again. Refused calls do not count.

    Args:
        limits: Tool-name globs (`"search_*"`) to `(max_calls, per_seconds)`. Each tool is
            limited on its own; an exact name wins, else the first matching glob in order.
        per_thread: Count each thread separately rather than all threads together.
        clock: Monotonic seconds (inject a fake in tests).

    Raises:
        UsageError: A limit allows fewer than one call or has a window that is not positive.
    """

    def __init__(
        self,
        limits: Mapping[str, tuple[int, float]],
        *,
        per_thread: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for glob, (max_calls, per_seconds) in limits.items():
            if max_calls < 1 or per_seconds <= 0:
                raise UsageError(f"rate limit {glob!r}: use (max_calls >= 1, per_seconds > 0)")
        self.limits = dict(limits)
        self.per_thread = per_thread
        self._clock = clock
        self._windows: dict[tuple[str, str | None], _Window] = {}
        self._sweep_at = 1024

    async def __call__(self, ctx: InvocationContext, call_next: Next) -> None:
        """Refuse the call when its tool is over the limit; otherwise count it and run it."""
        name = ctx.tool_call.name
        limit = self.limits.get(name)
        if limit is None:
            limit = next((value for glob, value in self.limits.items() if fnmatch.fnmatchcase(name, glob)), None)
        if limit is None:
            return await call_next(ctx)
        now = self._clock()
        key = (name, ctx.thread_id if self.per_thread else None)
        window = self._windows.get(key)
        if window is None:
            self._sweep(now)
            window = self._windows[key] = _Window(*limit)
        window.expire(now)
        if len(window.times) >= window.max_calls:
            wait = window.times[0] + window.per_seconds - now
            calls = "1 call" if window.max_calls == 1 else f"{window.max_calls} calls"
            scope = " in this thread" if self.per_thread else ""
            message = (
                f"Rate limit reached for '{name}': at most {calls} per {window.per_seconds:g} s{scope}. "
                f"Try again in {wait:.1f} s, or continue without it."
            )
            ctx.result = ToolResult.failed(ctx.tool_call.id, message, code="rate_limited", needs_followup=True)
            return
        window.times.append(now)
        await call_next(ctx)

    def _sweep(self, now: float) -> None:
        # Threads come and go; drop idle windows so that memory follows the active ones.
        if len(self._windows) <= self._sweep_at:
            return
        for key, window in list(self._windows.items()):
            window.expire(now)
            if not window.times:
                del self._windows[key]
        self._sweep_at = max(1024, 2 * len(self._windows))
