from __future__ import annotations

import pytest

from toolwire.modes import (
    MODE_PATTERNS,
    ModeDecision,
    ModeSource,
    ToolMode,
    classify_tool,
    decide_tool_mode,
    normalize_tool_name,
)

# Seed 002's pattern rules, written out again so that a change to MODE_PATTERNS is caught.
SEED_PATTERNS = [
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
]


def test_mode_values_are_seed_002s():
    assert {mode.value for mode in ToolMode} == {"read", "safe_write", "destructive", "local", "external"}


def test_mode_patterns_are_seed_002s():
    assert list(MODE_PATTERNS) == SEED_PATTERNS


@pytest.mark.parametrize(("prefix", "mode"), SEED_PATTERNS, ids=[prefix for prefix, _ in SEED_PATTERNS])
def test_each_seed_pattern_classifies_as_specified(prefix: str, mode: ToolMode):
    decision = classify_tool(f"{prefix}x")
    assert decision == ModeDecision(mode, ModeSource.PATTERN, f"^{prefix}")
    assert decision.reason == f"name matches ^{prefix}"
    assert decide_tool_mode(f"{prefix}x") is mode


@pytest.mark.parametrize("name", ["get", "getter", "target_get_x", "settings", "address_book", "dropbox_sync"])
def test_prefix_must_start_the_name_and_end_in_underscore(name: str):
    assert classify_tool(name) == ModeDecision(ToolMode.EXTERNAL, ModeSource.FALLBACK)


# -- seed 004's client tool names -----------------------------------------------------------------------


def test_open_file_falls_back_to_external():
    # No pattern matches `open_`, so the fallback decides.
    decision = classify_tool("OpenFile")
    assert (decision.mode, decision.source, decision.detail) == (ToolMode.EXTERNAL, ModeSource.FALLBACK, "")
    assert decision.reason == "no pattern matches the name; fallback mode external"


def test_get_selection_is_read():
    decision = classify_tool("GetSelection")
    assert (decision.mode, decision.source, decision.detail) == (ToolMode.READ, ModeSource.PATTERN, "^get_")
    assert decision.reason == "name matches ^get_"


def test_show_message_falls_back_to_external():
    decision = classify_tool("ShowMessage")
    assert (decision.mode, decision.source) == (ToolMode.EXTERNAL, ModeSource.FALLBACK)
    assert decision.reason == "no pattern matches the name; fallback mode external"


def test_delete_file_is_destructive():
    decision = classify_tool("DeleteFile")
    assert (decision.mode, decision.source, decision.detail) == (ToolMode.DESTRUCTIVE, ModeSource.PATTERN, "^delete_")
    assert decision.reason == "name matches ^delete_"


# -- normalisation ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "normalized"),
    [
        ("GetSelection", "get_selection"),
        ("get-selection", "get_selection"),
        ("getHTMLPage", "get_html_page"),
        ("get selection", "get_selection"),
        ("get_selection", "get_selection"),
        ("OpenFile", "open_file"),
        ("open-file", "open_file"),
        ("GETData", "get_data"),
        ("  Get-Selection ", "get_selection"),
    ],
)
def test_normalize_tool_name(name: str, normalized: str):
    assert normalize_tool_name(name) == normalized


@pytest.mark.parametrize("name", ["GetSelection", "get-selection", "getHTMLPage", "get selection"])
def test_normalised_names_match_the_read_pattern(name: str):
    assert classify_tool(name) == ModeDecision(ToolMode.READ, ModeSource.PATTERN, "^get_")


# -- precedence: explicit > hint > pattern > fallback ---------------------------------------------------


def test_explicit_beats_hint_and_pattern():
    decision = classify_tool("delete_file", explicit=ToolMode.READ, hint=ToolMode.LOCAL, hint_source="mcp")
    assert (decision.mode, decision.source) == (ToolMode.READ, ModeSource.EXPLICIT)
    assert decision.reason == "mode read given at registration"


def test_hint_beats_pattern():
    decision = classify_tool("get_weather", hint=ToolMode.EXTERNAL, hint_source="MCP annotations")
    assert decision == ModeDecision(ToolMode.EXTERNAL, ModeSource.HINT, "MCP annotations")
    assert decision.reason == "mode external from MCP annotations"


def test_hint_without_source_says_trusted_hint():
    assert classify_tool("x", hint=ToolMode.READ).reason == "mode read from a trusted hint"


def test_pattern_beats_fallback():
    decision = classify_tool("list_files", fallback=ToolMode.LOCAL)
    assert (decision.mode, decision.source) == (ToolMode.READ, ModeSource.PATTERN)


def test_explicit_accepts_the_mode_value():
    assert classify_tool("x", explicit=ToolMode("local")).mode is ToolMode.LOCAL


# -- fallback ---------------------------------------------------------------------------------------


def test_fallback_defaults_to_external():
    assert decide_tool_mode("ShowMessage") is ToolMode.EXTERNAL


@pytest.mark.parametrize("fallback", list(ToolMode))
def test_fallback_is_configurable(fallback: ToolMode):
    decision = classify_tool("ShowMessage", fallback=fallback)
    assert (decision.mode, decision.source) == (fallback, ModeSource.FALLBACK)
    assert decision.reason == f"no pattern matches the name; fallback mode {fallback.value}"
    assert decide_tool_mode("ShowMessage", fallback=fallback) is fallback


# -- risk order ---------------------------------------------------------------------------------------

RISK_ORDER = [ToolMode.READ, ToolMode.SAFE_WRITE, ToolMode.EXTERNAL, ToolMode.DESTRUCTIVE, ToolMode.LOCAL]


def test_risk_order_is_read_safe_write_external_destructive_local():
    assert sorted(ToolMode, key=lambda mode: mode.risk) == RISK_ORDER
    assert len({mode.risk for mode in ToolMode}) == len(ToolMode)


@pytest.mark.parametrize("low", RISK_ORDER)
@pytest.mark.parametrize("high", RISK_ORDER)
def test_at_least_returns_the_riskier_mode(low: ToolMode, high: ToolMode):
    riskier = max(low, high, key=RISK_ORDER.index)
    assert low.at_least(high) is riskier
    assert high.at_least(low) is riskier


def test_at_least_never_lowers_risk():
    assert ToolMode.LOCAL.at_least(ToolMode.READ) is ToolMode.LOCAL
    assert ToolMode.READ.at_least(ToolMode.DESTRUCTIVE) is ToolMode.DESTRUCTIVE
