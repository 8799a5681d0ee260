"""Smoke test of bench/store_bench.py: one round with one run; no timing asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "store_bench.py"


def test_a_round_runs_and_its_figures_are_written(tmp_path: Path) -> None:
    out, page = tmp_path / "store.json", tmp_path / "benchmarks.md"
    argv = [sys.executable, str(SCRIPT), "--rounds", "1", "--runs", "1", "--json", str(out), "--markdown", str(page)]
    subprocess.run(argv, check=True, capture_output=True)
    figures = json.loads(out.read_text())
    assert set(figures["scenarios"]) == {"TW-1", "TW-2"}
    assert all(figures["scenarios"][name]["sqlite_us"]["median"] > 0 for name in ("TW-1", "TW-2"))
    assert all(figures["scenarios"][name]["floor_ratio"]["median"] > 1 for name in ("TW-1", "TW-2"))
    assert "| TW-2 |" in page.read_text()
