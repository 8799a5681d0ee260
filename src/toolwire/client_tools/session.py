"""`ClientSession`: a thread's client tools during one run, bound to the loop as a toolset.

It loads the thread's `ClientState` from the store, applies the run's registration, offers the
model the client surface (containers, expanded tools, instructions), answers container calls
itself, turns client tool calls into requests through the `ClientHub`, applies augmentations
after each batch, and saves the state whenever it changed (`BoundToolset`, see `toolwire.toolsets`).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

import anyio

from ..envelopes import ToolCall, ToolResult
from ..errors import ClientDisconnected, EnvelopeError, RegistrationError
from ..messages import ToolDefinition
from ..protocol import ToolUseResult, tool_result
from ..protocol.results import answer_from_json
from ..store import CallState, ClientStateStore, LedgerEntry, ThreadStore
from ..tools import Tool, Toolbox, ToolContext
from ..toolsets import RemoteCall
from ..toolsets.collapsed import collapsed_refusal
from .channel import (
    ClientChannel,
    ClientHub,
    ClientToolsConfig,
    FailFast,
    FallbackMessage,
    RetryWithBackoff,
    new_request_id,
)
from .definitions import (
    Augmentation,
    ClientTool,
    ClientToolGroup,
    ClientToolRequest,
    ClientToolResponse,
    container_name,
)
from .state import ClientState
from .validation import ArgumentValidator, SchemaParameters, validate_groups

__all__ = ["ClientSession", "ClientToolProxy", "SessionStore"]

_log = logging.getLogger("toolwire.client_tools")

_SENT = (CallState.DISPATCHED, CallState.ANSWERED)


class ClientToolProxy(Tool[..., Awaitable[ToolResult]]):
    """A client tool as the pipeline sees it; running it sends a request to the client.

    It is validated against the client's schema, classified (a client cannot declare a mode: only
    the name's pattern can raise it above `external`), permitted and filtered like any tool.
    """

    is_client = True
    runs_on = "client"

    def __init__(
        self, definition: ClientTool, validator: ArgumentValidator, session: ClientSession, timeout: float
    ) -> None:
        self.definition = definition
        """The tool as its client registered it."""
        self._session = session
        super().__init__(
            self._send,
            name=definition.name,
            description=definition.description,
            timeout=timeout,
            requires_permission=definition.requires_permission,
            parameters=SchemaParameters(definition.parameters_schema, definition.description, validator),
        )
        self.takes_context = True  # the call's id correlates the request with the ledger

    def with_context(self, context: ToolContext) -> Callable[..., Awaitable[ToolResult]]:
        """Send the call under its id (the arguments stay the client's, whatever their names)."""
        return functools.partial(self._send, context.call_id)

    async def _send(self, call_id: str, /, **arguments: Any) -> ToolResult:
        return await self._session.invoke(self, call_id, arguments)


class SessionStore(ClientStateStore, ThreadStore, Protocol):
    """Where a `ClientSession` keeps the thread's client tool state and follows its client calls in the ledger."""


class ClientSession:
    """The client tools of one thread for one run (build it with `open`)."""

    def __init__(
        self,
        thread_id: str,
        state: ClientState,
        validators: dict[str, ArgumentValidator],
        *,
        hub: ClientHub,
        config: ClientToolsConfig,
        store: SessionStore,
        reserved: Collection[str] = (),
        dispatched: Callable[[str], Awaitable[None]] | None = None,
        channel: ClientChannel | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.state = state
        self.hub = hub
        self.config = config
        self.store = store
        self.reserved = frozenset(reserved)
        """The names of the other toolsets' tools: client tools cannot shadow them."""
        self._dispatched_hook = dispatched
        self._channel = channel
        self.failed_fast: str | None = None
        """The tool whose call found the client gone under `FailFast`: the run must end."""
        self.request_ids: dict[str, str] = {}
        """Call id → the request id recorded in the ledger for it (write-ahead, before sending)."""
        self._resumed: dict[str, LedgerEntry] = {}
        self._asked: dict[str, str] = {}
        """Call id → the request id asked of the hub, until the call is settled (`after_batch`)."""
        self.redefined: set[str] = set()
        """Client tools whose description, schema or permission changed with this run's registration:
        consent given for the old definition does not carry over (the loop revokes the grants)."""
        self.refusals: list[str] = []
        """Augmentations refused during the run, with the reason (they were logged too)."""
        self._validators = validators
        self._augmentations: dict[str, Augmentation] = {}
        self._toolbox: Toolbox | None = None
        self._definitions: tuple[ToolDefinition, ...] | None = None
        self._dirty = False

    @classmethod
    async def open(
        cls,
        thread_id: str,
        *,
        hub: ClientHub,
        config: ClientToolsConfig,
        store: SessionStore,
        reserved: Collection[str] = (),
        groups: Sequence[ClientToolGroup] = (),
        expanded: Iterable[str] = (),
        reset: bool = False,
        dispatched: Callable[[str], Awaitable[None]] | None = None,
        channel: ClientChannel | None = None,
    ) -> ClientSession:
        """Load the thread's client state and apply the run's registration to it.

        Args:
            thread_id: The thread.
            hub: Where the thread's client is attached.
            config: The agent's client tool options.
            store: Where the thread's client state lives.
            reserved: The names of the other toolsets' tools (a client tool cannot shadow them).
            groups: The groups the run registers.
            expanded: Groups to offer expanded from the start.
            reset: Forget the stored client state first.
            dispatched: Marks a call DISPATCHED in the ledger (see `RunScope.dispatched`).
            channel: The run's own channel: attached to the hub until `end_run`.

        Raises:
            RegistrationError: The registration was refused; the stored state is unchanged.
        """
        expanded = list(expanded)
        saved = None if reset else await store.load_client_state(thread_id)
        state = ClientState(collapse=config.collapse_client_tools)
        validators: dict[str, ArgumentValidator] = {}
        if saved is not None:
            try:
                state = ClientState.from_dict(saved, collapse=config.collapse_client_tools)
                validators = cls._check(state.groups.values(), (), reserved, config)
            except RegistrationError as exc:
                _log.warning("dropped the stored client tools of thread %s: %s", thread_id, exc)
                state, saved = ClientState(collapse=config.collapse_client_tools), None
        changed: set[str] = set()
        if groups or expanded:
            validators.update(cls._check(groups, tuple(state.groups.values()), reserved, config))
            before = {tool.name: tool for group in state.groups.values() for tool in group.tools}
            changed = {
                tool.name
                for group in groups
                for tool in group.tools
                if tool.name in before and before[tool.name] != tool
            }
            names = set(state.groups) | {group.name for group in groups}
            if unknown := [name for name in expanded if name not in names]:
                raise RegistrationError(f"expanded_containers names unknown group(s): {', '.join(unknown)}")
            state.register(groups, expanded=expanded)
        session = cls(
            thread_id,
            state,
            validators,
            hub=hub,
            config=config,
            store=store,
            reserved=reserved,
            dispatched=dispatched,
            channel=channel,
        )
        session.redefined = changed
        if reset or groups or expanded:
            await session.save()
        return session

    @staticmethod
    def _check(
        groups: Iterable[ClientToolGroup],
        existing: Sequence[ClientToolGroup],
        reserved: Collection[str],
        config: ClientToolsConfig,
    ) -> dict[str, ArgumentValidator]:
        return validate_groups(
            list(groups),
            existing=existing,
            server_tools=list(reserved),
            check_schemas=config.validate_schema_on_registration,
        )

    # -- what the model sees (`BoundToolset`) ---------------------------------------------------

    def tools(self) -> Toolbox:
        """The client tools offered now (a new `Toolbox` after each change)."""
        if self._toolbox is None:
            self._toolbox = Toolbox(
                ClientToolProxy(tool, self._validators[tool.name], self, self.config.invoke_timeout)
                for tool in self.state.offered_tools()
            )
        return self._toolbox

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """The tools a model request offers: the client tools, then the containers."""
        if self._definitions is None:
            containers = tuple(container.definition() for container in self.state.offered_containers())
            self._definitions = self.tools().definitions() + containers
        return self._definitions

    def instructions(self) -> list[str]:
        """What the client state adds to the system prompt (the expanded groups' prompts, context)."""
        return self.state.instructions(self.config.client_tools_instructions)

    # -- calls the runtime answers -------------------------------------------------------------

    def answer(self, call: ToolCall) -> ToolResult | None:
        """Answer a call the runtime handles itself, or None for the pipeline.

        A container call expands its group (or activates its skill); a call of a client tool
        whose group is collapsed is refused with a pointer to the container.
        """
        name = call.name
        if name in self.reserved:
            return None
        if (container := self.state.containers().get(name)) is not None:
            self.state.activate(container)
            self._changed()
            return ToolResult.ok(call.id, container.expansion_text(self.state.hidden))
        if name in self.tools() or name in self.state.hidden:
            return None
        if (group := self.state.group_of(name)) is not None:
            return collapsed_refusal(call, f"the client tool group '{group.name}'", container_name(group.name))
        return None

    # -- client calls --------------------------------------------------------------------------

    def remote(self, call: ToolCall) -> RemoteCall | None:
        """The request id and deadline of a client call, for its ledger entry (before it is sent)."""
        proxy = self.tools().get(call.name)
        if proxy is None:
            return None
        request_id = new_request_id()
        self.request_ids[call.id] = request_id
        return RemoteCall(request_id=request_id, deadline=time.time() + proxy.timeout)

    def resume(self, entries: Sequence[LedgerEntry]) -> list[str]:
        """Take the client calls a stopped process left open: they run again through the pipeline.

        A call that was sent (DISPATCHED) is asked for again with the same request id until its
        stored deadline, unless its answer was saved (ANSWERED): that answer is its outcome. A
        call never sent goes out as a new request under the same request id.
        """
        taken: list[str] = []
        for entry in entries:
            if entry.execution != "client":
                continue
            taken.append(entry.call.id)
            if entry.request_id is not None:
                self.request_ids[entry.call.id] = entry.request_id
            if entry.state in _SENT:
                self._resumed[entry.call.id] = entry
        return taken

    async def invoke(self, proxy: ClientToolProxy, call_id: str, arguments: dict[str, Any]) -> ToolResult:
        """Send one call to the client and turn its response (or its absence) into a result."""
        request = ClientToolRequest(
            request_id=self.request_ids.pop(call_id, None) or new_request_id(),
            thread_id=self.thread_id,
            call_id=call_id,
            tool_name=proxy.name,
            arguments=arguments,
            description=proxy.description,
            mode=proxy.mode.value,
        )
        self._asked[call_id] = request.request_id
        if (entry := self._resumed.pop(call_id, None)) is not None:
            return await self._resume(entry, request)
        return await self._exchange(request)

    async def _resume(self, entry: LedgerEntry, request: ClientToolRequest) -> ToolResult:
        """Ask again for a call sent before the process stopped, unless its answer was saved.

        Waits until the call's stored deadline; past it, the result is a Timeout whose effect is
        unknown (the client may have run it).
        """
        if entry.answer is not None:
            return self._result(request, answer_from_json(entry.answer))
        timeout = self.config.invoke_timeout
        remaining = timeout if entry.deadline is None else entry.deadline - time.time()
        with anyio.move_on_after(max(0.0, remaining)):
            return await self._exchange(request, answered=self._saved_answer(entry.call.id))
        return ToolResult.timeout(request.call_id, round(timeout * 1000), True)

    def _saved_answer(self, call_id: str) -> Callable[[], Awaitable[ToolUseResult | None]]:
        async def saved() -> ToolUseResult | None:
            # An answer the client replayed may have been saved since the ledger was read.
            entry = await self.store.get_call(self.thread_id, call_id)
            return None if entry is None or entry.answer is None else answer_from_json(entry.answer)

        return saved

    async def _exchange(
        self,
        request: ClientToolRequest,
        answered: Callable[[], Awaitable[ToolUseResult | None]] | None = None,
    ) -> ToolResult:
        """Send a request through the hub under the disconnection strategy; turn the answer into a result."""
        strategy = self.config.disconnection
        retry = strategy if isinstance(strategy, RetryWithBackoff) else None
        response = await self.hub.request(
            self.thread_id,
            request,
            retry=retry,
            on_sent=self._dispatched(request.call_id),
            answered=answered,
            grace=self.config.reconnect_grace,
        )
        if response is None:
            name = request.tool_name
            if isinstance(strategy, FailFast) and self.failed_fast is None:
                self.failed_fast = name
            fallback: FallbackMessage | FailFast = (
                strategy.fallback if isinstance(strategy, RetryWithBackoff) else strategy
            )
            return ToolResult.failed(request.call_id, fallback.message(name), code="client_disconnected")
        return self._result(request, response)

    def _result(self, request: ClientToolRequest, answer: ClientToolResponse | ToolUseResult) -> ToolResult:
        """The outcome a client's answer reports (`protocol.results.tool_result`); keeps its augmentation."""
        message = answer.to_message() if isinstance(answer, ClientToolResponse) else answer
        if (augmentation := _augmentation_of(message, request.tool_name)) is not None:
            self._augmentations[request.call_id] = augmentation
        deadline_ms = round(self.config.invoke_timeout * 1000)
        return tool_result(message, call_id=request.call_id, tool=request.tool_name, deadline_ms=deadline_ms)

    def _dispatched(self, call_id: str) -> Callable[[], Awaitable[None]]:
        async def record() -> None:
            # A channel that keeps its requests durably (the WebSocket server's outbox) marks the
            # call DISPATCHED in the transaction that saved the request: writing it again would
            # only repeat it, in a transaction of its own.
            if self.hub.records_dispatch(self.thread_id):  # a `DurableChannel`
                return
            if self._dispatched_hook is not None:
                await self._dispatched_hook(call_id)

        return record

    async def after_batch(self, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> None:
        """Apply the augmentations of this batch's responses and save the state if it changed.

        Augmentations apply in the calls' order; expansions by container calls count as changes.
        Each augmentation is validated like a registration and applied whole, or refused whole
        (logged and kept in `refusals`); it cannot touch the other toolsets' tools.

        Raises:
            ClientDisconnected: A call found the client gone under `FailFast`: the run ends (the
                calls have their results).
        """
        for call in calls:
            if (request_id := self._asked.pop(call.id, None)) is not None:
                self.hub.forget(request_id)  # settled: a late answer is refused, and kept nowhere
            if (augmentation := self._augmentations.pop(call.id, None)) is None:
                continue
            try:
                self._apply(augmentation)
            except RegistrationError as exc:
                _log.warning("refused an augmentation from the client of thread %s: %s", self.thread_id, exc)
                self.refusals.append(str(exc))
        if self._dirty:
            await self.save()
        if self.failed_fast is not None:
            # Name the first such call in the model's order (the calls of a batch fail together).
            name = next(
                (
                    call.name
                    for call, result in zip(calls, results, strict=True)
                    if result.error_code == "client_disconnected"
                ),
                self.failed_fast,
            )
            raise ClientDisconnected(
                f"the client of thread {self.thread_id} is gone; '{name}' could not run (FailFast)"
            )

    def _apply(self, augmentation: Augmentation) -> None:
        state, server = self.state, self.reserved
        if touched := [name for name in (*augmentation.hide_tools, *augmentation.show_tools) if name in server]:
            raise RegistrationError(f"an augmentation cannot hide or show the server tool '{touched[0]}'")
        kept = [group for name, group in state.groups.items() if name not in augmentation.remove_tool_groups]
        validators = self._check(augmentation.inject_tool_groups, kept, server, self.config)
        names = {group.name for group in kept} | {group.name for group in augmentation.inject_tool_groups}
        for name in (*augmentation.expand_tool_groups, *augmentation.collapse_tool_groups):
            if name not in names:
                raise RegistrationError(f"an augmentation names the unknown group '{name}'", group=name)
        state.apply(augmentation)
        self._validators.update(validators)
        self._changed()

    async def end_run(self) -> None:
        """The run ended (or stopped): detach its channel, forget its requests still known to the hub."""
        if self._channel is not None:
            self.hub.detach(self.thread_id, self._channel)
        for request_id in self._asked.values():
            self.hub.forget(request_id)
        self._asked.clear()
        self.hub.ended(self.thread_id)

    def _changed(self) -> None:
        self._toolbox = self._definitions = None
        self._dirty = True

    async def save(self) -> None:
        """Write the state to the store (nothing to keep: the thread's entry is removed)."""
        self._dirty = False
        await self.store.save_client_state(self.thread_id, None if self.state.empty else self.state.to_dict())


def _augmentation_of(message: ToolUseResult, tool_name: str) -> Augmentation | None:
    """The augmentation an answer carries; one that does not pass the registration checks is dropped."""
    if message.augmentation is None:
        return None
    try:
        augmentation = Augmentation.from_dict(message.augmentation)
    except (RegistrationError, EnvelopeError) as exc:
        _log.warning("ignored the augmentation of the answer for '%s': %s", tool_name, exc)
        return None
    return None if augmentation.is_empty else augmentation
