"""`ToolSurface`: the toolsets bound for one run, combined into what the loop asks of them.

The loop sees one surface per run. With only function tools (the common case) it is a `Toolbox`
and nothing more: no merged registry, no hook to await, no call to answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from .._fast import maker
from ..envelopes import ToolCall, ToolResult
from ..messages import ToolDefinition
from ..modes import ToolMode
from ..pipeline import ToolCallFinished, ToolCallStarted
from ..store import LedgerEntry
from ..tools import Toolbox
from . import BoundToolset

if TYPE_CHECKING:
    from ..events import RunEvent

__all__ = ["ToolSurface", "ledger_entry"]

_pending: Final = maker(LedgerEntry, "thread_id", "call", "request_index", "mode")
"""A server call's PENDING entry (`LedgerEntry(thread_id=..., call=..., request_index=..., mode=...)`, faster)."""
_VALUES: Final = {mode: mode.value for mode in ToolMode}
"""A mode's value without `Enum.value`'s descriptor (a ledger entry per call)."""


def ledger_entry(
    thread_id: str, request_index: int, call: ToolCall, toolbox: Toolbox, owner: BoundToolset | None = None
) -> LedgerEntry:
    """The ledger entry of a call about to run (PENDING); a remote call's has its request id and deadline.

    Args:
        thread_id: The call's thread.
        request_index: The model request whose reply asked for it (-1 when unknown).
        call: The call.
        toolbox: The tools of the turn (the call's mode).
        owner: The toolset to ask for the fields of a remote call; None when no toolset has any.
    """
    tool = toolbox.get(call.name)
    mode = _VALUES[tool.mode] if tool is not None else "external"
    remote = owner.remote(call) if owner is not None and tool is not None else None
    if remote is None:
        return _pending(thread_id, call, request_index, mode)
    return LedgerEntry(
        thread_id=thread_id,
        call=call,
        request_index=request_index,
        execution=remote.execution,
        mode=mode,
        deadline=remote.deadline,
        request_id=remote.request_id,
    )


def _overriding(members: Sequence[BoundToolset], method: str) -> tuple[BoundToolset, ...]:
    """The members whose `method` is not the `Toolbox`'s no-op (nothing to call for the others)."""
    plain = getattr(Toolbox, method)
    return tuple(member for member in members if getattr(type(member), method, None) is not plain)


