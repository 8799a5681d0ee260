"""The cluster harness's fixtures: every test here is marked `cluster` and needs PostgreSQL and haproxy.

`make cluster` runs them alone; they skip, saying what to install, where either is missing
(`.ci/run` installs both: Debian's postgresql and haproxy packages).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_checks import LeaseWatcher
from cluster_harness import Cluster, find_haproxy, running_cluster

from pg_cluster import find_bin_dir

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.cluster)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """PostgreSQL, three replicas and haproxy, fresh for the test."""
    pg_bin = find_bin_dir()
    if pg_bin is None:
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (Debian: apt-get install postgresql)")
    haproxy = find_haproxy()
    if haproxy is None:
        pytest.skip("needs haproxy (Debian: apt-get install haproxy)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("needs the 'postgres' extra: pip install 'toolwire[postgres]'")
    with running_cluster(tmp_path, pg_bin, haproxy) as running:
        yield running


@pytest.fixture
def leases(cluster: Cluster) -> Iterator[LeaseWatcher]:
    """The lease table sampled while the test runs."""
    with LeaseWatcher(cluster.pg.dsn) as watcher:
        yield watcher
