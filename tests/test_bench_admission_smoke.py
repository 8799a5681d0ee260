"""Smoke test of bench/admission_bench.py: one round with tiny counts against a real server; no timing asserted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with bench_script("admission_bench") as module:
        yield module


def test_a_round_runs_and_its_figures_are_written(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "admission.json"
    arguments = ["--conversations", "6", "--peak-at", "2", "--limits", "1", "--seconds", "1", "--warmup", "0.5"]
    assert bench.main([*arguments, "--rounds", "1", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    assert len(figures["results"]) == 3 and figures["summary"]["peak_turns_per_s"] > 0
    [limited] = [r for r in figures["results"] if r["max_runs"] == 1]
    assert limited["told_queued"] > 0 and limited["max_position"] >= 1 and limited["refused"] == 0
