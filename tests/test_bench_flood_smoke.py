"""Smoke test of bench/flood_bench.py: one round with tiny counts against a real server; no timing asserted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with bench_script("flood_bench") as module:
        yield module


def test_a_round_runs_and_its_figures_are_written(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "flood.json"
    assert bench.main(["--rounds", "1", "--count", "5", "--flood-first", "0.5", "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    # (How far the flooder got in 0.5 s depends on the machine's load: not asserted.)
    assert len(figures["rounds"]) == 1 and figures["rounds"][0]["flood_p99_ms"] > 0
    assert figures["rss_after_mib"] > 0 and figures["flooder"].startswith("flooder: ")
