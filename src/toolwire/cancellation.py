"""`Cancellation`: cancel calls from outside (the caller, a filter, a tool), with who canceled and why.

Pure: it knows nothing of the event loop. What it stops is anything with a `cancel()` method: an
anyio `CancelScope`, or a call run under `toolwire.guard`.
"""

from __future__ import annotations

from typing import Any, Protocol

from .envelopes import CanceledBy

__all__ = ["Cancellation", "Interruptible"]


class Interruptible(Protocol):
    """What a `Cancellation` can stop: an anyio `CancelScope`, or a guarded call (`toolwire.guard`)."""

    def cancel(self) -> Any:
        """Stop what it runs."""
        ...


class Cancellation:
    """A way to cancel calls from outside, shared by the caller, the filters and the tools.

    Pass one to `invoke()`; call `cancel()` from the event loop's thread to end every call it
    covers with a Canceled result.
    """

    __slots__ = ("_by", "_more", "_reason", "_scope")

    def __init__(self) -> None:
        self._reason: str | None = None
        self._by: CanceledBy = "user"
        # Usually one scope is attached at a time (the running call, or the model's stream): a
        # slot for it, and a set only for the calls of a batch that run together.
        self._scope: Interruptible | None = None
        self._more: set[Interruptible] | None = None

    @property
    def cancelled(self) -> bool:
        """True once `cancel()` was called."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The reason given to `cancel()`."""
        return self._reason

    @property
    def by(self) -> CanceledBy:
        """Who canceled: `user` unless told otherwise."""
        return self._by

    def cancel(self, reason: str = "Canceled by the user", by: CanceledBy = "user") -> None:
        """Cancel every call this token covers; later calls are canceled before they start."""
        if self._reason is not None:
            return
        self._reason, self._by = reason, by
        if self._scope is not None:
            self._scope.cancel()
        for scope in tuple(self._more or ()):
            scope.cancel()

    def attach(self, scope: Interruptible) -> None:
        """Have `cancel()` cancel `scope` too (the runtime attaches each running call)."""
        if self._reason is not None:
            scope.cancel()
        if self._scope is None or self._scope is scope:
            self._scope = scope
        elif self._more is None:
            self._more = {scope}
        else:
            self._more.add(scope)

    def detach(self, scope: Interruptible) -> None:
        """Forget `scope` once its call has finished."""
        if self._scope is scope:
            self._scope = None
        elif self._more is not None:
            self._more.discard(scope)
