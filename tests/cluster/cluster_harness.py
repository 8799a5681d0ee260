"""The multi-replica harness: PostgreSQL, N `toolwire serve` replicas, haproxy in front, K Python clients.

Everything is real and on loopback: a throwaway PostgreSQL cluster (tests/pg_cluster.py, durable:
the scenarios crash it), the replicas as `toolwire serve --store postgresql://...` subprocesses on
ports chosen here (a restarted replica comes back on its port, so haproxy's configuration holds),
and haproxy in the foreground as a child process, balancing on the `conversation` URL parameter.

```
JobClient ×K ──ws──► haproxy (url_param conversation, redispatch, /healthz checks) ──► r1 r2 r3 ──► PostgreSQL
```

A `JobClient` runs jobs (tests/cluster/cluster_app.py's script) with toolwire's own client and
counts what it executes per request id and per call id, and the stanza ids it receives. After its
first handshake the client names its conversation in the URL it reconnects with (`?conversation=`,
as toolwire's clients do), the hint haproxy hashes on, so a reconnect lands on the same replica
while that one is up.

`Cluster` has the disturbances: `kill`, `pause` / `resume` (SIGSTOP / SIGCONT), `restart_postgres`
(`pg_ctl restart -m immediate`), `rolling_restart`; and `haproxy.wait_status` to wait for what the
load balancer sees. tests/cluster/cluster_checks.py checks the invariants afterwards.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from cluster_app import HOLD_ENV, STALE_AFTER, TALLY_ENV

from pg_cluster import PgCluster
from serving import Server, wait_gone
from toolwire.client import Client, Reconnect
from toolwire.protocol import ToolUseRequest, ToolUseResult

TOKEN = "cluster-test-token-0123456789abcdef"
APP = Path(__file__).with_name("cluster_app.py")
HAPROXY_DIRS = ("/usr/sbin", "/usr/local/sbin")
LEASE_TTL = 3
"""Seconds a replica's lease on a conversation lasts unrenewed (`--lease-ttl`, where serve has it): short, so
that a scenario's takeover of a dead or stopped replica's conversations is quick."""
LEASE_RENEW = 1

JOBS_GROUP: dict[str, Any] = {
    "name": "Jobs",
    "description": "The harness's client tools",
    "tools": [
        {
            "name": "Work",
            "description": "Do one round of a job",
            "parametersSchema": {
                "type": "object",
                "properties": {"job": {"type": "string"}, "round": {"type": "integer"}},
                "required": ["job", "round"],
            },
        }
    ],
}


def find_haproxy() -> str | None:
    """haproxy's path (PATH, then the sbin directories a non-root PATH may lack), or None."""
    return shutil.which("haproxy") or next(
        (str(path) for d in HAPROXY_DIRS if (path := Path(d) / "haproxy").is_file()), None
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@cache
def serve_flags() -> frozenset[str]:
    """The options `toolwire serve --help` lists (`--replica-id` is passed only where it exists)."""
    done = subprocess.run(
        [sys.executable, "-m", "toolwire.cli", "serve", "--help"], capture_output=True, text=True, timeout=60
    )
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]*)", done.stdout))


async def wait_until(condition: Callable[[], bool], what: str, within: float = 30) -> None:
    """Wait until `condition()` holds (checked every 20 ms); fail naming `what` after `within` seconds.

    A poll: what it waits for is another process's state (haproxy's view, a database row), which
    sends no event here.
    """
    with anyio.move_on_after(within):
        while not condition():  # noqa: ASYNC110
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"timed out after {within} s waiting until {what}")


