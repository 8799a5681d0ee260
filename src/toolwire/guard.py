"""Run a coroutine under a deadline and a `Cancellation`: `INTERRUPTED` if either ends it first.

`guarded()` here is the plain version: an anyio cancel scope with a deadline. The runtime's hot
path uses `_fast.guarded`, which gives the same results and pays for the scope only when the
coroutine waits (see `toolwire._fast`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, Literal, TypeVar

if TYPE_CHECKING:
    import asyncio

    from .cancellation import Cancellation

__all__ = ["INTERRUPTED", "asyncio_loop", "guarded"]

T = TypeVar("T")


class _Interrupted(enum.Enum):
    INTERRUPTED = "interrupted"


INTERRUPTED: Final = _Interrupted.INTERRUPTED
"""What `guarded()` returns when the deadline passed or the cancellation fired first."""


async def guarded(
    coroutine: Coroutine[Any, Any, T], seconds: float | None, cancellation: Cancellation | None = None
) -> T | Literal[_Interrupted.INTERRUPTED]:
    """Await `coroutine`; `INTERRUPTED` if `seconds` pass or `cancellation` fires first.

    The coroutine's own exceptions propagate. A cancellation from outside (the caller's cancel
    scope, a cancelled task) propagates as well: only this call's deadline and `cancellation`
    end it with `INTERRUPTED`.
    """
    from anyio import CancelScope, current_time  # here: the guard loads no event loop machinery at import

    deadline = float("inf") if seconds is None else current_time() + seconds
    with CancelScope(deadline=deadline) as scope:
        if cancellation is not None:
            cancellation.attach(scope)
        try:
            return await coroutine
        finally:
            if cancellation is not None:
                cancellation.detach(scope)
    if scope.cancelled_caught:
        return INTERRUPTED
    raise AssertionError("unreachable: a cancel scope that did not cancel returned no value")  # pragma: no cover


def asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop; None on another event loop (trio)."""
    get = _running_loop
    if get is None:
        get = _bind_running_loop()
    return get()


_running_loop: Callable[[], asyncio.AbstractEventLoop | None] | None = None
"""asyncio's `_get_running_loop` (C; None, not an exception, off asyncio), once asked for: twice per tool call."""


def _bind_running_loop() -> Callable[[], asyncio.AbstractEventLoop | None]:
    global _running_loop
    from asyncio import _get_running_loop  # pyright: ignore[reportPrivateUsage]  # here: `import toolwire` loads no asyncio

    _running_loop = _get_running_loop
    return _get_running_loop
