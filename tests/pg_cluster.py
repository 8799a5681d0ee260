"""A throwaway PostgreSQL cluster for the tests: `initdb` and `pg_ctl` on a temporary directory, loopback only.

The cluster listens on 127.0.0.1 on a free port (no Unix socket), trusts loopback connections
(superuser `postgres`, no password), and is removed when it stops. PostgreSQL refuses to run as
root: when the tests run as root, its commands run as the system user `postgres` (Debian's
`postgresql` package creates it; `useradd --system` does here when it is missing), through
`runuser`, and the data directory belongs to that user.

`durable=False` starts it with `fsync=off` (commits are not forced to disk): faster on a busy
machine, and right for the contract tests; a test of crashes must keep the default.

The binaries are looked up on `PATH`, then in Debian's `/usr/lib/postgresql/<version>/bin`;
`find_bin_dir()` returns None when there are none, and the `postgres` fixture skips then.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

SYSTEM_USER = "postgres"
"""The unprivileged user the cluster runs as when the tests run as root."""


def find_bin_dir() -> Path | None:
    """The directory of `initdb` and `pg_ctl` (PATH first, then Debian's newest), or None."""
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("pg_ctl") is not None:
        return Path(on_path).resolve().parent
    debian = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda path: int(path.parent.parent.name))
    return debian[-1].parent if debian else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PgCluster:
    """One PostgreSQL server on a fresh data directory; `start()`, then `dsn`, then `stop()`."""

    def __init__(self, bin_dir: Path, *, durable: bool = True) -> None:
        self.bin_dir = bin_dir
        self.durable = durable
        self.port = 0
        self._root = Path(tempfile.mkdtemp(prefix="toolwire-pg-"))
        self.data_dir = self._root / "data"
        self._as_root = os.geteuid() == 0

    @property
    def dsn(self) -> str:
        """A URL for the cluster's database `postgres` as its superuser."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *command: str, timeout: float = 60) -> None:
        argv = [str(self.bin_dir / command[0]), *command[1:]]
        if self._as_root:
            argv = ["runuser", "-u", SYSTEM_USER, "--", *argv]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=self._root)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")

    def start(self) -> None:
        """Create the cluster and start its server; return once it accepts connections."""
        if self._as_root:
            _ensure_system_user()
            shutil.chown(self._root, SYSTEM_USER, SYSTEM_USER)
        self._run("initdb", "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        for attempt in range(5):  # the free port may be taken before the server binds it
            self.port = _free_port()
            settings = [
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                "-c unix_socket_directories=''",
                "-c max_connections=200",
                "-c shared_buffers=64MB",
            ]
            if not self.durable:
                settings.append("-c fsync=off")
            try:
                self._run(
                    "pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data_dir),
                    "-l", str(self._root / "server.log"), "-o", " ".join(settings),
                )  # fmt: skip
                return
            except RuntimeError:
                if attempt == 4:
                    raise RuntimeError("the server did not start:\n" + self.log()) from None

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (`pg_ctl stop -m MODE`); the data directory stays until `remove()`."""
        self._run("pg_ctl", "stop", "-w", "-m", mode, "-D", str(self.data_dir))

    def restart(self, mode: str = "immediate") -> None:
        """Restart the server (`pg_ctl restart -m MODE`, same port and settings); return once it accepts connections.

        `immediate` is a crash as far as the clients see: every connection drops, the server recovers from its WAL.
        """
        self._run(
            "pg_ctl", "restart", "-w", "-t", "60", "-m", mode, "-D", str(self.data_dir),
            "-l", str(self._root / "server.log"),
        )  # fmt: skip

    def remove(self) -> None:
        """Stop the server if it runs, and delete everything of the cluster."""
        try:
            self.stop("immediate")
        except RuntimeError:
            pass  # not running
        shutil.rmtree(self._root, ignore_errors=True)

    def log(self) -> str:
        """The server's log so far."""
        path = self._root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


def _ensure_system_user() -> None:
    try:
        subprocess.run(["id", "-u", SYSTEM_USER], check=True, capture_output=True)
    except subprocess.CalledProcessError:
        subprocess.run(["useradd", "--system", "--no-create-home", SYSTEM_USER], check=True, capture_output=True)


_running: PgCluster | None = None


def running() -> PgCluster:
    """The session's cluster (started by the `postgres` fixture)."""
    assert _running is not None, "request the `postgres` fixture first"
    return _running


@pytest.fixture(scope="session")
def postgres() -> Iterator[PgCluster]:
    """A PostgreSQL cluster for the whole session (fsync off); skipped without PostgreSQL's binaries."""
    global _running
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (Debian: apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("needs the 'postgres' extra: pip install 'toolwire[postgres]'")
    cluster = PgCluster(bin_dir, durable=False)
    started = time.monotonic()
    try:
        cluster.start()
    except BaseException:
        cluster.remove()
        raise
    _running = cluster
    print(f"PostgreSQL test cluster up in {time.monotonic() - started:.1f} s on port {cluster.port}")
    try:
        yield cluster
    finally:
        _running = None
        cluster.remove()
