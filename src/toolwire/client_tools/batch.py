"""The loop's client-tool steps: what a run was given, opening its `ClientSession`, running its batches.

Every run carries a `ClientInput`; the rest runs only for threads with client tools, so a run
without them never loads `ClientSession`, the definitions or their pydantic models.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ..envelopes import ToolCall, ToolResult
from ..errors import ClientDisconnected
from ..events import RunEvent
from ..pipeline import Pipeline, Record, ToolCallFinished, ToolCallStarted
from ..policy import PermissionPolicy
from ..tools import Cancellation, Toolbox
from .channel import ClientChannel, ClientHub, ClientToolsConfig

if TYPE_CHECKING:  # loaded on the first run that uses client tools (pydantic models, jsonschema-rs)
    from .definitions import ClientToolGroup
    from .session import ClientSession, SessionStore

__all__ = [
    "NO_CLIENT_INPUT",
    "ClientInput",
    "failed_fast_error",
    "open_session",
    "run_client_batch",
]


@dataclass(frozen=True, slots=True)
class ClientInput:
    """What a run was given about client tools."""

    groups: Sequence[ClientToolGroup | Mapping[str, Any]]
    expanded: tuple[str, ...]
    reset: bool
    channel: ClientChannel | None

    @property
    def used(self) -> bool:
        """True when the run was given any of it (its thread then has a `ClientSession`)."""
        return bool(self.groups) or self.reset or self.channel is not None or bool(self.expanded)


NO_CLIENT_INPUT: Final = ClientInput((), (), False, None)


async def open_session(
    thread_id: str,
    clients: ClientInput,
    *,
    hub: ClientHub,
    config: ClientToolsConfig,
    store: SessionStore,
    server: Toolbox,
    policy: PermissionPolicy,
) -> ClientSession:
    """Open the thread's client tools for this run, with the run's registration applied.

    Call it when the run was given client input or the thread has stored client state.
    Consent given for a client tool whose definition changed is revoked.

    Raises:
        RegistrationError: The client tool groups were refused; nothing was stored.
    """
    from .definitions import ClientToolGroup
    from .session import ClientSession

    groups = [
        group if isinstance(group, ClientToolGroup) else ClientToolGroup.from_dict(group) for group in clients.groups
    ]
    session = await ClientSession.open(
        thread_id,
        hub=hub,
        config=config,
        store=store,
        server=server,
        groups=groups,
        expanded=clients.expanded,
        reset=clients.reset,
    )
    for name in session.redefined:  # consent was given for what the tool used to be
        await policy.revoke(name, thread_id)
    return session


async def run_client_batch(
    thread_id: str,
    request_index: int,
    calls: tuple[ToolCall, ...],
    cancellation: Cancellation,
    emit: Callable[[RunEvent], None] | None,
    session: ClientSession,
    pipeline: Pipeline,
    *,
    record: Record | None = None,
    approved: Collection[str] = (),
) -> tuple[list[ToolResult], bool]:
    """Run a batch of a thread with client tools.

    The runtime answers container calls first (in the model's order); the pipeline runs the
    rest over the server's and the client's tools.

    Args:
        thread_id: The run's thread.
        request_index: The model request the calls came from.
        calls: The calls to run, in the model's order.
        cancellation: The run's; unfinished calls end as Canceled when it is canceled.
        emit: Told each call's start and end (see `Agent.stream()`).
        session: The thread's client tools; its hub sends the calls and consent prompts.
        pipeline: The agent's pipeline (over the server's tools).
        record: Keeps each call's result the moment it is decided (see `Pipeline.invoke_batch`).
        approved: Calls the policy allowed before a restart (they are not asked again).

    Returns:
        One result per call, in the calls' order, and whether a filter asked to end the run.
    """
    answered = [session.answer(call.id, call.name) for call in calls]
    for index, (call, result) in enumerate(zip(calls, answered, strict=True)):
        if result is not None and emit is not None:
            emit(ToolCallStarted(call, None, None, request_index, index))
            emit(ToolCallFinished(call, result, 0.0, request_index, index))
    rest = [call for call, result in zip(calls, answered, strict=True) if result is None]
    # The person at the thread's client is asked when the application's policy has no consent
    # handler of its own, or when its handler leaves the decision to them (`request.ask_client()`).
    pipeline = pipeline.with_tools(session.toolbox, client=session.hub.client_consent(thread_id))
    batch = await pipeline.invoke_batch(
        rest,
        thread_id=thread_id,
        cancellation=cancellation,
        request_index=request_index,
        observer=emit,
        record=record,
        approved=approved,
    )
    ran = iter(batch.results)
    return [result if result is not None else next(ran) for result in answered], batch.terminate


def failed_fast_error(
    thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult], tool: str
) -> ClientDisconnected:
    """The error that ends a run whose client was gone under `FailFast` (`tool`'s call found it gone).

    It names the first such call in the model's order (calls of a batch fail together).
    """
    name = next(
        (call.name for call, result in zip(calls, results, strict=True) if result.error_code == "client_disconnected"),
        tool,
    )
    return ClientDisconnected(f"the client of thread {thread_id} is gone; '{name}' could not run (FailFast)")
