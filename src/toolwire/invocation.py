"""`InvocationContext`: what a filter knows about one call and may change; the filter chain.

A filter is `async def f(ctx, call_next)`: code before `await call_next(ctx)` runs before the
tool, code after it sees `ctx.result`. `compose()` chains filters around the pipeline's endpoint.
An `Observer` is told as each call starts, asks for consent, reports progress and finishes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ._fast import maker, quick_init
from .envelopes import ToolCall, ToolResult
from .modes import ToolMode
from .policy import ConsentRequest, Decision, Permission
from .tools import Cancellation, Tool

if TYPE_CHECKING:
    from ._workers import Gather
    from .telemetry.run import RunTrace

__all__ = [
    "AskHook",
    "CallEvent",
    "ConsentRequested",
    "Filter",
    "InvocationContext",
    "Next",
    "Observer",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolProgress",
    "compose",
]


class InvocationContext:
    """Everything a filter knows about one call, and what it may change.

    A filter may set `result` to answer the call without running the tool (a cache hit), set
    `cancel` to cancel it (Canceled by `policy`), or set `terminate` to end the run after the
    current batch. `properties` carries state between filters and back to the caller.
    """

    __slots__ = (
        "_announced",
        "_asking",
        "_checked",
        "_gather",
        "_started_at",
        "_trace",
        "arguments",
        "cancel",
        "cancellation",
        "mode",
        "observer",
        "permission",
        "properties",
        "request_index",
        "result",
        "terminate",
        "thread_id",
        "tool",
        "tool_call",
        "tool_count",
        "tool_index",
    )

    def __init__(
        self,
        tool_call: ToolCall,
        *,
        thread_id: str | None = None,
        cancellation: Cancellation,
        request_index: int = 0,
        tool_index: int = 0,
        tool_count: int = 1,
        properties: dict[str, Any] | None = None,
        observer: Observer | None = None,
        asking: AskHook | None = None,
    ) -> None:
        self.tool_call = tool_call
        """The call the model requested."""
        self.tool: Tool[..., Any] | None = None
        """The tool that will run; None when the name is unknown."""
        self.mode: ToolMode | None = None
        """The tool's mode."""
        self.arguments: dict[str, Any] = {}
        """The validated keyword arguments the tool will be called with."""
        self.permission: Permission | None = None
        """How the policy allowed the call."""
        self.thread_id = thread_id
        """The conversation the call belongs to."""
        self.request_index = request_index
        """Zero-based index of the model request (turn) whose reply contained the call."""
        self.tool_index = tool_index
        """Zero-based position of the call in its batch."""
        self.tool_count = tool_count
        """Number of calls in the batch."""
        self.properties: dict[str, Any] = {} if properties is None else properties
        """Free state shared by the filters of this call and visible to the caller."""
        self.cancel = False
        """Set to cancel this call: it ends as Canceled by `policy`."""
        self.result: ToolResult | None = None
        """The outcome; set it before `call_next` to skip the tool."""
        self.terminate = False
        """Set to end the tool-calling loop after the current batch."""
        self.cancellation = cancellation
        """The caller's cancellation; `cancellation.cancelled` tells whether the run is stopping."""
        self.observer = observer
        """Told when the call starts, asks for consent and finishes."""
        self._announced = False
        self._asking = asking
        """Told (`False`) before a person is asked about the call, and (`True`) when they allowed it (the ledger)."""
        self._started_at = 0.0
        self._trace: RunTrace | None = None
        """The run's telemetry when spans or metrics are recorded (`Pipeline.invoke_batch`)."""
        self._checked: ToolResult | None = None
        """The result the tool's run gave, already bound and checked by the pipeline."""
        self._gather: Gather | None = None
        """The batch's sync calls that start together in one worker thread (`Pipeline.invoke_batch`)."""

    @property
    def started_at(self) -> float:
        """`time.perf_counter()` when the call was announced (after any consent), else 0."""
        return self._started_at

    def announce(self) -> None:
        """Tell the observer, once, that the call starts (with its mode and decision so far)."""
        if self.observer is not None and not self._announced:
            self._announced = True
            self._started_at = time.perf_counter()
            decision = None if self.permission is None else self.permission.decision
            started = _started(self.tool_call, self.mode, decision, self.request_index, self.tool_index, self.tool)
            self.observer(started)

    def __repr__(self) -> str:
        return (
            f"<InvocationContext {self.tool_call.name} call={self.tool_call.id} "
            f"index={self.request_index}.{self.tool_index}/{self.tool_count} result={self.result!r}>"
        )


@quick_init
@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A call passed the policy and is about to run (or ended before it could: then `decision` is None)."""

    call: ToolCall
    mode: ToolMode | None
    decision: Decision | None
    request_index: int
    tool_index: int
    tool: Tool[..., Any] | None = None
    """The tool that runs (`tool.is_client` for a client's); None when its name is unknown, or when
    its toolset answered the call itself (a container's expansion)."""


@dataclass(frozen=True, slots=True)
class ConsentRequested:
    """The policy is asking a person whether a call may run."""

    request: ConsentRequest


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running call reported how far it got (`ToolContext.report_progress`, e.g. an MCP server's progress)."""

    call: ToolCall
    progress: float
    """How far the call got; it grows with each report of a call."""
    total: float | None
    """What `progress` counts up to, when known."""
    message: str | None
    """What the tool is doing, when it says."""


@quick_init
@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A call has its one result."""

    call: ToolCall
    result: ToolResult
    duration_ms: float
    """From the call's start (after any consent wait) to its result."""
    request_index: int
    tool_index: int


_started: Final = maker(ToolCallStarted, "call", "mode", "decision", "request_index", "tool_index", "tool")
"""`ToolCallStarted(...)`, faster (an event per call)."""

CallEvent = ToolCallStarted | ConsentRequested | ToolProgress | ToolCallFinished
Observer = Callable[[CallEvent], None]
AskHook = Callable[[ToolCall, bool], Awaitable[None]]
"""Told when a call waits for a person's consent (`False`) and when it was allowed and runs (`True`)."""
"""Told about every call as it starts, asks for consent, reports progress and finishes (e.g. to stream them)."""

Next = Callable[[InvocationContext], Awaitable[None]]
"""The rest of the chain: the next filter, and finally the tool."""
Filter = Callable[[InvocationContext, Next], Awaitable[None]]
"""`async def my_filter(ctx, call_next)`: wraps one call, runs before, after and around it."""


def compose(filters: Sequence[Filter], endpoint: Next) -> Next:
    """Chain `filters` around `endpoint`, the first filter outermost."""
    chain = endpoint
    for item in reversed(filters):
        chain = _Link(item, chain)
    return chain


class _Link:
    """One filter bound to the rest of the chain (no extra coroutine per filter)."""

    __slots__ = ("_filter", "_next")

    def __init__(self, filter: Filter, next: Next) -> None:
        self._filter, self._next = filter, next

    def __call__(self, ctx: InvocationContext) -> Awaitable[None]:
        return self._filter(ctx, self._next)
