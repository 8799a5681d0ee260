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
    bench_modules = {"loop_bench", "loop_common", "invoke_overhead", "peers", "peers.session", "run", "adapters"}
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
            ("toolwire", 10.5, 8.0),
            ("floor-first-use", 210.0, 28.0),
            ("toolwire-core", 170.0, 24.0),
            ("toolwire-first-use", 330.0, 32.0),
            ("websockets", 160.0, 24.0),
            ("toolwire-server", 60.0, 16.0),
            ("toolwire-serve", 530.0, 40.0),
        )
    }
    figures = bench.derive({}, tw8, {"samples": samples})
    assert figures["tw8_tool_tracemalloc_kb_ratio"]["median"] == pytest.approx(2.0)
    assert figures["tw10_first_use_ratio"]["median"] == pytest.approx(1.6)  # 320 ÷ 200
    assert figures["tw10_server_ratio"]["median"] == pytest.approx(200 / 150)
    assert figures["tw10_ratio"]["median"] < 0.1  # `import toolwire` alone: reported, not gated
    status = {gate["id"]: gate["status"] for gate in bench.gates(figures)}
    assert status["TW-8"] == "PASS" and status["TW-8 consent"] == "FAIL"
    assert status["TW-10"] == "FAIL" and status["TW-10 server"] == "FAIL"
    assert "TW-1" not in status


def test_a_gate_passes_on_its_median_never_on_its_p25_alone(bench: ModuleType) -> None:
    figures = {"tw1_ratio": {"median": 10.5, "p25": 9.0, "p75": 11.0, "unit": "×"}}
    figures["tw3_run_us"] = {"median": 49.0, "p25": 30.0, "p75": 70.0, "unit": "µs"}
    assert {gate["id"]: gate["status"] for gate in bench.gates(figures)} == {"TW-1": "FAIL", "TW-3": "PASS"}


def test_cli_writes_json_and_markdown(bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "RESULTS_DIR", tmp_path)
    monkeypatch.setattr(bench, "BASE_COUNTS", tiny_counts(bench))
    out, doc = tmp_path / "loop.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nIntro.\n\n<!-- invoke_overhead:begin -->\nkept\n<!-- invoke_overhead:end -->\n")
    argv = ["--rounds", "1", "--concurrent", "2", "--tools", "2", "--only", "inproc", "--note", "smoke"]
    assert bench.main([*argv, "--json", str(out), "--markdown", str(doc)]) == 0

    result: dict[str, Any] = json.loads(out.read_text())
    assert result["rounds"] == 1 and "tw/t20" in result["units"] and result["note"] == "smoke"
    assert {gate["id"] for gate in result["gates"]} >= {"TW-1", "TW-2", "TW-3", "TW-4", "TW-5", "TW-7", "TW-9"}
    assert "peers" not in result  # no stale peers file: the peers are measured with toolwire (`--peers`)
    bench.write_section(doc, bench.render_markdown(result), bench.BEGIN, bench.END)  # a rerun replaces it
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nIntro.\n") and "kept" in text
    assert text.count(bench.BEGIN) == 1 and text.count(bench.END) == 1
    assert "| TW-1 |" in text and "loop_bench.py --peers" in text and "Note: smoke" in text


def _session_module(bench: ModuleType) -> ModuleType:
    return bench.peer_session()  # the fixture restores sys.path and drops the scripts' modules


def test_peer_session_measures_toolwire_in_a_child_and_its_first_use(bench: ModuleType, tmp_path: Path) -> None:
    """The session's machinery without the peers' venv: toolwire's row alone, one round, tiny counts."""
    session = _session_module(bench)
    result = session.session(rounds=1, runs=1, peers=[], progress=False)
    assert not result["errors"] and list(result["impls"]) == ["toolwire"]
    row = result["impls"]["toolwire"]
    assert row["tw1_call_us"]["median"] > 0 and row["first_use_ms"]["median"] > 0 and row["first_use_rss_mib"]
    assert result["machine"]["loadavg_rounds"] and result["versions"]["toolwire venv"]["toolwire"]
    doc = tmp_path / "benchmarks.md"
    doc.write_text(
        "# B\n\n<!-- loop_peers:begin (generated by bench/peers/run.py) -->\nstale\n<!-- loop_peers:end -->\n"
    )
    session.write(doc, session.render_markdown(result))
    text = doc.read_text()
    assert "stale" not in text and text.count("loop_peers:begin") == 1 and "| **toolwire** |" in text
    assert "Load average" in text


@pytest.mark.skipif(
    not (SCRIPT.parent / ".venv-peers" / "bin" / "python").exists(),
    reason="bench/.venv-peers is not installed (by hand, not in CI: see bench/README.md, peers/)",
)
def test_peer_session_runs_every_peer_once(bench: ModuleType) -> None:
    session = _session_module(bench)
    result = session.session(rounds=1, runs=1, progress=False)
    assert not result["errors"], result["errors"]
    assert set(result["impls"]) == {"toolwire", *session.PEERS}
    assert set(result["best_peer"]) == {"tw1_call_us", "tw2_call_us", "tw2_marginal_us", "tw3_run_us", "first_use_ms"}
