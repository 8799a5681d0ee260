"""bench/cluster_bench.py's rig: PostgreSQL, the `toolwire serve` processes, haproxy; and their CPU clocks.

Imported by cluster_bench.py after it put tests/ and tests/cluster/ on `sys.path`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from cluster_harness import LEASE_RENEW, LEASE_TTL, Haproxy, Replica, _quiet, free_port

from pg_cluster import PgCluster
from ws_bench import TOKEN, process_cpu

BENCH: Final = Path(__file__).resolve().parent
APP: Final = "cluster_agent:make_agent"
TX_LEASE: Final = (90.0, 30.0)
"""`tx`'s --lease-ttl and --lease-renew: its renewals and sweeps (one transaction each) seldom fall in a count."""


# == processes: the replicas' CPU, PostgreSQL's ===================================================


@dataclass
class Processes:
    """A `ws_bench.Meter`: the CPU of some replicas' current processes, summed."""

    replicas: Sequence[Replica]

    def cpu(self) -> float:
        return sum(process_cpu(replica.pid) for replica in self.replicas)


_TICKS: Final = os.sysconf("SC_CLK_TCK")


def postgres_cpu(pg: PgCluster) -> float:
    """Seconds of CPU of the PostgreSQL server: the postmaster, its live children, and those it reaped."""
    postmaster = int((pg.data_dir / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile: its time is in the postmaster's cutime now
        pid, parent = int(entry.name), int(fields[1])
        if pid == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        elif parent == postmaster:
            total += int(fields[11]) + int(fields[12])
    return total / _TICKS


# == the rig: PostgreSQL, the servers, haproxy ====================================================


@dataclass
class Rig:
    pg: PgCluster
    sqlite: Replica
    main: list[Replica]
    balancer: Haproxy
    spare: list[Replica]
    spare_balancer: Haproxy
    tx: Replica
    workdir: Path

    def dsn(self, database: str) -> str:
        return self.pg.dsn.rsplit("/", 1)[0] + "/" + database

    def replica(self, name: str) -> Replica:
        return next(r for r in (*self.main, *self.spare, self.tx, self.sqlite) if r.name == name)


def _replica(name: str, workdir: Path, store: str, lease: tuple[float, float] = (LEASE_TTL, LEASE_RENEW)) -> Replica:
    home = workdir / name
    home.mkdir()
    return Replica(
        name, free_port(), home, store, workdir / "tally.txt", app=APP, token=TOKEN, lease_ttl=lease[0],
        lease_renew=lease[1],
    )  # fmt: skip


@contextmanager
def running_rig(workdir: Path, pg_bin: Path, haproxy: str) -> Iterator[Rig]:
    """Start everything (PostgreSQL first, each database's first replica before the others); end it all after."""
    import psycopg

    os.environ["PYTHONPATH"] = os.pathsep.join([str(BENCH), *filter(None, [os.environ.get("PYTHONPATH")])])
    pg = PgCluster(pg_bin, durable=True)
    with ExitStack() as stack:
        stack.callback(pg.remove)
        pg.start()
        with psycopg.connect(pg.dsn, autocommit=True) as admin:
            for database in ("failover", "txbench"):
                admin.execute(f"CREATE DATABASE {database}")
        rig_dsn = pg.dsn.rsplit("/", 1)[0]
        sqlite = _replica("sqlite", workdir, "sqlite")
        main = [_replica(f"r{n}", workdir, pg.dsn) for n in (1, 2, 3)]
        spare = [_replica(f"f{n}", workdir, f"{rig_dsn}/failover") for n in (1, 2, 3)]
        tx = _replica("tx", workdir, f"{rig_dsn}/txbench", TX_LEASE)
        everyone = [sqlite, *main, *spare, tx]
        stack.callback(lambda: [replica.ensure_ended() for replica in everyone])
        stack.callback(lambda: [_stop(replica) for replica in everyone])
        for replica in everyone:  # one at a time: a database's first replica migrates its schema
            replica.start()
        balancers = []
        for name, members in (("main", main), ("spare", spare)):
            (workdir / name).mkdir()
            balancer = Haproxy(haproxy, workdir / name, members)
            stack.callback(balancer.stop)
            balancer.start()
            balancers.append(balancer)
        rig = Rig(pg, sqlite, main, balancers[0], spare, balancers[1], tx, workdir)

        async def all_up() -> None:
            for balancer, members in ((rig.balancer, main), (rig.spare_balancer, spare)):
                for replica in members:
                    await balancer.wait_status(replica.name, "UP")

        anyio.run(all_up)
        try:
            yield rig
        except BaseException:
            for replica in everyone:  # what the servers said, for the failure's report
                print(f"--- {replica.name} ---\n{_quiet(replica.output())[-3000:]}", file=sys.stderr)
            raise


def url_of(replica: Replica) -> str:
    """Where a running replica serves."""
    assert replica.server is not None, f"{replica.name} is not running"
    return replica.server.url


def _stop(replica: Replica) -> None:
    if replica.running:
        try:
            replica.stop()
        except Exception:  # ensure_ended kills it
            pass
