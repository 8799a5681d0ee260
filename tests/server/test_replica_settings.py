"""`LeaseSettings` and how `toolwire serve`'s options make them (no server, no database)."""

from __future__ import annotations

import os
import socket

import pytest

from toolwire.errors import UsageError
from toolwire.server.replica import LeaseSettings, default_replica_id
from toolwire.server.serve import ServeOptions

POSTGRES = "postgresql://toolwire@db.internal/app"


def test_the_default_replica_id_is_host_and_pid() -> None:
    assert default_replica_id() == f"{socket.gethostname()}:{os.getpid()}"
    assert LeaseSettings().replica_id == default_replica_id()


def test_a_renewal_interval_not_under_the_ttl_is_refused() -> None:
    with pytest.raises(ValueError, match="under its TTL"):
        LeaseSettings(ttl=5, renew_every=5)
    with pytest.raises(UsageError, match="--lease-"):
        ServeOptions(store=POSTGRES, lease_ttl=3, lease_renew=4).lease_settings()


def test_sqlite_serves_without_leases() -> None:
    assert ServeOptions(store="sqlite", replica_id="r1", lease_ttl=3).lease_settings() is None


def test_serve_options_make_the_lease_settings() -> None:
    settings = ServeOptions(store=POSTGRES, replica_id="r1", lease_drain=0, lease_wait=2).lease_settings()
    assert settings == LeaseSettings(replica_id="r1", ttl=15, renew_every=5, drain=0, wait=2)
    short = ServeOptions(store=POSTGRES, replica_id="r1", lease_ttl=3).lease_settings()
    assert short is not None and (short.ttl, short.renew_every) == (3, 1)  # a third of a short TTL
    named = ServeOptions(store=POSTGRES).lease_settings()
    assert named is not None and named.replica_id == default_replica_id()
