"""`Collapsed`: any toolset offered as one container tool that the model expands.

A server with 80 tools becomes one tool: the model sees `{name}: "{description} ({n} tools)"`;
calling it expands the container for the rest of the run, and its result is the same text as a
client tool group's expansion (seed 004): "{Name} expanded. Available functions: A, B, C",
followed by the container's function result. While the container is collapsed, a call of one of
its tools is refused (Error `unknown_tool`) with a pointer to the container; once expanded, the
toolset's own tools and instructions are offered, and its calls run as they always do (policy,
filters, deadlines).

The expansion lasts for the run: the next run of the thread offers the container again.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from ..envelopes import ToolCall, ToolResult
from ..errors import UsageError
from ..messages import ToolDefinition
from ..store import LedgerEntry
from ..tools import Toolbox
from . import BoundToolset, RemoteCall, RunScope, Toolset

__all__ = ["EMPTY_PARAMETERS", "Collapsed", "collapsed_refusal", "container_definition", "expansion_text"]

EMPTY_PARAMETERS: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}
"""The parameters of a container tool: it takes none."""

_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def container_definition(tool_name: str, description: str, count: int) -> ToolDefinition:
    """A container as the model is offered it: "{description} ({count} tools)", no parameters."""
    described = f"{description} " if description else ""
    return ToolDefinition(tool_name, f"{described}({count} tools)", EMPTY_PARAMETERS)


def expansion_text(
    name: str, tools: Iterable[str], function_result: str | None = None, *, verb: str = "expanded"
) -> str:
    """The result of calling a container: "{name} expanded. Available functions: A, B" and its function result."""
    text = f"{name} {verb}. Available functions: {', '.join(tools)}"
    return f"{text}\n\n{function_result}" if function_result else text


def collapsed_refusal(call: ToolCall, owner: str, container: str) -> ToolResult:
    """The result of calling a tool whose container is collapsed: Error `unknown_tool`, pointing to the container."""
    message = (
        f"'{call.name}' belongs to {owner}, which is collapsed; call '{container}' first to make its tools available."
    )
    return ToolResult.failed(call.id, message, code="unknown_tool")


class Collapsed:
    """Offer `toolset` as one container tool until the model calls it.

    Args:
        toolset: Any toolset (a `Toolbox`, a server of tools, ...).
        name: The container's tool name (1-64 letters, digits, '_' or '-').
        description: What the container holds, shown to the model beside its tool count.
        function_result: Added after a blank line to the expansion's result.

    Raises:
        UsageError: The name is not a valid tool name.
    """

    def __init__(self, toolset: Toolset, *, name: str, description: str = "", function_result: str = "") -> None:
        if not _NAME.match(name):
            raise UsageError(f"container name {name!r} is not valid: use 1-64 letters, digits, '_' or '-'")
        self.toolset = toolset
        self.name = name
        self.description = description
        self.function_result = function_result

    async def setup(self) -> None:
        """Set up the wrapped toolset."""
        await self.toolset.setup()

    async def teardown(self) -> None:
        """Tear the wrapped toolset down."""
        await self.toolset.teardown()

    async def bind(self, scope: RunScope) -> BoundToolset | None:
        """Bind the wrapped toolset; its binding is offered collapsed."""
        inner = await self.toolset.bind(scope)
        return None if inner is None else _CollapsedRun(self, inner)

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """The wrapped toolset's saved result."""
        return self.toolset.saved_result(entry)


class _CollapsedRun:
    """A bound toolset behind its container, for one run."""

    __slots__ = ("expanded", "inner", "outer")

    def __init__(self, outer: Collapsed, inner: BoundToolset) -> None:
        self.outer = outer
        self.inner = inner
        self.expanded = False

    def definitions(self) -> Sequence[ToolDefinition]:
        """The container while collapsed; the toolset's own tools once expanded."""
        if self.expanded:
            return self.inner.definitions()
        count = len(self.inner.definitions())
        return (container_definition(self.outer.name, self.outer.description, count),)

    def instructions(self) -> Sequence[str]:
        """The toolset's instructions, once expanded."""
        return self.inner.instructions() if self.expanded else ()

    def tools(self) -> Toolbox:
        """The toolset's tools (while collapsed, their calls are refused by `answer`)."""
        return self.inner.tools()

    def answer(self, call: ToolCall) -> ToolResult | None:
        """Expand on a container call; refuse a call of a hidden tool while collapsed."""
        outer = self.outer
        if call.name == outer.name:
            self.expanded = True
            names = [definition.name for definition in self.inner.definitions()]
            return ToolResult.ok(call.id, expansion_text(outer.name, names, outer.function_result))
        if self.expanded:
            return self.inner.answer(call)
        if call.name in self.inner.tools():
            return collapsed_refusal(call, f"'{outer.name}'", outer.name)
        return None

    def remote(self, call: ToolCall) -> RemoteCall | None:
        """The wrapped toolset's ledger fields."""
        return self.inner.remote(call)

    async def after_batch(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Tell the wrapped toolset."""
        await self.inner.after_batch(calls, results)

    def resume(self, entries: Sequence[LedgerEntry]) -> Collection[str]:
        """The wrapped toolset's choice."""
        return self.inner.resume(entries)

    async def end_run(self) -> None:
        """Tell the wrapped toolset."""
        await self.inner.end_run()
