"""Smoke test of bench/loop_bench.py: every toolwire scenario (TW-1 … TW-10) runs once with tiny
counts and the report renders; no timing is asserted."""

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

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "loop_bench.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    path, modules = list(sys.path), set(sys.modules)
    bench_modules = {"loop_bench", "loop_common", "invoke_overhead"}
    spec = importlib.util.spec_from_file_location("loop_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path[:] = path
        for name in bench_modules - modules:  # only the scripts' modules: toolwire's own stay loaded
            sys.modules.pop(name, None)


def tiny_counts(bench: ModuleType) -> dict[str, int]:
    return dict.fromkeys(bench.BASE_COUNTS, 1)


def test_every_in_process_unit_runs_once(bench: ModuleType) -> None:
    async def main() -> list[str]:
        state = bench.Bench(tiny_counts(bench), 3, tool_count=3)
        await state.check()  # each toolwire scenario's transcript: 3 per call, answer "done"
        for unit in state.units:  # `measure` (a gc.collect() each) runs in the CLI test
            await unit.run(1)
        return [unit.name for unit in state.units]

    names = anyio.run(main)
    assert {"tw/t0", "tw/t20", "tw/t40", "tw/t20x8", "tw-thread/t20", "tw-inline/t20", "tw5/t20"} <= set(names)
    assert {"register-tool", "toolbox-100", "export-cached", "validate-tool", "c-tw/t20", "floor/t20"} <= set(names)


@pytest.mark.parametrize("impl", ["floor", "toolwire", "toolwire-consent"])
def test_tw8_parks_and_releases_runs(bench: ModuleType, impl: str) -> None:
    out = bench.tw8_measure(impl, 2, top=3 if impl != "floor" else 0)
    assert out["impl"] == impl and out["runs"] == 2
    assert isinstance(out["rss_kb"], float)
    assert out["tracemalloc_kb"] > 0
    assert ("top" in out) == (impl != "floor")


def test_tw10_times_an_import_of_toolwire(bench: ModuleType) -> None:
    assert "PYTHONDONTWRITEBYTECODE" not in bench.child_env()
    samples = bench.import_rounds({"toolwire": "import toolwire"}, 1, warm_up=False, progress=False)
    assert samples["toolwire"]["cpu_ms"][0] > 0 and samples["toolwire"]["rss_mib"][0] > 1


def _rounds(value: float) -> list[float]:
    return [value, value * 1.1]


def test_derive_and_gates_for_the_child_process_scenarios(bench: ModuleType) -> None:
    tw8 = {
        "runs": 10,
        "rounds": 2,
        "samples": {
            impl: {"rss_kb": _rounds(kb), "tracemalloc_kb": _rounds(kb)}
            for impl, kb in (("floor", 10.0), ("toolwire", 20.0), ("toolwire-consent", 40.0))
        },
    }
    samples = {
        name: {"cpu_ms": _rounds(ms), "rss_mib": _rounds(mib)}
        for name, ms, mib in (
            ("bare", 10.0, 8.0),
            ("pydantic", 60.0, 16.0),
            ("toolwire", 85.0, 20.0),
            ("core-floor", 80.0, 20.0),
        )
    }
    figures = bench.derive({}, tw8, {"samples": samples})
    assert figures["tw8_tool_tracemalloc_kb_ratio"]["median"] == pytest.approx(2.0)
    assert figures["tw10_ratio"]["median"] == pytest.approx(1.5, rel=0.05)
    status = {gate["id"]: gate["status"] for gate in bench.gates(figures)}
    assert status["TW-8"] == "PASS" and status["TW-8 consent"] == "FAIL"
    assert "TW-1" not in status


def test_cli_writes_json_and_markdown_and_compares_peers(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peers = {
        "date": "2026-01-01T00:00:00Z",
        "rounds": 7,
        "versions": {"langchain": "1.0"},
        "errors": {},
        "peers": {
            "langchain": {"tw1_call_us": {"median": 1000.0}, "tw1_call_us_ratio": {"median": 300.0}},
            "other": {"tw1_call_us": {"median": 2000.0}, "tw3_run_us": {"median": 900.0}},
        },
    }
    (tmp_path / "peers-2026-01-01.json").write_text(json.dumps(peers))
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(bench, "BASE_COUNTS", tiny_counts(bench))
    out, doc = tmp_path / "loop.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nIntro.\n\n<!-- invoke_overhead:begin -->\nkept\n<!-- invoke_overhead:end -->\n")
    argv = ["--rounds", "1", "--concurrent", "2", "--tools", "2", "--only", "inproc", "--note", "smoke"]
    assert bench.main([*argv, "--json", str(out), "--markdown", str(doc)]) == 0

    result: dict[str, Any] = json.loads(out.read_text())
    assert result["rounds"] == 1 and "tw/t20" in result["units"] and result["note"] == "smoke"
    assert {gate["id"] for gate in result["gates"]} >= {"TW-1", "TW-2", "TW-3", "TW-4", "TW-5", "TW-7", "TW-9"}
    best = {row["scenario"]: row["best_peer"] for row in result["peers"]["rows"]}
    assert best["TW-1 µs per call"] == "langchain" and best["TW-3 µs per 0-turn run"] == "other"
    bench.write_section(doc, bench.render_markdown(result), bench.BEGIN, bench.END)  # a rerun replaces it
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nIntro.\n") and "kept" in text
    assert text.count(bench.BEGIN) == 1 and text.count(bench.END) == 1
    assert "| TW-1 |" in text and "Against the best peer" in text and "Note: smoke" in text
