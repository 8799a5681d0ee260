"""Smoke test of bench/cluster_bench.py (issue 17 point 5): `--quick` runs every unit once on a real rig
(PostgreSQL, seven `toolwire serve` replicas, two haproxy) and the JSON has every figure; no timing is
asserted. Skipped, saying what to install, without PostgreSQL, haproxy or psycopg (as tests/cluster/)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pg_cluster import find_bin_dir

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "cluster_bench.py"

FIGURES = (
    # 1. client-tool round trip, median and p99: SQLite, one replica on PostgreSQL, the same via haproxy
    *(f"rtt_{t}_{s}_us" for t in ("sqlite", "pg", "pg_haproxy") for s in ("median", "p99")),
    *(f"rtt_{t}_{s}_ratio" for t in ("pg", "pg_haproxy") for s in ("median", "p99")),
    "rtt_pg_cpu_us",
    "rtt_pg_pg_cpu_us",
    "rtt_haproxy_cpu_us",
    # 2. time per turn (TW-13)
    "turn_sqlite_us",
    "turn_pg_us",
    "turn_pg_ratio",
    "turn_pg_haproxy_us",
    "turn_pg_haproxy_ratio",
    # 3. throughput with the clients on 1, 2 and 3 replicas, CPU per round trip
    *(f"tput_{t}_{s}" for t in ("sqlite", "pg1", "pg2", "pg3") for s in ("rps", "ratio", "cpu_us", "cpu_ratio")),
    *(f"tput_pg{n}_{s}" for n in (1, 2, 3) for s in ("pg_cpu_us", "haproxy_cpu_us")),
    # 4. PostgreSQL transactions per turn
    "tx_per_turn",
    # 5. kill -9 to the first resumed frame: detection, lease, resume
    "kill_total_ms",
    "kill_detection_ms",
    "kill_haproxy_down_ms",
    "kill_lease_ms",
    "kill_resume_ms",
    # 6. hand-off with the owner alive and dead
    "handoff_alive_ms",
    "handoff_alive_handshake_ms",
    "handoff_dead_ms",
    "handoff_dead_handshake_ms",
)


@pytest.mark.timeout(600)
def test_quick_run_has_every_figure(tmp_path: Path) -> None:
    if find_bin_dir() is None:
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (Debian: apt-get install postgresql)")
    sys.path.insert(0, str(ROOT / "tests" / "cluster"))
    try:
        from cluster_harness import find_haproxy
    finally:
        sys.path.remove(str(ROOT / "tests" / "cluster"))
    if find_haproxy() is None:
        pytest.skip("needs haproxy (Debian: apt-get install haproxy)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("needs the 'postgres' extra: pip install 'toolwire[postgres]'")
    out, doc = tmp_path / "cluster.json", tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n<!-- ws_bench:begin -->\nkept\n<!-- ws_bench:end -->\n")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", str(out), "--markdown", str(doc), "--note", "smoke"],
        capture_output=True,
        text=True,
        timeout=540,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    result = json.loads(out.read_text())
    figures = result["figures"]
    assert not (missing := [key for key in FIGURES if key not in figures]), missing
    for key in FIGURES:
        if key != "kill_haproxy_down_ms":  # haproxy may not mark the replica down before the run resumed
            assert math.isfinite(figures[key]["median"]), (key, figures[key])
    assert figures["kill_lease_ms"]["median"] > 0 and figures["handoff_dead_ms"]["median"] > 0
    assert result["machine"]["nproc"] and result["date"] and result["note"] == "smoke"
    text = doc.read_text()
    assert "## PostgreSQL replicas (issue 17)" in text and "kept" in text
    assert "**--lease-ttl**" in text  # the figures a setting bounds say so
