"""MCP tool names as model providers accept them, and the way back.

MCP allows up to 128 characters, dots and slashes among them; providers accept
`^[a-zA-Z0-9_-]{1,64}$`. `ToolNames` turns each MCP name into a provider name (an optional
per-server prefix, every other character replaced by `_`, cut to 64 characters) and keeps the
reverse map; two MCP names that end up the same are refused, never silently merged.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Final

from ...errors import UsageError

__all__ = ["MAX_NAME", "ToolNames", "sanitize_tool_name"]

MAX_NAME: Final = 64
"""The longest tool name providers accept."""

_INVALID: Final = re.compile(r"[^A-Za-z0-9_-]")
_PREFIX: Final = re.compile(r"^[A-Za-z0-9_-]{0,32}$")


def sanitize_tool_name(name: str, prefix: str = "") -> str:
    """`prefix` + `name` with every character providers refuse replaced by `_`, cut to 64 characters.

    Raises:
        UsageError: The name is empty.
    """
    if not name:
        raise UsageError("an MCP server listed a tool without a name")
    return (prefix + _INVALID.sub("_", name))[:MAX_NAME]


class ToolNames(Mapping[str, str]):
    """The provider names of one server's tools: provider name -> MCP name.

    Args:
        server: The server's label, for messages.
        names: The MCP names, as the server listed them.
        prefix: Put before every name (up to 32 letters, digits, '_' or '-'), e.g. `"fs_"`.

    Raises:
        UsageError: An invalid prefix, or two tools with one provider name.
    """

    def __init__(self, server: str, names: Collection[str], *, prefix: str = "") -> None:
        if not _PREFIX.match(prefix):
            raise UsageError(
                f"MCP server {server!r}: prefix {prefix!r} is not valid: use up to 32 letters, digits, '_' or '-'"
            )
        self._to_mcp: dict[str, str] = {}
        self._to_provider: dict[str, str] = {}
        for name in names:
            provider = sanitize_tool_name(name, prefix)
            if provider in self._to_mcp:
                other = self._to_mcp[provider]
                raise UsageError(
                    f"MCP server {server!r}: tools {other!r} and {name!r} both become {provider!r} for the model; "
                    "leave one out with the server's `tools` filter"
                )
            self._to_mcp[provider] = name
            self._to_provider[name] = provider

    def __getitem__(self, provider: str) -> str:
        return self._to_mcp[provider]

    def __iter__(self) -> Iterator[str]:
        return iter(self._to_mcp)

    def __len__(self) -> int:
        return len(self._to_mcp)

    def provider_name(self, mcp_name: str) -> str:
        """The name the model calls an MCP tool by."""
        return self._to_provider[mcp_name]
