"""Smoke test of bench/memory_bench.py: both scenarios and modes with tiny counts, and the report."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "memory_bench.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    path, modules = list(sys.path), set(sys.modules)
    spec = importlib.util.spec_from_file_location("memory_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = path
        for name in {"memory_bench", "loop_common", "invoke_overhead"} - modules:
            sys.modules.pop(name, None)


def test_the_scenarios_run_and_the_section_is_written(bench: ModuleType, tmp_path: Path) -> None:
    out, page = tmp_path / "memory.json", tmp_path / "benchmarks.md"
    argv = ["--runs", "8", "--warm-up", "4", "--max-threads", "2", "--json", str(out), "--markdown", str(page)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["figures"]
    assert (figures["bounded"]["threads_kept"], figures["unbounded"]["threads_kept"]) == (2, 12)
    assert bench.BEGIN in page.read_text() and figures["gate"]["status"] in ("PASS", "FAIL")
