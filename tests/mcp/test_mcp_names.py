"""MCP tool names as providers accept them (no server)."""

from __future__ import annotations

import pytest

from toolwire.errors import UsageError
from toolwire.interop.mcp import ToolNames, sanitize_tool_name


def test_characters_providers_refuse_become_underscores() -> None:
    assert sanitize_tool_name("files.read/v2") == "files_read_v2"


def test_a_name_is_cut_to_64_characters_with_its_prefix() -> None:
    assert sanitize_tool_name("x" * 128, "fs_") == "fs_" + "x" * 61


def test_the_reverse_map_gives_the_mcp_name() -> None:
    names = ToolNames("s", ["files.read"], prefix="fs_")
    assert (dict(names), names.provider_name("files.read")) == ({"fs_files_read": "files.read"}, "fs_files_read")


def test_two_tools_with_one_provider_name_are_refused() -> None:
    with pytest.raises(UsageError, match="'a.b' and 'a_b' both become 'a_b'"):
        ToolNames("s", ["a.b", "a_b"])


def test_an_invalid_prefix_is_refused() -> None:
    with pytest.raises(UsageError, match="prefix 'a.b' is not valid"):
        ToolNames("s", [], prefix="a.b")
