"""Smoke test of bench/threads_bench.py: one round with a few threads; no timing asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "threads_bench.py"


def test_a_round_runs_and_its_figures_are_written(tmp_path: Path) -> None:
    out, page = tmp_path / "threads.json", tmp_path / "benchmarks.md"
    argv = [sys.executable, str(SCRIPT), "--rounds", "1", "--threads", "2", "--json", str(out), "--markdown", str(page)]
    subprocess.run(argv, check=True, capture_output=True)
    figures = json.loads(out.read_text())
    assert set(figures["stores"]) == {"memory", "sqlite"}
    assert all(figures["stores"][kind]["warm_us"]["1000"]["median"] > 0 for kind in ("memory", "sqlite"))
    assert "| sqlite |" in page.read_text()