@dataclass
class Replica:
    """One `toolwire serve` process of the cluster, on its own port; `start()` again after it ended."""

    name: str
    port: int
    workdir: Path
    store: str
    tally: Path
    app: str = "cluster_app:make_agent"
    """The `--app` factory (importable from `workdir` or PYTHONPATH)."""
    token: str = TOKEN
    lease_ttl: float = LEASE_TTL
    lease_renew: float = LEASE_RENEW
    server: Server | None = None
    lives: list[Server] = field(default_factory=list[Server])
    """Every process this replica has been, the current one last (their output, for a failure's report)."""

    @property
    def pid(self) -> int:
        assert self.server is not None
        return self.server.process.pid

    def start(self) -> None:
        """Start the process; return once it prints that it serves."""
        command = [sys.executable, "-m", "toolwire.cli", "serve", "--port", str(self.port), "--token", self.token]
        command += ["--data-dir", str(self.workdir / "data"), "--store", self.store, "--app", self.app]
        if "--replica-id" in serve_flags():
            command += ["--replica-id", self.name]
        if "--lease-ttl" in serve_flags():  # a dead replica's conversations wait LEASE_TTL s for another
            command += ["--lease-ttl", f"{self.lease_ttl:g}", "--lease-renew", f"{self.lease_renew:g}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1", TALLY_ENV: str(self.tally), HOLD_ENV: str(self.tally.parent)}
        env.pop("TOOLWIRE_TOKEN", None)
        env.pop("PYTHONASYNCIODEBUG", None)  # (`make test` sets it for the tests; the replicas run as deployed)
        process = subprocess.Popen(
            command, cwd=self.workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        assert process.stdout is not None
        lines: list[str] = []
        for line in process.stdout:
            lines.append(line)
            if "serving ws://" in line:
                break
        else:
            process.wait(timeout=10)
            raise AssertionError(f"replica {self.name} did not start:\n" + "".join(lines))
        self.server = Server(process, f"ws://127.0.0.1:{self.port}/ws", self.workdir / "data", self.token, lines)
        self.lives.append(self.server)

    @property
    def running(self) -> bool:
        return self.server is not None and self.server.process.poll() is None

    def kill(self) -> None:
        """kill -9."""
        assert self.server is not None
        self.server.kill()

    def pause(self) -> None:
        """SIGSTOP: the process holds its sockets and its lease but does nothing."""
        assert self.server is not None
        self.server.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT."""
        assert self.server is not None
        self.server.process.send_signal(signal.SIGCONT)

    def stop(self) -> int:
        """A graceful stop (SIGTERM); its exit status."""
        assert self.server is not None
        code, _ = self.server.stop(signal.SIGTERM)
        return code

    def ensure_ended(self) -> None:
        for life in self.lives:
            if life.process.poll() is None:
                life.process.send_signal(signal.SIGCONT)
                life.process.send_signal(signal.SIGKILL)
                life.process.wait(timeout=10)
            life.read_all()
            if life.process.stdout is not None:
                life.process.stdout.close()

    def output(self) -> str:
        return "".join(line for life in self.lives for line in (*life.started, *life.printed))


HAPROXY_CONFIG = """\
global
    maxconn 2000
    stats socket {admin} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout client 60s
    timeout server 60s
    # A WebSocket, once upgraded, is a tunnel: this bounds how long it may stay idle.
    timeout tunnel 10m
    option redispatch
    retries 3

frontend clients
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    # Hash on the conversation the client names in its URL; without one, round robin.
    balance url_param conversation
    option httpchk GET /healthz
    http-check expect status 200
    # A replica that fails two checks is out, and its sessions are cut, so clients reconnect elsewhere.
    default-server inter 200ms fall 2 rise 1 on-marked-down shutdown-sessions
{servers}
"""


class Haproxy:
    """haproxy in the foreground (`-db`), a child process; `admin()` speaks to its stats socket."""

    def __init__(self, binary: str, workdir: Path, replicas: list[Replica]) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.admin_socket = workdir / "admin.sock"
        servers = "\n".join(f"    server {r.name} 127.0.0.1:{r.port} check" for r in replicas)
        self.config = workdir / "haproxy.cfg"
        self.config.write_text(HAPROXY_CONFIG.format(admin=self.admin_socket, port=self.port, servers=servers))
        self.log = workdir / "haproxy.log"
        self._binary = binary
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> None:
        checked = subprocess.run([self._binary, "-c", "-q", "-f", str(self.config)], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr
        with self.log.open("wb") as log:
            self.process = subprocess.Popen([self._binary, "-db", "-f", str(self.config)], stdout=log, stderr=log)
        give_up = time.monotonic() + 10
        while not self.admin_socket.exists() or not self._accepts() or not self._answers():
            assert self.process.poll() is None, "haproxy ended:\n" + self.log.read_text(errors="replace")
            assert time.monotonic() < give_up, "haproxy did not start:\n" + self.log.read_text(errors="replace")
            time.sleep(0.02)

    def _answers(self) -> bool:
        """Whether the stats socket takes commands yet (it exists a moment before it listens)."""
        try:
            self.admin("show info")
        except OSError:
            return False
        return True

    def _accepts(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            return False
        return True

    def admin(self, command: str) -> str:
        """Send one command to the stats socket; its answer."""
        with socket.socket(socket.AF_UNIX) as admin:
            admin.connect(str(self.admin_socket))
            admin.sendall(command.encode() + b"\n")
            chunks: list[bytes] = []
            while chunk := admin.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stats(self) -> dict[str, dict[str, str]]:
        """The backend's servers as haproxy sees them: name → `show stat` columns (`status`, `scur`, `stot`, …)."""
        lines = self.admin("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {row["svname"]: row for row in rows if row.get("pxname") == "replicas" and row["svname"] != "BACKEND"}

    def status(self, name: str) -> str:
        return self.stats()[name]["status"]

    async def wait_status(self, name: str, *statuses: str, within: float = 30) -> None:
        """Wait until haproxy reports server `name` in one of `statuses` (`UP`, `DOWN`, `DRAIN`, …)."""
        await wait_until(
            lambda: self.status(name).startswith(statuses), f"haproxy sees {name} {' or '.join(statuses)}", within
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


class JobClient:
    """One Python client through haproxy: runs jobs one after the other and records what it saw."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.executions: Counter[str] = Counter()
        """Work executions per request id (the client's ledger must keep each at 1)."""
        self.calls: Counter[str] = Counter()
        """Work executions per call id (a call re-issued under a new request id would show here)."""
        self.stanzas: list[int] = []
        """The server stanza ids delivered, in order."""
        self.answers: list[str] = []
        self.failure: BaseException | None = None
        self.conversation = ""
        self.client: Client | None = None
        self.connected = False
        """Whether its socket was up when it was last looked at (kept after the client ended)."""
        self.gate: anyio.Event | None = None
        """While set, each Work call waits for it before returning (a run held mid-tool-call)."""
        self.waiting = 0
        """Work calls waiting at the gate now."""

    async def _work(self, job: str, round: int) -> str:
        if self.gate is not None:
            self.waiting += 1
            try:
                await self.gate.wait()
            finally:
                self.waiting -= 1
        return f"{job} round {round} worked"

    async def run(self, url: str, *, jobs: int, rounds: int, hold: bool = False) -> None:
        """Connect through `url`, run `jobs` jobs of `rounds` rounds, then close; a failure is kept, not raised."""
        client = Client(url, token=TOKEN, reconnect=Reconnect())
        client.handlers.add("Work", self._work)
        client.link.on_stanza = self.stanzas.append  # before the handshake: from stanza -1 on
        counted = client.handlers.run

        async def run_counted(request: ToolUseRequest) -> ToolUseResult:
            self.executions[request.id] += 1
            self.calls[request.call_id or request.id] += 1
            return await counted(request)

        client.handlers.run = run_counted
        try:
            async with anyio.create_task_group() as tasks:
                try:
                    await client.start(tasks, None)
                    self.client = client
                    self.conversation = client.conversation_id  # (named in each reconnect's URL: haproxy's hint)
                    await client.register([JOBS_GROUP], expanded_containers=["Jobs"])
                    for job in range(jobs):
                        name = f"c{self.index}-{job}"
                        held = " hold" if hold and job == 0 else ""
                        self.answers.append(await client.ask(f"job {name} rounds {rounds}{held}"))
                finally:
                    self.connected = client.connected
                    await client.aclose()
                    tasks.cancel_scope.cancel()
        except Exception as exc:  # reported by the invariant checks with the client's index
            while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]
            self.failure = exc
        finally:
            self.client = None


@dataclass
class Cluster:
    """The running harness: PostgreSQL, the replicas, haproxy; and the disturbances."""

    pg: PgCluster
    replicas: list[Replica]
    haproxy: Haproxy
    tally_file: Path
    clients: list[JobClient] = field(default_factory=list[JobClient])
    disturbed: bool = False
    """Whether the last `run_load`'s disturbance ran to its end."""

    @property
    def url(self) -> str:
        """Where clients connect: haproxy."""
        return self.haproxy.url

    def replica(self, name: str) -> Replica:
        return next(replica for replica in self.replicas if replica.name == name)

    def tally(self) -> Counter[str]:
        """Server tool executions per `THREAD CALL` (from the app's file)."""
        if not self.tally_file.exists():
            return Counter()
        return Counter(line for line in self.tally_file.read_text().splitlines() if line)

    def executed(self) -> int:
        """Client tool executions so far, all clients together."""
        return sum(sum(client.executions.values()) for client in self.clients)

    async def run_load(
        self,
        count: int,
        *,
        jobs: int,
        rounds: int,
        during: Callable[[], Coroutine[Any, Any, None]] | None = None,
        gate: anyio.Event | None = None,
        hold: bool = False,
        within: float = 30,
    ) -> list[JobClient]:
        """Run `count` clients through haproxy (and `during`, the disturbance, beside them); return them when all ended.

        With a `gate`, every Work call waits for it (see `JobClient.gate`); with `hold`, the model's first turn
        of each client's first job waits for `release_models()`.
        """
        self.clients = [JobClient(index) for index in range(count)]
        for client in self.clients:
            client.gate = gate
        with anyio.move_on_after(within) as deadline:
            async with anyio.create_task_group() as group:
                for client in self.clients:
                    group.start_soon(lambda c=client: c.run(self.url, jobs=jobs, rounds=rounds, hold=hold))
                if during is not None:
                    group.start_soon(self._disturb, during)
        if deadline.cancelled_caught:
            assert during is None or self.disturbed, f"the disturbance did not complete within {within} s"
            for client in self.clients:
                if client.failure is None and len(client.answers) < jobs:
                    connected = client.connected
                    client.failure = TimeoutError(
                        f"still at job {len(client.answers)} after {within} s (conversation {client.conversation},"
                        f" {'connected' if connected else 'not connected'}, {sum(client.executions.values())}"
                        f" Work runs, {len(client.stanzas)} stanzas)"
                    )
        return self.clients

    async def _disturb(self, during: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.disturbed = False
        await during()
        self.disturbed = True

    def models_held(self) -> int:
        """Model turns waiting for `release_models()` now, or released since."""
        return len(list(self.tally_file.parent.glob("held-*")))

    def release_models(self) -> None:
        """Let the held model turns (`run_load(hold=True)`) answer."""
        (self.tally_file.parent / "release").touch()

    async def settle(self, name: str) -> None:
        """Wait until replica `name`, whose clients were cut off, has acted on it: haproxy sees it up (its
        loop runs: it has seen the sockets close), and its wait for those clients (cluster_app.DISCONNECTION)
        has ended since."""
        await self.haproxy.wait_status(name, "UP", "DRAIN")
        window_ends = time.monotonic() + STALE_AFTER
        await wait_until(lambda: time.monotonic() >= window_ends, f"{name}'s wait for its clients ended")

    async def kill(self, name: str) -> None:
        """kill -9 a replica and wait until haproxy has it down."""
        await anyio.to_thread.run_sync(self.replica(name).kill)
        await self.haproxy.wait_status(name, "DOWN")

    async def restart_postgres(self) -> None:
        """`pg_ctl restart -m immediate`: every connection of every replica drops; the server recovers."""
        await anyio.to_thread.run_sync(self.pg.restart)

    async def rolling_restart(self) -> None:
        """Stop (SIGTERM) and start each replica in turn, each back UP in haproxy before the next."""
        for replica in self.replicas:
            await anyio.to_thread.run_sync(replica.stop)
            await self.haproxy.wait_status(replica.name, "DOWN")
            await anyio.to_thread.run_sync(replica.start)
            await self.haproxy.wait_status(replica.name, "UP")

    def report(self) -> str:
        """The replicas' and haproxy's output, for a failure's message."""
        parts = [f"--- {replica.name} ---\n{_quiet(replica.output())[-4000:]}" for replica in self.replicas]
        return "\n".join(parts) + f"\n--- haproxy ---\n{self.haproxy.log.read_text(errors='replace')[-2000:]}"


def _quiet(output: str) -> str:
    """A replica's output without uvicorn's access lines (a health check every 200 ms)."""
    return "".join(line for line in output.splitlines(keepends=True) if not line.startswith("INFO:"))


@contextmanager
def running_cluster(
    workdir: Path, pg_bin: Path, haproxy: str, *, replicas: int = 3, app: Path = APP
) -> Iterator[Cluster]:
    """PostgreSQL, `replicas` replicas serving `app`'s `make_agent`, and haproxy, under `workdir`; ended after."""
    pg = PgCluster(pg_bin, durable=True)
    members: list[Replica] = []
    balancer: Haproxy | None = None
    try:
        pg.start()
        shutil.copy(app, workdir / app.name)
        tally = workdir / "tally.txt"
        served = f"{app.stem}:make_agent"
        members = [Replica(f"r{n}", free_port(), workdir, pg.dsn, tally, served) for n in range(1, replicas + 1)]
        for replica in members:  # one at a time: the first migrates the schema
            replica.start()
        balancer = Haproxy(haproxy, workdir, members)
        balancer.start()
        cluster = Cluster(pg, members, balancer, tally)
        give_up = time.monotonic() + 10
        while not all(balancer.status(r.name).startswith("UP") for r in members):
            assert time.monotonic() < give_up, f"haproxy did not see every replica up: {balancer.stats()}"
            time.sleep(0.02)
        yield cluster
    finally:
        if balancer is not None:
            balancer.stop()
        for replica in members:
            if replica.running:
                assert replica.server is not None
                replica.server.process.send_signal(signal.SIGCONT)
                replica.server.process.send_signal(signal.SIGINT)
                if not wait_gone(replica.pid, 15):
                    replica.server.process.kill()
        for replica in members:
            replica.ensure_ended()
        pg.remove()
