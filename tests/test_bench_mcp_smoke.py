"""Smoke test of bench/mcp_bench.py: every MCP scenario runs once with tiny counts against real server
processes, and the report renders; no timing is asserted."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bench_scripts import bench_script

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "mcp_bench.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with bench_script("mcp_bench") as module:
        yield module


def test_every_scenario_runs_once_and_the_section_renders(bench: ModuleType, tmp_path: Path) -> None:
    if bench.everything_server() is None or shutil.which("node") is None:
        pytest.skip("server-everything is not installed (npm ci --prefix tests/mcp)")
    out, doc = tmp_path / "mcp.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nIntro.\n")
    argv = ["--rounds", "1", "--calls", "20", "--startup-rounds", "1", "--starts", "1", "--mem-rounds", "1"]
    assert bench.main([*argv, "--tools", "3", "--note", "smoke", "--json", str(out), "--markdown", str(doc)]) == 0

    result: dict[str, Any] = json.loads(out.read_text())
    assert result["note"] == "smoke" and result["machine"]["mcp"]
    paths = ("bare", "bare-deadline", "toolset", "pipeline", "agent")
    calls = {f"call/{kind}/{path}" for kind in ("python", "everything") for path in paths}
    assert calls | {"startup/everything/bare", "startup/everything/toolset", "memory/toolset/3"} <= set(result["units"])
    assert result["gates"][0]["status"] in ("PASS", "FAIL")
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nIntro.\n") and text.count(bench.BEGIN) == 1
    assert "## MCP (issue 15)" in text and "Note: smoke" in text


def test_the_docs_page_is_left_alone_without_markdown(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    before = (SCRIPT.parent.parent / "docs" / "benchmarks.md").read_text()
    argv = ["--only", "memory", "--mem-rounds", "1", "--tools", "2", "--json", str(out)]
    assert bench.main(argv) == 0
    assert (SCRIPT.parent.parent / "docs" / "benchmarks.md").read_text() == before
