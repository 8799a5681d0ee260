"""Smoke test of bench/memory_bench.py: both scenarios and modes with tiny counts, and the report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from bench_scripts import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with bench_script("memory_bench") as module:
        yield module


def test_the_scenarios_run_and_the_section_is_written(bench: ModuleType, tmp_path: Path) -> None:
    out, page = tmp_path / "memory.json", tmp_path / "benchmarks.md"
    argv = ["--runs", "8", "--warm-up", "4", "--max-threads", "2", "--json", str(out), "--markdown", str(page)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["figures"]
    assert (figures["bounded"]["threads_kept"], figures["unbounded"]["threads_kept"]) == (2, 12)
    assert bench.BEGIN in page.read_text() and figures["gate"]["status"] in ("PASS", "FAIL")