class ToolSurface:
    """The toolsets bound for one run, in order: an earlier toolset's tool wins a name.

    Args:
        members: The bound toolsets.
        mode_fallback: The mode fallback of the registry that merges their tools.
    """

    __slots__ = (
        "_instructing",
        "_merged",
        "_remote",
        "_sources",
        "answering",
        "definitions",
        "ending",
        "finishing",
        "instructing",
        "members",
        "mode_fallback",
        "static",
        "toolbox",
    )

    definitions: Callable[[], Sequence[ToolDefinition]]
    """The tools offered for this turn: each toolset's, in order."""
    toolbox: Callable[[], Toolbox]
    """Every callable tool of the turn in one registry (rebuilt only when a toolset's changed)."""

    def __init__(self, members: Sequence[BoundToolset], *, mode_fallback: Any) -> None:
        self.members = tuple(members)
        self.mode_fallback = mode_fallback
        self.answering = _overriding(self.members, "answer")
        """The toolsets that may answer calls themselves (none: `answer` is not needed)."""
        self.finishing = _overriding(self.members, "after_batch")
        """The toolsets told when a batch has its results (none: `after_batch` is not needed)."""
        self.ending = _overriding(self.members, "end_run")
        """The toolsets told when the run ends (none: `end_run` is not needed)."""
        self.instructing = _overriding(self.members, "instructions")
        """The toolsets that may add to the system prompt (none: the agent's instructions stand)."""
        self._remote = _overriding(self.members, "remote")
        self._sources: tuple[Toolbox, ...] = ()
        self._merged: Toolbox | None = None
        single = self.members[0] if len(self.members) == 1 else None
        self.static = single if isinstance(single, Toolbox) else None
        """The one toolbox that is the whole surface (its tools never change), else None."""
        # One toolset: its own methods, without a frame in between (the common case).
        self.definitions = self._definitions if single is None else single.definitions
        self.toolbox = self._toolbox if single is None else single.tools

    # -- what the model sees -------------------------------------------------------------------

    def _definitions(self) -> Sequence[ToolDefinition]:
        return tuple(definition for member in self.members for definition in member.definitions())

    def system_prompt(self, instructions: str) -> str:
        """The agent's instructions followed by what the toolsets add this turn."""
        parts = [part for member in self.instructing for part in member.instructions()]
        if not parts:
            return instructions
        return "\n\n".join(part for part in (instructions, *parts) if part)

    def _toolbox(self) -> Toolbox:
        sources = tuple(member.tools() for member in self.members)
        if self._merged is None or any(a is not b for a, b in zip(sources, self._sources, strict=True)):
            self._sources = sources
            self._merged = Toolbox([tool for source in sources for tool in source], mode_fallback=self.mode_fallback)
        return self._merged

    # -- a batch -------------------------------------------------------------------------------

    def entries(self, thread_id: str, request_index: int, calls: Sequence[ToolCall]) -> list[LedgerEntry]:
        """The calls' write-ahead ledger entries (see `ledger_entry`)."""
        toolbox = self.static if self.static is not None else self.toolbox()  # not `or`: an empty toolbox is falsy
        if not self._remote:
            return [ledger_entry(thread_id, request_index, call, toolbox) for call in calls]
        return [ledger_entry(thread_id, request_index, call, toolbox, self._owner(call.name)) for call in calls]

    def _owner(self, name: str) -> BoundToolset | None:
        for member in self.members:
            if name in member.tools():
                return member if member in self._remote else None
        return None

    def answer(
        self, calls: Sequence[ToolCall], request_index: int, emit: Callable[[RunEvent], None] | None
    ) -> list[ToolResult | None] | None:
        """Answer the calls a toolset answers itself (in the model's order); None when it answers none.

        Call it only when some toolset is `answering`.

        Each answered call is told to `emit` as started and finished. Run the others through the
        pipeline, built after this (a container's expansion makes its tools callable in the same
        batch), and put the results together with `merge`.
        """
        answered = [self._answer(call) for call in calls]
        if all(result is None for result in answered):
            return None
        for index, (call, result) in enumerate(zip(calls, answered, strict=True)):
            if result is not None and emit is not None:
                emit(ToolCallStarted(call, None, None, request_index, index))
                emit(ToolCallFinished(call, result, 0.0, request_index, index))
        return answered

    @staticmethod
    def rest(calls: Sequence[ToolCall], answered: Sequence[ToolResult | None]) -> list[ToolCall]:
        """The calls `answer` left for the pipeline."""
        return [call for call, result in zip(calls, answered, strict=True) if result is None]

    @staticmethod
    def merge(answered: Sequence[ToolResult | None], ran: Sequence[ToolResult]) -> list[ToolResult]:
        """The batch's results in the calls' order: the answered ones, and the pipeline's for the rest."""
        results = iter(ran)
        return [result if result is not None else next(results) for result in answered]

    def _answer(self, call: ToolCall) -> ToolResult | None:
        for member in self.answering:
            if (result := member.answer(call)) is not None:
                return result
        return None

    async def after_batch(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Tell each toolset the batch has its results (it may raise to end the run)."""
        for member in self.finishing:
            await member.after_batch(calls, results)

    # -- a crash, the end ----------------------------------------------------------------------

    def resume(self, entries: Sequence[LedgerEntry]) -> set[str]:
        """The ids of the open calls a toolset takes to run again (each offered to one toolset)."""
        taken: set[str] = set()
        for member in _overriding(self.members, "resume"):
            offered = [entry for entry in entries if entry.call.id not in taken]
            if not offered:
                break
            taken.update(member.resume(offered))
        return taken

    async def end_run(self) -> None:
        """Tell every toolset the run ended (each is told, even when one fails)."""
        failure: Exception | None = None
        for member in self.ending:
            try:
                await member.end_run()
            except Exception as exc:  # re-raised below, once the others were told
                failure = failure or exc
        if failure is not None:
            raise failure
