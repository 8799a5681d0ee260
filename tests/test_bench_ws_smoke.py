"""Smoke test of bench/ws_bench.py: every WebSocket scenario (TW-11 … TW-14) runs once with tiny
counts against real server processes, and the report renders; no timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "ws_bench.py"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    path, modules = list(sys.path), set(sys.modules)
    bench_modules = {"ws_bench", "loop_common", "invoke_overhead"}
    spec = importlib.util.spec_from_file_location("ws_bench", SCRIPT)
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


def test_every_scenario_runs_once_and_the_section_renders(bench: ModuleType, tmp_path: Path) -> None:
    out, doc = tmp_path / "ws.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\nIntro.\n\n<!-- loop_bench:begin -->\nkept\n<!-- loop_bench:end -->\n")
    argv = ["--rounds", "1", "--count", "20", "--clients", "3", "--per-client", "4", "--runs", "1"]
    argv += ["--mem-rounds", "1", "--tw14-count", "10", "--only", "tw11,tw12,tw13,mem,tw14", "--note", "smoke"]
    assert bench.main([*argv, "--json", str(out), "--markdown", str(doc)]) == 0

    result: dict[str, Any] = json.loads(out.read_text())
    assert result["note"] == "smoke" and result["frames"]["tool_use_request"] > 100
    units = result["units"]
    assert {"tw11/echo-ws", "tw11/echo-asgi", "tw11/toolwire", "tw12/toolwire", "tw13/toolwire", "floor"} <= set(units)
    assert {bench.ECHO_COMMIT_UNIT, "tw12/echo-commit", "tw11/toolwire-minimal"} <= set(units)
    assert units["tw11/toolwire"][0]["n"] == 19  # the periods between 20 requests (the shipped client)
    assert "commit" in result["figures"]["tw13_reference_us"]["label"]
    gated = {gate["id"]: gate["figure"] for gate in result["gates"]}
    assert gated["TW-11 median"] == "tw11_commit_median_ratio" and gated["TW-12 CPU"] == "tw12_commit_cpu_ratio"
    assert units["tw13/toolwire"][0]["t20_us"] > units["tw13/toolwire"][0]["t0_us"] > 0
    assert set(result["memory"]) == {"echo-ws", "echo-asgi", "toolwire"}
    assert ("units" in result["tw14"]) == bench.uvloop_available()
    statuses = {gate["id"]: gate["status"] for gate in result["gates"]}
    assert set(statuses) == {"TW-11 median", "TW-11 p99", "TW-12 throughput", "TW-12 CPU", "TW-12 memory", "TW-13"}

    bench.write_section(doc, bench.render_markdown(result), bench.BEGIN, bench.END)  # a rerun replaces it
    text = doc.read_text()
    assert text.startswith("# Benchmarks\n\nIntro.\n") and "kept" in text
    assert text.count(bench.BEGIN) == 1 and text.count(bench.END) == 1
    assert "| TW-11 | round trip, median µs |" in text and "Note: smoke" in text and "echo + commit" in text


def test_the_echo_commit_server_commits_each_frame_before_echoing_it(bench: ModuleType) -> None:
    import sqlite3

    import anyio
    from websockets.asyncio.client import connect

    server = bench.start_server("echo-commit")
    try:

        async def main() -> list[bytes]:
            async with connect(server.url, **bench.CONNECT_OPTIONS) as socket_:
                echoed = []
                for frame in (b"one", b"two", b"three"):
                    await socket_.send(frame)
                    echoed.append(await socket_.recv())
                return echoed

        assert anyio.run(main) == [b"one", b"two", b"three"]
        db = sqlite3.connect(server.data_dir / bench.COMMIT_FILE)
        try:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert [row[0] for row in db.execute("SELECT body FROM frames ORDER BY id")] == [b"one", b"two", b"three"]
        finally:
            db.close()
    finally:
        server.stop()


def _units(scale: float, *, commit: bool = True) -> dict[str, list[Any]]:
    echo = {"median_us": 200.0, "p99_us": 300.0, "server_cpu_us": 100.0, "rt_per_s": 10_000.0, "client_cpu_us": 50.0}
    tool = {"median_us": 200.0 * scale, "p99_us": 300.0 * scale, "server_cpu_us": 100.0 * scale}
    tool |= {"hub_median_us": 190.0 * scale, "hub_p99_us": 290.0 * scale, "client_work_us": 20.0}
    tool |= {"rt_per_s": 10_000.0 / scale, "client_cpu_us": 60.0}
    turns = {"t20_us": 20 * 200.0 * scale + 1000, "t0_us": 1000.0, "per_turn_us": 200.0 * scale}
    units = {
        "tw11/echo-ws": [echo, echo],
        "tw11/echo-asgi": [echo, echo],
        "tw11/toolwire": [tool, tool],
        "tw11/toolwire-memory": [tool, tool],
        "tw12/echo-ws": [echo, echo],
        "tw12/echo-asgi": [echo, echo],
        "tw12/toolwire": [tool, tool],
        "tw13/toolwire": [turns, turns],
        "tw13/toolwire-memory": [turns, turns],
        "floor": [3.0, 3.0],
    }
    if commit:  # the echo + commit floor, here as fast as the echo
        units |= {
            "tw11/echo-commit": [echo, echo],
            "tw12/echo-commit": [echo, echo],
            "tw11/toolwire-minimal": [tool, tool],
        }
    return units


@pytest.mark.parametrize(("scale", "expected"), [(1.2, "PASS"), (3.0, "FAIL")])
def test_gates_are_ratios_to_the_echo_measured_in_the_same_round(
    bench: ModuleType, scale: float, expected: str
) -> None:
    memory = {kind: [{"kib_per_connection": 10.0}] for kind in ("echo-ws", "echo-asgi", "toolwire")}
    figures = bench.derive(_units(scale), memory, None)
    assert figures["tw11_median_ratio"]["median"] == pytest.approx(scale)
    assert figures["tw11_commit_median_ratio"]["median"] == pytest.approx(scale)
    assert figures["tw12_commit_cpu_ratio"]["median"] == pytest.approx(scale)
    assert figures["tw12_rps_ratio"]["median"] == pytest.approx(1 / scale)
    # TW-13's limit is the spec's reference round trip (1.3 × the echo + commit floor) + 10 × the loop floor,
    # whatever toolwire's own TW-11 is.
    assert figures["tw13_limit_us"]["median"] == pytest.approx(1.3 * 200.0 + 30.0)
    status = {gate["id"]: gate["status"] for gate in bench.gates(figures)}
    assert status["TW-11 median"] == expected and status["TW-12 throughput"] == expected
    assert status["TW-12 CPU"] == expected  # 1.2× and 3× the floor against a 2× limit
    assert status["TW-12 memory"] == "PASS" and status["TW-13"] == expected


def test_without_the_echo_commit_floor_the_floor_gates_are_absent_and_tw13_falls_back(bench: ModuleType) -> None:
    figures = bench.derive(_units(1.0, commit=False), None, None)
    assert "no echo + commit floor" in figures["tw13_limit_us"]["label"]
    assert figures["tw13_limit_us"]["median"] == pytest.approx(1.3 * 200.0 + 30.0)
    status = {gate["id"] for gate in bench.gates(figures)}
    assert "TW-11 median" not in status and "TW-12 CPU" not in status and "TW-13" in status


def test_tw13_limit_uses_the_echo_and_commit_floor_when_the_run_measured_it(bench: ModuleType) -> None:
    units = _units(1.0)
    floor = {"median_us": 300.0, "p99_us": 450.0, "server_cpu_us": 150.0}
    units[bench.ECHO_COMMIT_UNIT] = [floor, floor]
    figures = bench.derive(units, None, None)
    assert figures["tw13_limit_us"]["median"] == pytest.approx(bench.tw13_limit(1.3 * 300.0, 3.0)) == 420.0
    assert "commit" in figures["tw13_reference_us"]["label"] and "no echo" not in figures["tw13_reference_us"]["label"]


def test_a_gate_passes_on_its_median_not_on_a_favourable_quartile(bench: ModuleType) -> None:
    figures = {"tw11_commit_median_ratio": {"median": 1.31, "p25": 1.0, "p75": 1.5, "unit": "×"}}
    figures["tw12_rps_ratio"] = {"median": 0.49, "p25": 0.4, "p75": 0.9, "unit": "×"}
    status = {gate["id"]: gate["status"] for gate in bench.gates(figures)}
    assert status == {"TW-11 median": "FAIL", "TW-12 throughput": "FAIL"}


def test_toolwire_serve_sockets_have_tcp_nodelay() -> None:
    """The 40 ms Nagle stall per client tool call (an ack, then a request) stays fixed."""
    import asyncio
    import socket

    from toolwire.server.serve import listen

    async def main() -> int:
        accepted: list[asyncio.Transport] = []
        connected = asyncio.Event()

        class Keep(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                assert isinstance(transport, asyncio.Transport)
                accepted.append(transport)
                connected.set()

        listener = listen("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Keep, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            await asyncio.wait_for(connected.wait(), 10)
            option = accepted[0].get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            writer.close()
            await writer.wait_closed()
            accepted[0].close()
        return option

    assert asyncio.run(main()) != 0
