"""How an MCP tool's annotations, its name and the server's trust become its `ToolMode` (no server)."""

from __future__ import annotations

import pytest
from mcp.types import ToolAnnotations

from toolwire import ToolMode
from toolwire.interop.mcp import annotation_mode, tool_mode
from toolwire.modes import ModeSource


def hints(
    read_only: bool | None = None, destructive: bool | None = None, open_world: bool | None = None
) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=read_only, destructive_hint=destructive, open_world_hint=open_world)


@pytest.mark.parametrize(
    ("annotations", "mode"),
    [
        (hints(True, None, False), ToolMode.READ),
        (hints(True, None, True), ToolMode.EXTERNAL),
        (hints(True), ToolMode.EXTERNAL),  # openWorldHint defaults to true
        (hints(False, True, False), ToolMode.DESTRUCTIVE),
        (hints(False, None, False), ToolMode.DESTRUCTIVE),  # destructiveHint defaults to true
        (hints(False, False, False), ToolMode.SAFE_WRITE),
        (hints(False, False, True), ToolMode.EXTERNAL),
        (hints(None, False, None), ToolMode.EXTERNAL),
    ],
)
def test_annotations_mean_a_mode(annotations: ToolAnnotations, mode: ToolMode) -> None:
    assert annotation_mode(annotations) is mode


def test_no_hint_means_no_mode() -> None:
    assert annotation_mode(hints()) is None


def test_a_trusted_servers_annotations_decide() -> None:
    decision = tool_mode("delete_all", hints(True, None, False), server="s", trusted=True, minimum=None)
    assert (decision.mode, decision.source) == (ToolMode.READ, ModeSource.HINT)


def test_an_untrusted_servers_annotations_do_not_lower_the_patterns_mode() -> None:
    decision = tool_mode("delete_all", hints(True, None, False), server="s", trusted=False, minimum=None)
    assert (decision.mode, decision.reason) == (ToolMode.DESTRUCTIVE, "name matches ^delete_")


def test_an_untrusted_servers_annotations_raise_the_patterns_mode() -> None:
    decision = tool_mode("get_rid_of", hints(False, True), server="s", trusted=False, minimum=None)
    assert (decision.mode, decision.source) == (ToolMode.DESTRUCTIVE, ModeSource.HINT)
    assert "annotations of 's' (readOnlyHint=false, destructiveHint=true)" in decision.reason


def test_the_minimum_is_a_floor_named_in_the_reason() -> None:
    decision = tool_mode("get_x", None, server="s", trusted=False, minimum=ToolMode.EXTERNAL)
    assert (decision.mode, decision.reason) == (
        ToolMode.EXTERNAL,
        "raised to external by the minimum mode of untrusted MCP server 's'",
    )
