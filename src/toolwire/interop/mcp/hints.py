"""An MCP tool's `ToolMode`: its annotations, its name's pattern, the server's minimum, and why.

MCP annotations are hints a server gives about its own tools (spec defaults for an unset hint:
`readOnlyHint` false, `destructiveHint` true, `openWorldHint` true). What they mean as a mode:

| readOnlyHint | destructiveHint | openWorldHint | mode |
|---|---|---|---|
| true | - | false | read |
| true | - | true (or unset) | external |
| false (or unset) | true (or unset) | - | destructive |
| false (or unset) | false | false | safe_write |
| false (or unset) | false | true (or unset) | external |

A **trusted** server's annotations decide the mode (a tool without any annotation falls back to
the name's pattern). An **untrusted** server's annotations can only raise the risk its tool
name's pattern gives (`classify_tool`), never lower it: a server calling a tool `get-env` and
marking it read-only does not make it `read`. Then the server's minimum mode is a floor
(`external` by default for an untrusted server, as for a client's tools; none for a trusted one).
The decision's reason names the source: the annotations, the pattern, or the minimum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...modes import ModeDecision, ModeSource, ToolMode, classify_tool

if TYPE_CHECKING:
    from mcp.types import ToolAnnotations

__all__ = ["annotation_mode", "tool_mode"]


def annotation_mode(annotations: ToolAnnotations | None) -> ToolMode | None:
    """The mode an MCP tool's annotations mean (see the module's table); None without any hint."""
    if annotations is None:
        return None
    read_only = annotations.read_only_hint
    destructive = annotations.destructive_hint
    open_world = annotations.open_world_hint
    if read_only is None and destructive is None and open_world is None:
        return None
    open_world = open_world is not False
    if read_only:
        return ToolMode.EXTERNAL if open_world else ToolMode.READ
    if destructive is not False:
        return ToolMode.DESTRUCTIVE
    return ToolMode.EXTERNAL if open_world else ToolMode.SAFE_WRITE


def _describe(annotations: ToolAnnotations) -> str:
    hints = {
        "readOnlyHint": annotations.read_only_hint,
        "destructiveHint": annotations.destructive_hint,
        "openWorldHint": annotations.open_world_hint,
    }
    given = ", ".join(f"{key}={str(value).lower()}" for key, value in hints.items() if value is not None)
    return f"({given})"


def tool_mode(
    name: str,
    annotations: ToolAnnotations | None,
    *,
    server: str,
    trusted: bool,
    minimum: ToolMode | None,
) -> ModeDecision:
    """Decide an MCP tool's mode, keeping the reason.

    Args:
        name: The tool's MCP name (its pattern is read from it, without any prefix).
        annotations: The tool's annotations as the server listed them.
        server: The server's label, named in the reason.
        trusted: The server's annotations decide; else they only raise the pattern's risk.
        minimum: The floor applied last (None: no floor).
    """
    hinted = annotation_mode(annotations)
    source = f"the MCP annotations of {server!r} {_describe(annotations)}" if annotations is not None else ""
    if trusted:
        decision = classify_tool(name, hint=hinted, hint_source=source)
    else:
        decision = classify_tool(name)
        if hinted is not None and hinted.risk > decision.mode.risk:
            decision = ModeDecision(hinted, ModeSource.HINT, source)
    if minimum is not None and minimum.risk > decision.mode.risk:
        kind = "trusted" if trusted else "untrusted"
        decision = ModeDecision(minimum, ModeSource.MINIMUM, f"the minimum mode of {kind} MCP server {server!r}")
    return decision
