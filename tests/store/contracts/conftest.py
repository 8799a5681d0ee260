"""One fixture per store interface, each over every backend of `contract_support.BACKENDS`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from contract_support import BACKENDS, Backend, LedgerWireStore

from toolwire.store import ApprovalStore, ClientStateStore, Store, ThreadStore, WireStateStore


@pytest.fixture(params=list(BACKENDS))
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Backend, Any]]:
    """A new, empty store of each backend, closed after the test."""
    spec = BACKENDS[request.param]
    if spec.asyncio_only and request.getfixturevalue("anyio_backend") != "asyncio":
        pytest.skip(f"the {request.param} backend runs on asyncio only")
    for name in spec.fixtures:
        request.getfixturevalue(name)
    store = spec.open(tmp_path)
    try:
        yield spec, store
    finally:
        await store.aclose()


def _implementing(backend: tuple[Backend, Any], *interfaces: type) -> Any:
    spec, store = backend
    if missing := [interface.__name__ for interface in interfaces if interface not in spec.implements]:
        pytest.skip(f"the backend does not implement {', '.join(missing)} yet")
    return store


@pytest.fixture
def thread_store(backend: tuple[Backend, Any]) -> ThreadStore:
    return _implementing(backend, ThreadStore)


@pytest.fixture
def approval_store(backend: tuple[Backend, Any]) -> ApprovalStore:
    return _implementing(backend, ApprovalStore)


@pytest.fixture
def client_state_store(backend: tuple[Backend, Any]) -> ClientStateStore:
    return _implementing(backend, ClientStateStore)


@pytest.fixture
def wire_state_store(backend: tuple[Backend, Any]) -> LedgerWireStore:
    return _implementing(backend, WireStateStore, ThreadStore)


@pytest.fixture
def whole_store(backend: tuple[Backend, Any]) -> Store:
    """A backend that implements every interface (what `Agent(store=)` takes)."""
    return _implementing(backend, ThreadStore, ApprovalStore, ClientStateStore, WireStateStore)
