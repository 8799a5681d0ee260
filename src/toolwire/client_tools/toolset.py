"""`ClientToolset`: the client tools of a thread, as a toolset the loop binds to each run.

What a run is given about client tools (`Agent.run(client_tool_groups=, expanded_containers=,
reset_client_state=, client=)`) is its `ClientInput`: the toolset's per-run input. A run in a
thread that has no client tools and was given none binds nothing, and never loads the session,
the definitions or their pydantic models.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..envelopes import ToolResult
from ..store import LedgerEntry
from ..toolsets import RunScope
from .channel import ClientChannel, ClientHub, ClientToolsConfig

if TYPE_CHECKING:  # loaded on the first run that uses client tools (pydantic models, jsonschema-rs)
    from ..policy import PermissionPolicy
    from .definitions import ClientToolGroup
    from .session import ClientSession

__all__ = ["ClientInput", "ClientToolset", "answered_result"]


@dataclass(frozen=True, slots=True)
class ClientInput:
    """What a run was given about client tools."""

    groups: Sequence[ClientToolGroup | Mapping[str, Any]] = ()
    """Groups to register for the thread (`ClientToolGroup`s or the JSON objects a client sends)."""
    expanded: tuple[str, ...] = ()
    """Groups to offer expanded from the start."""
    reset: bool = False
    """Forget the thread's client tools, expansion and context first."""
    channel: ClientChannel | None = None
    """Where the thread's client tool calls go during the run."""

    @property
    def used(self) -> bool:
        """True when the run was given any of it (its thread then has a session)."""
        return bool(self.groups) or self.reset or self.channel is not None or bool(self.expanded)


class ClientToolset:
    """The client tools of each thread (seed 004): bound to a run, a `ClientSession`.

    Args:
        hub: Where the threads' clients are attached (`Agent.clients`).
        config: How client tools are offered, timed out and treated when their client leaves.
    """

    def __init__(self, hub: ClientHub, config: ClientToolsConfig) -> None:
        self.hub = hub
        self.config = config

    async def setup(self) -> None:
        """Nothing to open: the clients attach to the hub themselves."""

    async def teardown(self) -> None:
        """Nothing to close."""

    async def bind(self, scope: RunScope) -> ClientSession | None:
        """The thread's client tools for this run; None when it has none and was given none.

        Raises:
            RegistrationError: The run's client tool groups were refused; nothing was stored.
        """
        given = scope.input if isinstance(scope.input, ClientInput) else None
        if (given is None or not given.used) and await scope.store.load_client_state(scope.thread_id) is None:
            return None  # the common fast path: no session, nothing loaded
        session = await self.open(scope, given or ClientInput())
        if given is not None and given.channel is not None:
            self.hub.attach(scope.thread_id, given.channel)
        return session

    async def register(self, scope: RunScope, given: ClientInput) -> None:
        """Register client tool groups for a thread between runs (see `Agent.register_client_tools`).

        Raises:
            RegistrationError: The groups were refused; the thread's client state is unchanged.
        """
        await self.open(scope, given)

    async def open(self, scope: RunScope, given: ClientInput) -> ClientSession:
        """Open the thread's client tools with `given` applied.

        Consent given for a client tool whose definition changed is revoked.
        """
        from .definitions import ClientToolGroup
        from .session import ClientSession

        groups = [
            group if isinstance(group, ClientToolGroup) else ClientToolGroup.from_dict(group) for group in given.groups
        ]
        session = await ClientSession.open(
            scope.thread_id,
            hub=self.hub,
            config=self.config,
            store=scope.store,
            reserved=scope.reserved,
            groups=groups,
            expanded=given.expanded,
            reset=given.reset,
            dispatched=scope.dispatched,
            channel=given.channel,
        )
        await _revoke(scope.policy, scope.thread_id, session.redefined)
        return session

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """The result of a client call whose answer was saved before the run stopped (see `close_run`)."""
        return answered_result(entry, self.config.invoke_timeout)


async def _revoke(policy: PermissionPolicy, thread_id: str, names: Collection[str]) -> None:
    for name in names:  # consent was given for what the tool used to be
        await policy.revoke(name, thread_id)


def answered_result(entry: LedgerEntry, invoke_timeout: float = 30.0) -> ToolResult | None:
    """The result of a client call whose client's answer is saved (ANSWERED), else None.

    Without the filters: for a run that is being closed, not going on.
    """
    if entry.answer is None:
        return None
    from ..protocol.results import answer_from_json, tool_result

    message = answer_from_json(entry.answer)
    return tool_result(message, call_id=entry.call.id, tool=entry.call.name, deadline_ms=round(invoke_timeout * 1000))
