"""PostgreSQL replicas (issue 17 point 5): each figure beside the single-process SQLite figure of the same run.

One run starts, on loopback (tests/pg_cluster.py and tests/cluster/cluster_harness.py):

- `sqlite`: one `toolwire serve` on SQLite (the baseline: what a single process does today);
- `r1 r2 r3`: three `toolwire serve --store postgresql://…/postgres` replicas behind haproxy `main`
  (`balance url_param conversation`, health checks every 200 ms, fall 2);
- `f1 f2 f3`: three more on database `failover`, behind haproxy `spare`: the kill -9 and hand-off
  units kill and restart these, so the long-lived connections of the other units never break;
- `tx`: one replica alone on database `txbench`, for counting PostgreSQL transactions.

Every server runs `--app cluster_agent:make_agent` (bench/ws_bench.py's agent, whose client tool
calls wait for a client that dropped) with the cluster harness's `--lease-ttl 3 --lease-renew 1`
(`tx`: 90 and 30, so that its background renewals and sweeps rarely land in a count). PostgreSQL
runs with its defaults (fsync on, synchronous_commit on). The clients run in this process:
ws_bench's minimal `ToolClient`, and for the failover units `Resumer`, the same frames over a
protocol state that survives its socket (as toolwire's client resumes).

Units (interleaved: each round runs every unit once, in an order rotated per round):

1. `rtt/*`: TW-11 (ws_bench `hub_round_trips`): COUNT sequential client tool round trips driven
   through the hub; median and p99 µs of the client-side period. On `sqlite`, on `r1` directly, and
   through haproxy `main`. Server CPU per round trip (the replica holding the connection; through
   haproxy the three replicas summed), PostgreSQL's CPU (postmaster and its backends) and haproxy's.
2. `turn/*`: TW-13 (ws_bench `per_turn`): fresh conversations of 20 turns and of 0 turns, one client
   tool call per turn; per-turn µs = (t20 − t0) ÷ 20. On `sqlite`, `r1` directly, through haproxy.
3. `tput/*`: TW-12 (ws_bench `many_round_trips`): CLIENTS connected clients doing PER_CLIENT
   sequential round trips each, at once; round trips/s and CPU per round trip between 10 % and 90 %
   of the unit. On `sqlite`, and through haproxy on 1, 2 and 3 replicas (each its own set of
   clients, connected while only those replicas were in haproxy's rotation). CPU of the three
   replicas summed; PostgreSQL's and haproxy's CPU over the whole unit. Two cores bound this.
4. `tx`: PostgreSQL transactions per turn on `tx`: `pg_stat_database` (xact_commit +
   xact_rollback of `txbench`) around a 0-turn and a 20-turn conversation, each count read once it
   has been stable for 11 s (a backend flushes its statistics at most once a second, and one that went
   idle within a second of its last flush only after 10 s: PostgreSQL's PGSTAT_IDLE_INTERVAL;
   `--quick`: 1 s, the count rough); (Δ20 − Δ0) ÷ 20.
5. `kill`: a conversation through haproxy `spare` whose run waits for a client tool call (the client
   holds its answer); kill -9 of the replica holding its lease; the client reconnects through
   haproxy (`?conversation=`), answers the held call, and sees the run's next frame. Split into
   detection (kill → the client's socket closes; haproxy's DOWN is reported beside it), lease
   (→ the new holder took the lease: `expires_at − ttl` of the lease's new epoch, sampled every
   10 ms) and resume (→ the first resumed frame).
6. `handoff/alive`, `handoff/dead`: the same held run on `fN` directly; the client drops its socket
   (alive) or `fN` is killed (dead); time from the client's new connection to `fN+1` directly to its
   handshake and to the first frame of the resumed run there.

    .venv/bin/python bench/cluster_bench.py [--rounds N] [--count N] [--clients N] [--per-client N]
        [--runs N] [--only rtt,turn,tput,tx,kill,handoff] [--json PATH] [--markdown PATH | --no-markdown]
        [--note TEXT] [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "cluster"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_harness import LEASE_RENEW, LEASE_TTL, Haproxy, Replica, find_haproxy

from cluster_failover import LeaseClock, held_run, lease_of, resume_and_finish
from cluster_rig import TX_LEASE, Processes, Rig, postgres_cpu, running_rig, url_of
from invoke_overhead import machine
from loop_common import summary, write_section
from pg_cluster import find_bin_dir
from ws_bench import TURNS, ToolClient, hub_round_trips, interleaved, many_round_trips, per_turn, process_cpu

BENCH: Final = Path(__file__).resolve().parent
ROOT: Final = BENCH.parent
DEFAULT_MARKDOWN: Final = ROOT / "docs" / "benchmarks.md"
RESULTS_DIR: Final = BENCH / "results"
MIN_ROUNDS: Final = 7
BEGIN: Final = "<!-- cluster_bench:begin (generated by bench/cluster_bench.py; do not edit by hand) -->"
END: Final = "<!-- cluster_bench:end -->"
GROUPS: Final = ("rtt", "turn", "tput", "tx", "kill", "handoff")
STABLE: Final = 11.0
"""Seconds a transaction count must stay unchanged to be read: a backend flushes its counts at most once a second,
and one that went idle within a second of its last flush only 10 s later (PostgreSQL's PGSTAT_IDLE_INTERVAL)."""


# == units ========================================================================================


@dataclass
class Bench:
    rig: Rig
    count: int
    clients: int
    per_client: int
    runs: int
    samples_dir: Path
    stable: float = STABLE
    """Seconds `tx` waits for PostgreSQL's transaction count to stay put (`--quick`: less, the count rough)."""
    single: dict[str, ToolClient] = field(default_factory=dict[str, ToolClient])
    many: dict[str, list[ToolClient]] = field(default_factory=dict[str, list[ToolClient]])
    spread: dict[str, dict[str, int]] = field(default_factory=dict[str, dict[str, int]])
    round_index: int = 0

    def meter(self, target: str) -> Processes:
        """The replicas whose CPU a unit counts: the one serving it, or the three behind haproxy."""
        rig = self.rig
        return Processes({"sqlite": [rig.sqlite], "pg": [rig.main[0]]}.get(target, rig.main))

    async def _costs(self, run: Callable[[], Any], n: int) -> dict[str, float]:
        """Run a unit; add PostgreSQL's and haproxy's CPU per round trip over all of it."""
        pg, proxy = self.rig.pg, self.rig.balancer
        assert proxy.process is not None
        pg0, hap0 = postgres_cpu(pg), process_cpu(proxy.process.pid)
        out = dict(await run())
        out["pg_cpu_us"] = (postgres_cpu(pg) - pg0) / n * 1e6
        out["haproxy_cpu_us"] = (process_cpu(proxy.process.pid) - hap0) / n * 1e6
        return out

    async def rtt(self, target: str) -> dict[str, float]:
        client, meter = self.single[target], self.meter(target)
        return await self._costs(lambda: hub_round_trips(client, self.count, meter, self.samples_dir), self.count)

    async def turn(self, target: str) -> dict[str, float]:
        url = self._url(target)
        return await per_turn(url, self.runs, self.round_index)

    async def tput(self, target: str) -> dict[str, float]:
        clients, meter = self.many[target], self.meter(target)
        n = len(clients) * self.per_client
        return await self._costs(lambda: many_round_trips(clients, self.per_client, meter), n)

    def _url(self, target: str) -> str:
        rig = self.rig
        return url_of({"sqlite": rig.sqlite, "pg": rig.main[0]}[target]) if target != "pg-haproxy" else rig.balancer.url

    async def tx(self) -> dict[str, float]:
        url = url_of(self.rig.tx)
        counts = [await stable_transactions(self.rig.pg.dsn, self.stable)]
        for turns in (0, TURNS):
            async with ToolClient.open(url) as client:
                await client.register()
                await client.run(f"turns {turns}")
            counts.append(await stable_transactions(self.rig.pg.dsn, self.stable))
        run0, run20 = counts[1] - counts[0], counts[2] - counts[1]
        return {"run0": run0, "run20": run20, "per_turn": (run20 - run0) / TURNS}

    async def kill(self) -> dict[str, float]:
        rig = self.rig
        client = await held_run(rig.spare_balancer.url)
        conversation = client.conversation_id
        dsn = rig.dsn("failover")
        lease = await anyio.to_thread.run_sync(lease_of, dsn, conversation)
        assert lease is not None, "the held run's conversation has no lease"
        owner = rig.replica(lease[0])
        with LeaseClock(dsn, conversation, LEASE_TTL, rig.spare_balancer, owner.name) as clock:
            killed = time.time()
            await anyio.to_thread.run_sync(owner.kill)
            closed = await client.wait_closed()
            attempts = await client.dial(f"{rig.spare_balancer.url}?conversation={conversation}")
            opened = time.time()
            await resume_and_finish(client)
        await self._restart(owner, rig.spare_balancer)
        assert client.first_frame is not None
        epoch = max(clock.taken)
        new_owner, taken = clock.taken[epoch]
        if epoch <= lease[1] or new_owner == owner.name:
            raise RuntimeError(f"no takeover seen: {clock.taken}")
        return {
            "total_ms": (client.first_frame - killed) * 1e3,
            "detection_ms": (closed - killed) * 1e3,
            "haproxy_down_ms": ((clock.down or math.nan) - killed) * 1e3,
            "lease_ms": (taken - closed) * 1e3,
            "resume_ms": (client.first_frame - taken) * 1e3,
            "handshake_ms": (opened - killed) * 1e3,
            "takeovers": float(epoch - lease[1]),
            "attempts": float(attempts),
        }

    async def handoff(self, dead: bool) -> dict[str, float]:
        rig = self.rig
        spare = rig.spare
        owner, other = spare[self.round_index % 3], spare[(self.round_index + 1) % 3]
        client = await held_run(url_of(owner))
        if dead:
            await anyio.to_thread.run_sync(owner.kill)
            await client.wait_closed()
        else:
            await client.close()
        connected = time.time()
        attempts = await client.dial(url_of(other))
        opened = time.time()
        await resume_and_finish(client)
        if dead:
            await self._restart(owner, rig.spare_balancer)
        assert client.first_frame is not None
        lease = await anyio.to_thread.run_sync(lease_of, rig.dsn("failover"), client.conversation_id)
        if lease is None or lease[0] != other.name:
            raise RuntimeError(f"the conversation did not move to {other.name}: {lease}")
        return {
            "frame_ms": (client.first_frame - connected) * 1e3,
            "handshake_ms": (opened - connected) * 1e3,
            "attempts": float(attempts),
        }

    async def _restart(self, replica: Replica, balancer: Haproxy) -> None:
        await anyio.to_thread.run_sync(replica.start)
        await balancer.wait_status(replica.name, "UP")

    def units(self, only: set[str]) -> list[tuple[str, Callable[[], Any]]]:
        units: list[tuple[str, Callable[[], Any]]] = []
        targets = ("sqlite", "pg", "pg-haproxy")
        if "rtt" in only:
            units += [(f"rtt/{t}", lambda t=t: self.rtt(t)) for t in targets]
        if "turn" in only:
            units += [(f"turn/{t}", lambda t=t: self.turn(t)) for t in targets]
        if "tput" in only:
            units += [(f"tput/{t}", lambda t=t: self.tput(t)) for t in ("sqlite", "pg-1", "pg-2", "pg-3")]
        if "tx" in only:
            units.append(("tx", self.tx))
        if "kill" in only:
            units.append(("kill", self.kill))
        if "handoff" in only:
            units += [("handoff/alive", lambda: self.handoff(False)), ("handoff/dead", lambda: self.handoff(True))]
        return units


async def stable_transactions(dsn: str, stable: float = STABLE) -> int:
    """`txbench`'s xact_commit + xact_rollback, once unchanged for `stable` seconds (sampled every 50 ms)."""

    def read() -> int:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as db:
            db.execute("SET stats_fetch_consistency = none")
            give_up = time.monotonic() + 90
            last, since = -1, time.monotonic()
            while time.monotonic() < give_up:
                row = db.execute(
                    "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'txbench'"
                ).fetchone()
                value = int(row[0]) if row is not None else 0
                if value != last:
                    last, since = value, time.monotonic()
                elif time.monotonic() - since >= stable:
                    return value
                time.sleep(0.05)
            raise RuntimeError("txbench's transaction count never settled")

    return await anyio.to_thread.run_sync(read)


@asynccontextmanager
async def connected(bench: Bench, only: set[str]) -> AsyncIterator[Bench]:
    """Open the long-lived connections: one per target for `rtt`, a set of clients per target for `tput`."""
    rig = bench.rig
    async with AsyncExitStack() as stack:

        async def client(url: str) -> ToolClient:
            opened = await stack.enter_async_context(ToolClient.open(url))
            await opened.register()
            return opened

        if "rtt" in only:
            for target in ("sqlite", "pg", "pg-haproxy"):
                bench.single[target] = await client(bench._url(target))
        if "tput" in only:
            bench.many["sqlite"] = [await client(url_of(rig.sqlite)) for _ in range(bench.clients)]
            # Largest rotation first; then drain one replica (no new connections, its open ones kept)
            # before each smaller set.
            for size in (3, 2, 1):
                before = _served(rig.balancer)
                bench.many[f"pg-{size}"] = [await client(rig.balancer.url) for _ in range(bench.clients)]
                after = _served(rig.balancer)
                bench.spread[f"pg-{size}"] = {name: after[name] - before[name] for name in after}
                if size > 1:
                    rig.balancer.admin(f"set server replicas/{rig.main[size - 1].name} state drain")
            for replica in rig.main[1:]:
                rig.balancer.admin(f"set server replicas/{replica.name} state ready")
                await rig.balancer.wait_status(replica.name, "UP")
        yield bench


def _served(balancer: Haproxy) -> dict[str, int]:
    return {name: int(row["stot"]) for name, row in balancer.stats().items()}


async def run_rounds(bench: Bench, rounds: int, only: set[str], *, progress: bool = True) -> dict[str, list[Any]]:
    units = bench.units(only)
    samples: dict[str, list[Any]] = {name: [] for name, _ in units}
    # Warm-up: the steady-state paths once (imports, caches, pools), a tenth of a unit.
    warm = Bench(**{**bench.__dict__, "count": max(2, bench.count // 10), "per_client": max(2, bench.per_client // 10)})
    for name, unit in warm.units(only & {"rtt", "tput"}):
        await unit()
        if progress:
            print(f"warm-up {name}", file=sys.stderr)
    await interleaved(bench, units, rounds, samples, progress=progress)
    return samples


# == figures ======================================================================================


def _figure(label: str, unit: str, values: Sequence[float], bound: str = "") -> dict[str, Any]:
    return {"label": label, "unit": unit, "bound": bound, **summary(list(values)), "rounds": list(values)}


def _ratio(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x / y if y else math.nan for x, y in zip(a, b, strict=True)]


TTL_BOUND: Final = f"--lease-ttl {LEASE_TTL:g} s, --lease-renew {LEASE_RENEW:g} s (and the lease wait's 1 s poll)"
CHECK_BOUND: Final = "haproxy's checks: inter 200 ms, fall 2"
CORES_BOUND: Final = "the machine's cores: clients, haproxy, replicas and PostgreSQL share them"


def derive(units: dict[str, list[Any]]) -> dict[str, Any]:
    figures: dict[str, Any] = {}

    def col(unit: str, name: str) -> list[float]:
        return [float(sample[name]) for sample in units.get(unit, [])]

    def add(key: str, label: str, unit: str, values: Sequence[float], bound: str = "") -> None:
        if values:
            figures[key] = _figure(label, unit, values, bound)

    def total(unit: str) -> list[float]:
        """Server-side CPU per round trip: the replicas', plus PostgreSQL's and haproxy's for a PostgreSQL unit
        (SQLite's work is in its one process; PostgreSQL's CPU during a SQLite unit is the other replicas' idling)."""
        if "sqlite" in unit:
            return col(unit, "server_cpu_us")
        haproxy = (
            col(unit, "haproxy_cpu_us") if "haproxy" in unit or "tput" in unit else [0.0] * len(col(unit, "pg_cpu_us"))
        )
        return [a + b + c for a, b, c in zip(col(unit, "server_cpu_us"), col(unit, "pg_cpu_us"), haproxy, strict=True)]

    names = {"sqlite": "SQLite, one process", "pg": "PostgreSQL, r1 directly", "pg-haproxy": "PostgreSQL via haproxy"}
    if "rtt/sqlite" in units:
        for target, name in names.items():
            key = target.replace("-", "_")
            for stat, what in (("median_us", "median"), ("p99_us", "p99")):
                add(f"rtt_{key}_{what}_us", f"round trip {what} µs: {name}", "µs", col(f"rtt/{target}", stat))
                add(
                    f"rtt_{key}_{what}_ratio",
                    f"round trip {what}: {name} ÷ SQLite",
                    "×",
                    _ratio(col(f"rtt/{target}", stat), col("rtt/sqlite", stat)),
                )
            add(f"rtt_{key}_cpu_us", f"round trip server CPU µs: {name}", "µs", col(f"rtt/{target}", "server_cpu_us"))
            add(
                f"rtt_{key}_pg_cpu_us", f"round trip PostgreSQL CPU µs: {name}", "µs", col(f"rtt/{target}", "pg_cpu_us")
            )
            add(
                f"rtt_{key}_total_cpu_us",
                f"round trip server-side CPU µs, all processes: {name}",
                "µs",
                total(f"rtt/{target}"),
            )
            add(
                f"rtt_{key}_total_cpu_ratio",
                f"round trip server-side CPU, all processes: {name} ÷ SQLite",
                "×",
                _ratio(total(f"rtt/{target}"), total("rtt/sqlite")),
            )
        add(
            "rtt_haproxy_cpu_us",
            "round trip haproxy CPU µs (via haproxy)",
            "µs",
            col("rtt/pg-haproxy", "haproxy_cpu_us"),
        )
    if "turn/sqlite" in units:
        for target, name in names.items():
            key = target.replace("-", "_")
            add(f"turn_{key}_us", f"per-turn wall µs (TW-13): {name}", "µs", col(f"turn/{target}", "per_turn_us"))
            add(
                f"turn_{key}_ratio",
                f"per turn: {name} ÷ SQLite",
                "×",
                _ratio(col(f"turn/{target}", "per_turn_us"), col("turn/sqlite", "per_turn_us")),
            )
    if "tput/sqlite" in units:
        for target in ("sqlite", "pg-1", "pg-2", "pg-3"):
            key = target.replace("-", "")
            name = "SQLite, one process" if target == "sqlite" else f"PostgreSQL, {target[-1]} replica(s) via haproxy"
            unit = f"tput/{target}"
            add(f"tput_{key}_rps", f"round trips/s, 100 clients: {name}", "/s", col(unit, "rt_per_s"), CORES_BOUND)
            add(
                f"tput_{key}_ratio",
                f"throughput: {name} ÷ SQLite",
                "×",
                _ratio(col(unit, "rt_per_s"), col("tput/sqlite", "rt_per_s")),
                CORES_BOUND,
            )
            add(f"tput_{key}_cpu_us", f"server CPU µs per round trip: {name}", "µs", col(unit, "server_cpu_us"))
            add(
                f"tput_{key}_cpu_ratio",
                f"server CPU per round trip: {name} ÷ SQLite",
                "×",
                _ratio(col(unit, "server_cpu_us"), col("tput/sqlite", "server_cpu_us")),
            )
            add(f"tput_{key}_pg_cpu_us", f"PostgreSQL CPU µs per round trip: {name}", "µs", col(unit, "pg_cpu_us"))
            add(
                f"tput_{key}_total_cpu_us",
                f"server-side CPU µs per round trip, all processes: {name}",
                "µs",
                total(unit),
            )
            add(
                f"tput_{key}_total_cpu_ratio",
                f"server-side CPU per round trip, all processes: {name} ÷ SQLite",
                "×",
                _ratio(total(unit), total("tput/sqlite")),
            )
            add(
                f"tput_{key}_client_cpu_us", f"clients' CPU µs per round trip: {name}", "µs", col(unit, "client_cpu_us")
            )
            if target != "sqlite":
                add(
                    f"tput_{key}_haproxy_cpu_us",
                    f"haproxy CPU µs per round trip: {name}",
                    "µs",
                    col(unit, "haproxy_cpu_us"),
                )
    if "tx" in units:
        add("tx_per_turn", "PostgreSQL transactions per turn ((Δ20 − Δ0) ÷ 20)", "tx", col("tx", "per_turn"))
        add("tx_run0", "PostgreSQL transactions of a 0-turn conversation", "tx", col("tx", "run0"))
        add("tx_run20", "PostgreSQL transactions of a 20-turn conversation", "tx", col("tx", "run20"))
    if "kill" in units:
        add("kill_total_ms", "kill -9 → first resumed frame, ms", "ms", col("kill", "total_ms"), TTL_BOUND)
        add(
            "kill_detection_ms",
            "detection: kill -9 → the client's socket closes, ms",
            "ms",
            col("kill", "detection_ms"),
        )
        add(
            "kill_haproxy_down_ms",
            "kill -9 → haproxy marks it DOWN, ms",
            "ms",
            col("kill", "haproxy_down_ms"),
            CHECK_BOUND,
        )
        add(
            "kill_lease_ms",
            "lease: socket closed → another replica took the lease, ms",
            "ms",
            col("kill", "lease_ms"),
            TTL_BOUND,
        )
        add("kill_resume_ms", "resume: lease taken → first resumed frame, ms", "ms", col("kill", "resume_ms"))
        add(
            "kill_handshake_ms",
            "kill -9 → the client's new handshake done, ms",
            "ms",
            col("kill", "handshake_ms"),
            TTL_BOUND,
        )
        add("kill_takeovers", "takeovers of the lease until the frame", "n", col("kill", "takeovers"))
    for case, bound in (("alive", ""), ("dead", TTL_BOUND)):
        unit = f"handoff/{case}"
        if unit in units:
            add(
                f"handoff_{case}_ms",
                f"hand-off, owner {case}: new connection → first frame, ms",
                "ms",
                col(unit, "frame_ms"),
                bound,
            )
            add(
                f"handoff_{case}_handshake_ms",
                f"hand-off, owner {case}: new connection → handshake done, ms",
                "ms",
                col(unit, "handshake_ms"),
                bound,
            )
    return figures


# == the run ======================================================================================


def run(
    *,
    rounds: int,
    count: int,
    clients: int,
    per_client: int,
    runs: int,
    only: set[str],
    note: str = "",
    stable: float = STABLE,
    progress: bool = True,
) -> dict[str, Any]:  # fmt: skip
    pg_bin, haproxy = find_bin_dir(), find_haproxy()
    if pg_bin is None or haproxy is None:
        raise SystemExit("needs PostgreSQL (initdb, pg_ctl) and haproxy: apt-get install postgresql haproxy")
    started = datetime.now(UTC)
    info = machine()
    result: dict[str, Any] = {
        "benchmark": "cluster_bench",
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rounds": rounds,
        "count": count,
        "clients": clients,
        "per_client": per_client,
        "runs": runs,
        "note": note,
        "lease": {"ttl": LEASE_TTL, "renew": LEASE_RENEW, "tx": list(TX_LEASE)},
        "machine": info,
    }
    workdir = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    try:
        with running_rig(workdir, pg_bin, haproxy) as rig:
            result["postgres"] = pg_bin.parent.name
            if progress:
                print(f"rig up after {(datetime.now(UTC) - started).total_seconds():.1f} s", file=sys.stderr)
            samples_dir = workdir / "samples"
            samples_dir.mkdir()
            bench = Bench(rig, count, clients, per_client, runs, samples_dir, stable)

            async def main() -> dict[str, list[Any]]:
                async with connected(bench, only):
                    return await run_rounds(bench, rounds, only, progress=progress)

            units = anyio.run(main, backend="asyncio")
            result["spread"] = bench.spread
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    info["loadavg_end"] = list(os.getloadavg())
    result["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    result["units"] = units
    result["figures"] = derive(units)
    return result


# == markdown =====================================================================================


def _fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _cell(figures: dict[str, Any], key: str) -> str:
    if key not in figures:
        return "–"
    f = figures[key]
    return f"{_fmt(f['median'])} ({_fmt(f['p25'])}–{_fmt(f['p75'])})"


# (metric, PostgreSQL figure, SQLite figure, ratio, what bounds it)
TABLE: Final = (
    ("round trip median µs, r1 directly", "rtt_pg_median_us", "rtt_sqlite_median_us", "rtt_pg_median_ratio", "speed"),
    ("round trip p99 µs, r1 directly", "rtt_pg_p99_us", "rtt_sqlite_p99_us", "rtt_pg_p99_ratio", "speed"),
    (
        "round trip median µs, via haproxy",
        "rtt_pg_haproxy_median_us",
        "rtt_sqlite_median_us",
        "rtt_pg_haproxy_median_ratio",
        "speed",
    ),
    (
        "round trip p99 µs, via haproxy",
        "rtt_pg_haproxy_p99_us",
        "rtt_sqlite_p99_us",
        "rtt_pg_haproxy_p99_ratio",
        "speed",
    ),
    ("round trip server CPU µs, r1 directly", "rtt_pg_cpu_us", "rtt_sqlite_cpu_us", "", "speed"),
    (
        "round trip CPU µs of r1 + PostgreSQL",
        "rtt_pg_total_cpu_us",
        "rtt_sqlite_total_cpu_us",
        "rtt_pg_total_cpu_ratio",
        "speed",
    ),
    ("round trip PostgreSQL CPU µs, r1 directly", "rtt_pg_pg_cpu_us", "", "", "speed"),
    ("round trip haproxy CPU µs", "rtt_haproxy_cpu_us", "", "", "speed"),
    ("time per turn µs (TW-13), r1 directly", "turn_pg_us", "turn_sqlite_us", "turn_pg_ratio", "speed"),
    ("time per turn µs (TW-13), via haproxy", "turn_pg_haproxy_us", "turn_sqlite_us", "turn_pg_haproxy_ratio", "speed"),
    ("100 clients, round trips/s: 1 replica", "tput_pg1_rps", "tput_sqlite_rps", "tput_pg1_ratio", "2 cores"),
    ("100 clients, round trips/s: 2 replicas", "tput_pg2_rps", "tput_sqlite_rps", "tput_pg2_ratio", "2 cores"),
    ("100 clients, round trips/s: 3 replicas", "tput_pg3_rps", "tput_sqlite_rps", "tput_pg3_ratio", "2 cores"),
    (
        "100 clients, replicas' CPU µs per round trip: 1 replica",
        "tput_pg1_cpu_us",
        "tput_sqlite_cpu_us",
        "tput_pg1_cpu_ratio",
        "speed",
    ),
    (
        "100 clients, replicas' CPU µs per round trip: 2 replicas",
        "tput_pg2_cpu_us",
        "tput_sqlite_cpu_us",
        "tput_pg2_cpu_ratio",
        "speed",
    ),
    (
        "100 clients, replicas' CPU µs per round trip: 3 replicas",
        "tput_pg3_cpu_us",
        "tput_sqlite_cpu_us",
        "tput_pg3_cpu_ratio",
        "speed",
    ),
    ("100 clients, PostgreSQL CPU µs per round trip: 3 replicas", "tput_pg3_pg_cpu_us", "", "", "speed"),
    ("100 clients, haproxy CPU µs per round trip: 3 replicas", "tput_pg3_haproxy_cpu_us", "", "", "speed"),
    *(
        (
            f"100 clients, CPU µs per round trip of replicas + PostgreSQL + haproxy: {n} replica{'s' * (n > 1)}",
            f"tput_pg{n}_total_cpu_us",
            "tput_sqlite_total_cpu_us",
            f"tput_pg{n}_total_cpu_ratio",
            "speed",
        )
        for n in (1, 2, 3)
    ),
    ("PostgreSQL transactions per turn", "tx_per_turn", "", "", "the store's writes"),
    ("kill -9 → first resumed frame, ms", "kill_total_ms", "", "", "**--lease-ttl**"),
    ("… detection: the client's socket closes, ms", "kill_detection_ms", "", "", "speed"),
    ("… (haproxy marks the replica DOWN, ms)", "kill_haproxy_down_ms", "", "", "**haproxy checks**"),
    ("… lease: until another replica takes it, ms", "kill_lease_ms", "", "", "**--lease-ttl**"),
    ("… resume: lease taken → first frame, ms", "kill_resume_ms", "", "", "speed"),
    ("hand-off, owner alive: new connection → first frame, ms", "handoff_alive_ms", "", "", "speed"),
    ("hand-off, owner dead: new connection → first frame, ms", "handoff_dead_ms", "", "", "**--lease-ttl**"),
)


def render_markdown(result: dict[str, Any]) -> str:
    m, figures = result["machine"], result["figures"]
    load = ", ".join(f"{x:.2f}" for x in m.get("loadavg") or [])
    load_end = ", ".join(f"{x:.2f}" for x in m.get("loadavg_end") or [])
    spread = "; ".join(
        f"{size}: " + ", ".join(f"{name} {n}" for name, n in counts.items() if n)
        for size, counts in result.get("spread", {}).items()
    )
    lines = [
        BEGIN,
        "## PostgreSQL replicas (issue 17)",
        "",
        f"Measured {result['date']} on {m['cpu']} ({m['nproc']} CPUs, shared with other work), Python "
        f"{m['python']}, {m['platform']}; toolwire {m['toolwire']} ({m['toolwire_commit']}); PostgreSQL "
        f"{result.get('postgres', '?')} (defaults: fsync and synchronous_commit on). {result['rounds']} interleaved "
        f"rounds; per round {result['count']:,} sequential round trips per round-trip unit, {result['clients']} "
        f"clients × {result['per_client']} round trips per throughput unit, {result['runs']} runs of 20 and of 0 "
        f"turns per time-per-turn unit, one kill -9 and two hand-offs. Leases: --lease-ttl {LEASE_TTL:g} s, "
        f"--lease-renew {LEASE_RENEW:g} s (the serve defaults are 15 and 5: with them the lease-bound figures "
        f"become about 10–15 s). Load average before {load}, after {load_end}; took {result['duration_s']} s.",
        *(["", f"Note: {result['note']}"] if result.get("note") else []),
        "",
        "Everything on loopback: `toolwire serve` processes (`--app cluster_agent:make_agent`), haproxy "
        "(`balance url_param conversation`), PostgreSQL, and the clients in the benchmark's process. Cells: "
        "median (p25–p75) across rounds; ratios per round to the single-process SQLite figure of the same round. "
        '"Bound by" says whether a figure measures speed or a setting: the **bold** ones are set by a timeout '
        "and would shrink or grow with it.",
        "",
        "| metric | PostgreSQL | SQLite, one process | ratio | bound by |",
        "|---|--:|--:|--:|---|",
    ]
    for metric, pg_key, sqlite_key, ratio_key, bound in TABLE:
        if pg_key not in figures:
            continue
        lines.append(
            f"| {metric} | **{_cell(figures, pg_key)}** | {_cell(figures, sqlite_key)} | {_cell(figures, ratio_key)} "
            f"| {bound} |"
        )
    lines += ["", f"haproxy's spread of each throughput unit's clients: {spread or 'n/a'}."]
    lines += ["", "<details><summary>All figures</summary>", ""]
    lines += ["| figure | median | p25–p75 | bound by |", "|---|--:|--:|---|"]
    for f in figures.values():
        lines.append(
            f"| {f['label']} | {_fmt(f['median'])} {f['unit']} | {_fmt(f['p25'])}–{_fmt(f['p75'])} "
            f"| {f['bound'] or 'speed'} |"
        )
    lines += ["", "</details>", "", END]
    return "\n".join(lines)


def print_summary(result: dict[str, Any]) -> None:
    for key, f in result["figures"].items():
        bound = f"  [{f['bound']}]" if f["bound"] else ""
        print(f"{key:<30} {f['label']:<70} {_fmt(f['median']):>9} ({_fmt(f['p25'])}–{_fmt(f['p75'])}){bound}")


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help=f"interleaved rounds (≥ {MIN_ROUNDS})")
    parser.add_argument("--count", type=int, default=2_000, help="round-trip units: sequential round trips")
    parser.add_argument("--clients", type=int, default=100, help="throughput units: connected clients")
    parser.add_argument("--per-client", type=int, default=30, help="throughput units: round trips per client")
    parser.add_argument("--runs", type=int, default=5, help="time-per-turn units: runs of 20 turns (and of 0)")
    parser.add_argument("--only", default=",".join(GROUPS), help=f"groups: {', '.join(GROUPS)}")
    parser.add_argument("--json", type=Path, default=None, help="results file (bench/results/cluster-DATE.json)")
    parser.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN, help="the docs page to render into")
    parser.add_argument("--no-markdown", action="store_true", help="do not touch the docs page")
    parser.add_argument("--note", default="", help="a remark kept with the results (e.g. the machine's load)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 1 round, tiny counts")
    args = parser.parse_args(argv)
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    if unknown := only - set(GROUPS):
        parser.error(f"unknown groups {', '.join(sorted(unknown))}")
    if args.quick:
        args.rounds, args.count, args.clients, args.per_client, args.runs = 1, 50, 6, 5, 1
    elif args.rounds < MIN_ROUNDS:
        print(f"warning: {args.rounds} rounds; BENCHMARKS.md asks for at least {MIN_ROUNDS}", file=sys.stderr)
    try:
        result = run(
            rounds=args.rounds,
            count=args.count,
            clients=args.clients,
            per_client=args.per_client,
            runs=args.runs,
            only=only,
            note=args.note,
            stable=1.0 if args.quick else STABLE,
        )
    except BaseExceptionGroup as group:  # the task groups nest deeper than a traceback shows: say what failed
        for leaf in _leaves(group):
            traceback.print_exception(leaf, file=sys.stderr)
        return 1
    print_summary(result)
    json_path: Path = args.json or RESULTS_DIR / f"cluster-{result['date'][:10]}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {json_path}", file=sys.stderr)
    if not args.no_markdown:
        write_section(args.markdown, render_markdown(result), BEGIN, END)
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
