"""Smoke test of bench/flood_bench.py: one round with tiny counts against a real server; no timing asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "flood_bench.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("flood_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_a_round_runs_and_its_figures_are_written(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "flood.json"
    assert bench.main(["--rounds", "1", "--count", "5", "--flood-first", "0.5", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    # (How far the flooder got in 0.5 s depends on the machine's load: not asserted.)
    assert len(figures["rounds"]) == 1 and figures["rounds"][0]["flood_p99_ms"] > 0
    assert figures["rss_after_mib"] > 0 and figures["flooder"].startswith("flooder: ")
