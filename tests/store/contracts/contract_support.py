"""What the contract suites share: the backends they run against, sample calls, interface checks.

Adding a backend is adding one entry to `BACKENDS`. A backend built one interface at a time lists
the interfaces it implements so far (`Backend.implements`); the suites of the others skip it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pg_cluster
from toolwire import ToolCall
from toolwire.store import (
    ApprovalStore,
    CallState,
    ClientStateStore,
    LedgerEntry,
    ThreadStore,
    WireStateStore,
)
from toolwire.store.memory import MemoryStore
from toolwire.store.sqlite import SqliteStore

INTERFACES: frozenset[type] = frozenset({ThreadStore, ApprovalStore, ClientStateStore, WireStateStore})


@dataclass(frozen=True)
class Backend:
    """A store implementation as the contract suites see it."""

    open: Callable[[Path], Any]
    """Open a new, empty store whose files (if any) go in the given fresh directory; closed with `aclose()`."""
    implements: frozenset[type] = field(default=INTERFACES)
    """The interfaces whose suites it runs."""
    fixtures: tuple[str, ...] = ()
    """Fixtures requested before `open` (e.g. a database server to store into)."""
    asyncio_only: bool = False
    """Runs on asyncio only: its suites skip it on trio."""


_schemas = itertools.count()


def open_postgres(_: Path) -> Any:
    """A `PostgresStore` on the session's cluster, in a schema of its own (so, empty)."""
    from toolwire.store.postgres import PostgresStore

    return PostgresStore(pg_cluster.running().dsn, schema=f"contract_{os.getpid()}_{next(_schemas)}")


BACKENDS: dict[str, Backend] = {
    "memory": Backend(lambda _: MemoryStore()),
    "sqlite": Backend(lambda directory: SqliteStore.in_directory(directory / "data")),
    "postgres": Backend(open_postgres, fixtures=("postgres",), asyncio_only=True),
}


class LedgerWireStore(WireStateStore, ThreadStore, Protocol):
    """A `WireStateStore` with the `ThreadStore` whose ledger its saves move (one backend, shared transactions)."""


def missing_methods(store: object, interface: type) -> list[str]:
    """The methods of `interface` (and the interfaces it extends) that `store` lacks."""
    members = {
        name
        for base in interface.__mro__
        if base not in (object, Protocol) and getattr(base, "_is_protocol", False)
        for name, value in vars(base).items()
        if callable(value) and not name.startswith("_")
    }
    return sorted(name for name in members if not callable(getattr(store, name, None)))


LOOKUP = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris", "limit": 3})
DELETE = ToolCall(id="call_2", name="delete_note", arguments={"note_id": "n-7"})


def entry(
    call: ToolCall, thread_id: str = "t1", *, state: CallState = CallState.PENDING, mode: str = "external"
) -> LedgerEntry:
    return LedgerEntry(thread_id=thread_id, call=call, request_index=0, state=state, mode=mode)


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="lookup", arguments={"id": call_id})
