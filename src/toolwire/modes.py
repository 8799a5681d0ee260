"""`ToolMode`: how risky a tool is, decided from what is known about it, with the reason kept.

The decision takes, in order of precedence: a mode given explicitly when a server tool is
registered, a hint from a trusted source (e.g. MCP annotations), the tool's name matched against
the tools spec's patterns after normalising it (`GetSelection`, `get-selection` -> `get_selection`),
and a configurable fallback (`external` unless configured otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "MODE_PATTERNS",
    "ModeDecision",
    "ModeSource",
    "ToolMode",
    "classify_tool",
    "decide_tool_mode",
    "normalize_tool_name",
]


class ToolMode(StrEnum):
    """How risky a tool call is; the permission policy and the UI treat each mode differently."""

    READ = "read"
    """Pure inspection, no side effects: runs without consent."""
    SAFE_WRITE = "safe_write"
    """A bounded mutation (e.g. updating an event): runs, with a preview of the change."""
    DESTRUCTIVE = "destructive"
    """An irreversible change (delete, drop): runs, with an undo affordance."""
    LOCAL = "local"
    """Touches the user's machine (shell, local files): asks for consent."""
    EXTERNAL = "external"
    """Calls outside services: runs, and is logged."""

    @property
    def risk(self) -> int:
        """Rank in the risk order read < safe_write < external < destructive < local."""
        return _RISK[self]

    def at_least(self, other: ToolMode) -> ToolMode:
        """Return the riskier of the two modes (a declared mode may raise risk, never lower it)."""
        return other if other.risk > self.risk else self


_RISK: Final = {
    ToolMode.READ: 0,
    ToolMode.SAFE_WRITE: 1,
    ToolMode.EXTERNAL: 2,
    ToolMode.DESTRUCTIVE: 3,
    ToolMode.LOCAL: 4,
}

MODE_PATTERNS: Final[tuple[tuple[str, ToolMode], ...]] = (
    ("get_", ToolMode.READ),
    ("list_", ToolMode.READ),
    ("read_", ToolMode.READ),
    ("search_", ToolMode.READ),
    ("create_", ToolMode.SAFE_WRITE),
    ("update_", ToolMode.SAFE_WRITE),
    ("add_", ToolMode.SAFE_WRITE),
    ("set_", ToolMode.SAFE_WRITE),
    ("delete_", ToolMode.DESTRUCTIVE),
    ("remove_", ToolMode.DESTRUCTIVE),
    ("archive_", ToolMode.DESTRUCTIVE),
    ("drop_", ToolMode.DESTRUCTIVE),
    ("local_", ToolMode.LOCAL),
    ("shell_", ToolMode.LOCAL),
    ("exec_", ToolMode.LOCAL),
)
"""The name prefixes of the tools spec (`^get_`, ...) and the mode each one means, in order."""


class ModeSource(StrEnum):
    """Where a tool's mode came from, from strongest to weakest; a `MINIMUM` floor is applied last."""

    EXPLICIT = "explicit"
    HINT = "hint"
    PATTERN = "pattern"
    FALLBACK = "fallback"
    MINIMUM = "minimum"
    """A floor applied after the others decided (e.g. an untrusted MCP server's minimum mode)."""


@dataclass(frozen=True, slots=True)
class ModeDecision:
    """A tool's mode and why it was chosen."""

    mode: ToolMode
    source: ModeSource
    detail: str = ""
    """The matched pattern (`^get_`), the hint's origin, or empty."""

    @property
    def reason(self) -> str:
        """A sentence for logs and consent prompts, e.g. "name matches ^delete_"."""
        match self.source:
            case ModeSource.EXPLICIT:
                return f"mode {self.mode} given at registration"
            case ModeSource.HINT:
                return f"mode {self.mode} from {self.detail or 'a trusted hint'}"
            case ModeSource.PATTERN:
                return f"name matches {self.detail}"
            case ModeSource.FALLBACK:
                return f"no pattern matches the name; fallback mode {self.mode}"
            case ModeSource.MINIMUM:
                return f"raised to {self.mode} by {self.detail or 'a minimum mode'}"


_BOUNDARY_LOWER_UPPER = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_BOUNDARY_ACRONYM = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[\s\-.]+")


def normalize_tool_name(name: str) -> str:
    """Return `name` in snake_case: `GetSelection`, `get-selection`, `getHTMLPage` -> `get_html_page`."""
    name = _BOUNDARY_ACRONYM.sub("_", _BOUNDARY_LOWER_UPPER.sub("_", name.strip()))
    return _SEPARATORS.sub("_", name).lower()


def classify_tool(
    name: str,
    *,
    explicit: ToolMode | None = None,
    hint: ToolMode | None = None,
    hint_source: str = "",
    fallback: ToolMode = ToolMode.EXTERNAL,
) -> ModeDecision:
    """Decide a tool's mode and record why.

    Args:
        name: The tool's name, in any casing.
        explicit: A mode given when a server tool was registered; wins over everything.
        hint: A mode derived from a trusted source, e.g. MCP tool annotations.
        hint_source: Where the hint came from, kept in the decision.
        fallback: The mode when nothing else decides.
    """
    if explicit is not None:
        return ModeDecision(ToolMode(explicit), ModeSource.EXPLICIT)
    if hint is not None:
        return ModeDecision(ToolMode(hint), ModeSource.HINT, hint_source)
    normalized = normalize_tool_name(name)
    for prefix, mode in MODE_PATTERNS:
        if normalized.startswith(prefix):
            return ModeDecision(mode, ModeSource.PATTERN, f"^{prefix}")
    return ModeDecision(fallback, ModeSource.FALLBACK)


def decide_tool_mode(name: str, fallback: ToolMode = ToolMode.EXTERNAL) -> ToolMode:
    """Return the mode the tools spec's name patterns give `name`, else `fallback`."""
    return classify_tool(name, fallback=fallback).mode
