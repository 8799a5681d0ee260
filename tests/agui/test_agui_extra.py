"""Without the `agui` extra, the AG-UI modules fail with the line that installs it."""

from __future__ import annotations

import importlib
import sys

import pytest

from toolwire.errors import UsageError


def test_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ag_ui", None)  # as if ag-ui-protocol were not installed
    monkeypatch.delitem(sys.modules, "toolwire.interop.agui.event_map", raising=False)
    with pytest.raises(UsageError, match=r"pip install 'toolwire\[agui\]'"):
        importlib.import_module("toolwire.interop.agui.event_map")
