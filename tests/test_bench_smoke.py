"""Smoke test of bench/invoke_overhead.py: every scenario runs, the report renders; no timing asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from toolwire import ResultType

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "invoke_overhead.py"
SCENARIOS = {
    "direct",
    "floor-validated",
    "pydantic-validate",
    "floor-thread",
    "invoke-async",
    "invoke-sync-thread",
    "invoke-sync-inline",
    "invoke-5-filters",
    "invoke-fn",
}


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("invoke_overhead", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_every_scenario_runs_once(bench: ModuleType) -> None:
    async def main() -> dict[str, tuple[float, float]]:
        state = bench.Bench()
        return {scenario.name: await bench.measure(scenario, 3) for scenario in state.scenarios}

    timings = anyio.run(main)
    assert set(timings) == SCENARIOS
    for name, (cpu, wall) in timings.items():
        assert cpu > 0, name
        assert wall > 0, name


def test_invoke_async_returns_the_sum(bench: ModuleType) -> None:
    async def main() -> tuple[Any, list[Any]]:
        state = bench.Bench()
        return await state.pipeline.invoke(state.call), await state.check()

    result, checked = anyio.run(main)
    assert result.type is ResultType.SUCCESS
    assert result.call_id == "call-1"
    assert result.data == 3
    assert [(r.success, r.data) for r in checked] == [(True, 3)] * 5


def test_cli_writes_json_and_markdown(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, doc = tmp_path / "result.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nHand-written intro.\n")
    argv = ["--rounds", "2", "--calls", "10", "--json", str(out), "--markdown", str(doc), "--note", "smoke"]
    assert bench.main(argv) == 0
    assert bench.main(argv) == 0  # a rerun replaces the section, keeps the rest

    result = json.loads(out.read_text())
    assert set(result["scenarios"]) == SCENARIOS
    assert result["rounds"] == 2
    assert result["machine"]["nproc"] >= 1
    assert result["gates"][0]["name"] == "issue"
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nHand-written intro.\n")
    assert text.count(bench.BEGIN) == 1 and text.count(bench.END) == 1
    assert "`invoke-async`" in text and "Note: smoke" in text
    assert "gate: invoke-async − direct" in capsys.readouterr().out
