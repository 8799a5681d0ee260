"""`Agent`: the automatic tool-calling loop, and what it takes: a model, toolsets, a store, options.

A run binds the agent's toolsets (`toolwire.toolsets`) to its thread, then the loop (`RunLoop`,
see `toolwire.runs`) asks the model, runs the calls it returns and feeds the results back until
it is done. Function tools (a `Toolbox`) and client tools (`ClientToolset`, fed by
`run(client_tool_groups=, ...)`) are two toolsets; the loop has no branch for either.

Every path leaves a transcript that OpenAI and Anthropic accept: an assistant message with calls
is followed by exactly one result per call before anything else, also when the run is canceled,
ends at a limit, or the process died in the middle of a batch (the next run closes such calls
as Canceled by `system`, or runs a toolset's remote calls again).

Beside the loop: `turns` lets the runs of a thread take turns, `ledger` recovers the calls a
stopped process left, `streaming` turns a run's events into `stream()`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from functools import partial
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Self

from .client_tools.channel import ClientChannel, ClientHub, ClientToolsConfig
from .client_tools.toolset import ClientInput, ClientToolset
from .errors import UsageError
from .events import EndReason as EndReason
from .events import ModelRequestStarted as ModelRequestStarted
from .events import RunEvent as RunEvent
from .events import RunFinished as RunFinished
from .events import RunResult as RunResult
from .history import HistoryStrategy as HistoryStrategy
from .history import TrimHistory as TrimHistory
from .ledger import run_is_open
from .models import Model, ToolChoice
from .pipeline import Filter, Pipeline
from .policy import PermissionPolicy
from .runs import STORED, CallIds, RunLoop, Stored, new_id
from .store import Store, memory_store
from .streaming import stream_events
from .telemetry import Telemetry
from .tools import Cancellation, Tool, Toolbox
from .toolsets import Toolset
from .toolsets.binding import Toolsets, split_tools
from .turns import ThreadTurns

if TYPE_CHECKING:  # loaded on the first run that uses client tools (pydantic models, jsonschema-rs)
    from .client_tools.definitions import ClientToolGroup


__all__ = [
    "Agent",
    "EndReason",
    "HistoryStrategy",
    "ModelRequestStarted",
    "RunEvent",
    "RunFinished",
    "RunResult",
    "TrimHistory",
]


class Agent(RunLoop):
    """Drive a model: ask, run the tool calls it returns, feed the results back, until it is done.

    Args:
        model: The model to drive (see `toolwire.models`).
        tools: A `Toolbox`, or toolsets (see `toolwire.toolsets`), tools and functions: the
            tools and functions go in one `Toolbox` (`agent.toolbox`), offered first.
        policy: Decides whether each call may run (the default preset, with approvals kept in
            `store`, when None).
        filters: Run around every allowed call, in order.
        instructions: The system prompt.
        store: Where threads live (in memory when None; `SqliteStore` to survive restarts).
        max_requests: Model requests per run before it ends with reason `limit`.
        max_tool_calls: Tool calls per run; calls past it are Canceled by `system`.
        max_concurrency: Calls of one batch that run at once.
        retry_budget: Failed calls allowed per tool and run, beyond the first; one more ends the
            run with reason `limit`.
        history: Fits the transcript into the model's context before each request (see
            `TrimHistory`); everything is sent when None.
        tool_choice: Passed to the model on every request.
        client_tools: How client tools are offered, timed out and treated when their client
            disconnects (see `ClientToolsConfig`).
        max_resume_attempts: Times a restarted process may begin to resume an unfinished run;
            past it, `resume()` closes the run instead (its open calls end Canceled by `system`),
            so a run whose resume keeps failing (or crashing the process) is not tried forever.
        expose_errors: Show the model and clients the text of unexpected exceptions (for
            development); by default they see the exception's type and an error id, and the
            text goes to the log (see `Pipeline`).
        telemetry: OpenTelemetry spans and metrics of the runs (see `Telemetry`): by default,
            those of the providers the application set globally, and nothing when it set none.
    """

    def __init__(
        self,
        model: Model,
        *,
        tools: Toolbox | Iterable[Toolset | Tool[Any, Any] | Callable[..., Any]] = (),
        policy: PermissionPolicy | None = None,
        filters: Sequence[Filter] = (),
        instructions: str = "",
        store: Store | None = None,
        max_requests: int = 25,
        max_tool_calls: int = 100,
        max_concurrency: int = 8,
        retry_budget: int = 3,
        history: HistoryStrategy | None = None,
        tool_choice: ToolChoice = "auto",
        client_tools: ClientToolsConfig | None = None,
        max_resume_attempts: int = 3,
        expose_errors: bool | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        if max_requests < 1 or max_tool_calls < 0 or retry_budget < 0 or max_resume_attempts < 1:
            raise UsageError(
                "Agent needs max_requests >= 1, max_tool_calls >= 0, retry_budget >= 0 and max_resume_attempts >= 1"
            )
        self.model = model
        self.toolbox, toolsets = split_tools(tools)
        """The function tools (the toolbox given, or the one the tools and functions given went in)."""
        self.store: Store = store if store is not None else memory_store()
        self.policy = policy if policy is not None else PermissionPolicy(store=self.store)
        self.pipeline = Pipeline(
            self.toolbox,
            policy=self.policy,
            filters=filters,
            max_concurrency=max_concurrency,
            expose_errors=expose_errors,
        )
        self.instructions = instructions
        self.max_requests = max_requests
        self.max_tool_calls = max_tool_calls
        self.retry_budget = retry_budget
        self.history = history
        self.tool_choice: ToolChoice = tool_choice
        self.client_tools = client_tools if client_tools is not None else ClientToolsConfig()
        self.max_resume_attempts = max_resume_attempts
        self.clients = ClientHub()
        """The clients attached to threads; a server calls `attach`, `detach` and `deliver` on it."""
        self.client_toolset = ClientToolset(self.clients, self.client_tools)
        """The client tools of each thread (fed by `run(client_tool_groups=, ...)`)."""
        self.toolsets = Toolsets((*toolsets, self.client_toolset), self.toolbox, store=self.store, policy=self.policy)
        """Every toolset the runs bind, in order (an earlier one's tool wins a name)."""
        self._thread_turns = ThreadTurns()
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        self.call_ids = CallIds()
        """Where the runs' spans and metrics go (see `toolwire.telemetry`)."""

    def add_toolsets(self, toolsets: Iterable[Toolset]) -> None:
        """Offer more toolsets, after those the agent was given and before the client tools.

        For toolsets chosen after the agent is made, e.g. the MCP servers of a file
        (`toolwire serve --mcp-servers`, `toolwire.interop.mcp.load_servers`). Call it before
        `async with agent`, which sets them up with the others.

        Raises:
            UsageError: The agent's toolsets are set up already (inside `async with agent`).
        """
        client_tools = self.toolsets.toolsets.index(self.client_toolset)
        self.toolsets = self.toolsets.inserted(tuple(toolsets), at=client_tools)

    async def __aenter__(self) -> Self:
        """Set up the toolsets that hold connections (e.g. to a server of tools)."""
        await self.toolsets.setup()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Tear the toolsets down, in reverse order."""
        await self.toolsets.teardown()

    async def run(
        self,
        prompt: str,
        *,
        thread: str | None = None,
        cancellation: Cancellation | None = None,
        client_tool_groups: Sequence[ClientToolGroup | Mapping[str, Any]] = (),
        expanded_containers: Iterable[str] = (),
        reset_client_state: bool = False,
        client: ClientChannel | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
    ) -> RunResult:
        """Answer `prompt` in `thread` (a new thread when None), running tools as the model asks.

        Runs of different threads proceed concurrently; runs of one thread take turns.

        Args:
            prompt: The user's message.
            thread: The thread to continue; its transcript comes from the store.
            cancellation: Cancel it to end the run: unfinished calls end as Canceled by the user.
            client_tool_groups: Client tool groups to register for the thread (`ClientToolGroup`s
                or the JSON objects a client sends); they stay registered for later runs.
            expanded_containers: Groups to offer expanded from the start.
            reset_client_state: Forget the thread's client tools, expansion and context first.
            client: Where the thread's client tool calls go during this run (see `ClientChannel`);
                a server attaches its connections with `agent.clients.attach` instead.
            on_event: Told each event as it happens, in the run's own task (what `stream()`
                yields, without a queue between): keep it quick and non-blocking.

        Raises:
            ProviderError: The model could not be reached; the transcript stays valid.
            RegistrationError: The client tool groups were refused; nothing was stored.
            ClientDisconnected: A client tool's client was gone under the `FailFast` strategy;
                the transcript stays valid (the call has its Error result).
        """
        inputs = self._client_input(client_tool_groups, expanded_containers, reset_client_state, client)
        cancellation = Cancellation() if cancellation is None else cancellation
        return await self._run(prompt, thread, cancellation, on_event, inputs=inputs)

    async def resume(
        self,
        thread: str,
        *,
        cancellation: Cancellation | None = None,
        client: ClientChannel | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
    ) -> RunResult | None:
        """Finish the run a stopped process left unfinished in `thread`; None if there is none.

        Client calls sent before the stop are asked for again (same request id, not asked of the
        policy again) until their deadlines, unless their answers were saved; client calls never
        sent go through the policy again (a consent prompt that was open is asked anew); other
        unfinished calls end as Canceled by `system`; then the loop goes on from where it was: the
        model is asked with the results. A server calls this after a restart. `on_event` is told
        each event, as `stream()` would yield it.

        Each resume counts as an attempt until the run ends; once `max_resume_attempts` began
        without finishing (the process died each time), the run is closed instead: its open calls
        end Canceled by `system`, and the result's reason is `canceled`.
        """
        cancellation = Cancellation() if cancellation is None else cancellation
        inputs = self._client_input((), (), False, client)
        async with self._thread_turns.turn(thread):
            if not await self.store.thread_exists(thread):
                return None
            return await self._bound(None, thread, cancellation, on_event, inputs)

    async def answer(
        self,
        thread: str,
        *,
        cancellation: Cancellation | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
    ) -> RunResult:
        """Answer the user's message the thread's transcript ends with, which the caller stored itself.

        Like `run()`, without appending the prompt: a server stores a user's message in the
        transaction that records its frame as seen (`WireStateStore.save_wire_state(appended=)`),
        so a message it acknowledged is never lost with the process, nor stored twice.

        Raises:
            RuntimeError: The transcript does not end with a user's message, or calls before it
                have no results.
            ProviderError: As `run()`.
        """
        cancellation = Cancellation() if cancellation is None else cancellation
        inputs = self._client_input((), (), False, None)
        async with self._thread_turns.turn(thread):
            result = await self._bound(STORED, thread, cancellation, on_event, inputs)
            assert result is not None  # only a resume finds nothing to do
            return result

    async def register_client_tools(
        self,
        thread: str,
        groups: Sequence[ClientToolGroup | Mapping[str, Any]],
        *,
        expanded_containers: Iterable[str] = (),
        reset_client_state: bool = False,
    ) -> None:
        """Register client tool groups for a thread between runs (a server does this for its clients).

        Waits for the thread's current run to end, like a run would.

        Raises:
            RegistrationError: The groups were refused; the thread's client state is unchanged.
        """
        given = ClientInput(groups, tuple(expanded_containers), reset_client_state, None)
        async with self._thread_turns.turn(thread):
            await self.store.create_thread(thread)
            if given.used or await self.store.load_client_state(thread) is not None:
                before = [toolset for toolset in self.toolsets.toolsets if isinstance(toolset, Toolbox)]
                await self.client_toolset.register(self.toolsets.scope(thread, given, before), given)

    def stream(
        self,
        prompt: str,
        *,
        thread: str | None = None,
        cancellation: Cancellation | None = None,
        client_tool_groups: Sequence[ClientToolGroup | Mapping[str, Any]] = (),
        expanded_containers: Iterable[str] = (),
        reset_client_state: bool = False,
        client: ClientChannel | None = None,
    ) -> AsyncGenerator[RunEvent]:
        """Like `run()`, yielding events as they happen; the last one is `RunFinished`.

        Closing the stream early cancels the run (its calls end as Canceled), as `cancellation`
        would. To leave before the end, close it in the same task:
        `async with contextlib.aclosing(agent.stream(...)) as events: ...`.
        """
        cancellation = Cancellation() if cancellation is None else cancellation
        inputs = self._client_input(client_tool_groups, expanded_containers, reset_client_state, client)
        return stream_events(partial(self._run, prompt, thread, cancellation, inputs=inputs), cancellation)

    # -- the loop ------------------------------------------------------------------------------

    def _client_input(
        self,
        groups: Sequence[ClientToolGroup | Mapping[str, Any]],
        expanded: Iterable[str],
        reset: bool,
        channel: ClientChannel | None,
    ) -> Mapping[Toolset, object]:
        """A run's input for the toolsets: what it was given about client tools, if anything."""
        expanded = tuple(expanded)
        if not groups and not expanded and not reset and channel is None:
            return _NO_INPUT  # the common run: nothing to build
        return {self.client_toolset: ClientInput(groups, expanded, reset, channel)}

    async def _run(
        self,
        prompt: str,
        thread: str | None,
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None = None,
        *,
        inputs: Mapping[Toolset, object] | None = None,
    ) -> RunResult:
        thread_id = thread if thread is not None else new_id("thread_")
        async with self._thread_turns.turn(thread_id):
            await self.store.create_thread(thread_id)
            result = await self._bound(prompt, thread_id, cancellation, emit, inputs or {})
            assert result is not None  # only a resume finds nothing to do
            return result

    async def _bound(
        self,
        prompt: str | Stored | None,
        thread_id: str,
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        inputs: Mapping[Toolset, object],
    ) -> RunResult | None:
        """`_turns` with the toolsets bound to the run (and told when it ends)."""
        trace = self.telemetry.start_run(thread_id, self.model.name, resume=prompt is None)
        if trace is None:  # nothing records spans or metrics: the run as it is
            surface = await self.toolsets.bind(thread_id, inputs)
            try:
                return await self._turns(prompt, thread_id, cancellation, emit, surface)
            finally:
                if surface.ending:
                    await surface.end_run()
        try:
            surface = await self.toolsets.bind(thread_id, inputs)
            try:
                result = await self._turns(prompt, thread_id, cancellation, emit, surface, trace)
            finally:
                if surface.ending:
                    await surface.end_run()
        except BaseException as exc:
            trace.end(None, exc)
            raise
        trace.end(result)
        return result

    async def unfinished(self, thread: str) -> bool:
        """True when the thread's last run stopped before it ended (the process died): see `resume()`."""
        return run_is_open(await self.store.load_messages(thread), await self.store.load_run(thread))


_NO_INPUT: Mapping[Toolset, object] = MappingProxyType({})
