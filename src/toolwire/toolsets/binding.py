"""`Toolsets`: an agent's toolsets, in order, set up once and bound to each run as one `ToolSurface`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..envelopes import ToolResult
from ..errors import UsageError
from ..policy import PermissionPolicy
from ..store import LedgerEntry, Store
from ..tools import Tool, Toolbox
from . import BoundToolset, RunScope, Toolset
from .surface import ToolSurface

__all__ = ["Toolsets", "split_tools"]


def split_tools(
    tools: Toolbox | Iterable[Toolset | Tool[Any, Any] | Callable[..., Any]],
) -> tuple[Toolbox, tuple[Toolset, ...]]:
    """An agent's function toolbox and its toolsets (what `Agent(tools=...)` was given).

    Tools and functions go in one toolbox, offered first; a toolbox given alone is that toolbox.
    """
    if isinstance(tools, Toolbox):
        return tools, (tools,)
    functions: list[Tool[Any, Any] | Callable[..., Any]] = []
    toolsets: list[Toolset] = []
    for item in tools:
        if isinstance(item, Toolset):
            toolsets.append(item)
        else:
            functions.append(item)
    if functions or not toolsets:
        toolbox = Toolbox(functions)
        return toolbox, (toolbox, *toolsets)
    first = next((toolset for toolset in toolsets if isinstance(toolset, Toolbox)), Toolbox())
    return first, tuple(toolsets)


class Toolsets:
    """An agent's toolsets, in order (an earlier toolset's tool wins a name).

    Args:
        toolsets: The toolsets.
        toolbox: The agent's function toolbox (alone, it is the whole surface of a run).
        store: Where the threads live (a toolset's calls are marked DISPATCHED there).
        policy: The agent's permission policy.
    """

    def __init__(
        self, toolsets: Sequence[Toolset], toolbox: Toolbox, *, store: Store, policy: PermissionPolicy
    ) -> None:
        self.toolsets = tuple(toolsets)
        self.toolbox = toolbox
        self.store = store
        self.policy = policy
        self._plain = ToolSurface([toolbox], mode_fallback=toolbox.mode_fallback)
        self.active = False
        """True between `setup` and `teardown`."""

    async def setup(self) -> None:
        """Set up every toolset, in order (those set up are torn down if one fails)."""
        for index, toolset in enumerate(self.toolsets):
            try:
                await toolset.setup()
            except BaseException:
                await self._teardown(self.toolsets[:index])
                raise
        self.active = True

    async def teardown(self) -> None:
        """Tear every toolset down, in reverse order."""
        self.active = False
        await self._teardown(self.toolsets)

    def inserted(self, toolsets: Sequence[Toolset], *, at: int) -> Toolsets:
        """These toolsets with `toolsets` inserted before position `at` (not set up yet).

        Raises:
            UsageError: These toolsets are set up (`setup` ran, `teardown` did not).
        """
        if self.active:
            raise UsageError("add toolsets before the agent is set up (before `async with agent`)")
        ordered = (*self.toolsets[:at], *toolsets, *self.toolsets[at:])
        return Toolsets(ordered, self.toolbox, store=self.store, policy=self.policy)

    @staticmethod
    async def _teardown(toolsets: Sequence[Toolset]) -> None:
        for toolset in reversed(toolsets):
            await toolset.teardown()

    async def bind(self, thread_id: str, inputs: Mapping[Toolset, object]) -> ToolSurface:
        """Bind each toolset to a run of `thread_id`; a toolbox binds to itself (the common, cheap case).

        Args:
            thread_id: The run's thread.
            inputs: What the run was given for some toolsets (`RunScope.input`).

        Raises:
            ToolwireError: A toolset refused the run's input (the others bound are released).
        """
        bound: list[BoundToolset] = []
        try:
            for toolset in self.toolsets:
                if isinstance(toolset, Toolbox):
                    bound.append(toolset)
                elif (member := await toolset.bind(self.scope(thread_id, inputs.get(toolset), bound))) is not None:
                    bound.append(member)
        except BaseException:
            await ToolSurface(bound, mode_fallback=self.toolbox.mode_fallback).end_run()
            raise
        if len(bound) == 1 and bound[0] is self.toolbox:
            return self._plain
        return ToolSurface(bound, mode_fallback=self.toolbox.mode_fallback)

    def scope(self, thread_id: str, given: object, before: Sequence[BoundToolset]) -> RunScope:
        """The scope a toolset binds to: a run of `thread_id`, given `given`, after `before` (not copied)."""
        return RunScope(thread_id, store=self.store, policy=self.policy, input=given, before=before)

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """The result of a remote call whose answer was saved, from its toolset (closing a run)."""
        for toolset in self.toolsets:
            if (result := toolset.saved_result(entry)) is not None:
                return result
        return None
