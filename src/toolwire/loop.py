"""`Agent`: the automatic tool-calling loop.

```
prompt ──► model ──► text only ─────────────────────────────► end: answer
              │
              └──► a batch of tool calls ──► ledger PENDING (write-ahead)
                     ──► Pipeline.invoke_batch (policy, filters, deadlines; model order)
                     ──► one result per call ──► ledger TERMINAL, transcript
                     ──► a terminal result, a filter's terminate, a limit, a cancel? ──► end
                     ──► otherwise ask the model again
```

Every path leaves a transcript that OpenAI and Anthropic accept: an assistant message with calls
is followed by exactly one result per call before anything else, also when the run is canceled,
ends at a limit, or the process died in the middle of a batch (the next run closes such calls
as Canceled by `system`).

The loop learns about tools only through toolsets (`toolwire.toolsets`): each run binds the
agent's toolsets to its thread, and asks the combined `ToolSurface` what the model sees, how a
call runs and what to record. Function tools (a `Toolbox`) and client tools (`ClientToolset`,
fed by `run(client_tool_groups=, ...)`) are two of them.

Beside the loop: `turns` lets the runs of a thread take turns, `ledger` recovers the calls a
stopped process left.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import partial
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Self

from anyio import CancelScope

from .client_tools.channel import ClientChannel, ClientHub, ClientToolsConfig
from .client_tools.toolset import ClientInput, ClientToolset
from .envelopes import ResultType, ToolCall, ToolResult, is_terminal_result
from .errors import ProviderError, UsageError
from .events import EndReason as EndReason
from .events import ModelRequestStarted as ModelRequestStarted
from .events import RunEvent as RunEvent
from .events import RunFinished as RunFinished
from .events import RunResult as RunResult
from .guard import INTERRUPTED, guarded
from .history import HistoryStrategy as HistoryStrategy
from .history import TrimHistory as TrimHistory
from .ledger import Unfinished, close_run, record_result, run_is_open, unfinished_batch
from .messages import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from .models import Model, ModelEvent, ModelRequest, ModelResponse, TextDelta, ToolChoice
from .pipeline import Filter, Pipeline, Record
from .policy import PermissionPolicy
from .store import CallState, RunRecord, Store
from .store.memory import MemoryStore
from .streaming import stream_events
from .tools import Cancellation, Tool, Toolbox
from .toolsets import Toolset
from .toolsets.binding import Toolsets, split_tools
from .toolsets.surface import ToolSurface, ledger_entry
from .turns import ThreadTurns

if TYPE_CHECKING:  # loaded on the first run that uses client tools (pydantic models, jsonschema-rs)
    from .client_tools.definitions import ClientToolGroup

_log = logging.getLogger("toolwire.loop")

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


class Agent:
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
    ) -> None:
        if max_requests < 1 or max_tool_calls < 0 or retry_budget < 0 or max_resume_attempts < 1:
            raise UsageError(
                "Agent needs max_requests >= 1, max_tool_calls >= 0, retry_budget >= 0 and max_resume_attempts >= 1"
            )
        self.model = model
        self.toolbox, toolsets = split_tools(tools)
        """The function tools (the toolbox given, or the one the tools and functions given went in)."""
        self.store: Store = store if store is not None else MemoryStore()
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
        thread_id = thread if thread is not None else _new_id("thread_")
        async with self._thread_turns.turn(thread_id):
            await self.store.create_thread(thread_id)
            result = await self._bound(prompt, thread_id, cancellation, emit, inputs or {})
            assert result is not None  # only a resume finds nothing to do
            return result

    async def _bound(
        self,
        prompt: str | None,
        thread_id: str,
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        inputs: Mapping[Toolset, object],
    ) -> RunResult | None:
        """`_turns` with the toolsets bound to the run (and told when it ends)."""
        surface = await self.toolsets.bind(thread_id, inputs)
        try:
            return await self._turns(prompt, thread_id, cancellation, emit, surface)
        finally:
            if surface.ending:
                await surface.end_run()

    async def unfinished(self, thread: str) -> bool:
        """True when the thread's last run stopped before it ended (the process died): see `resume()`."""
        return run_is_open(await self.store.load_messages(thread), await self.store.load_run(thread))

    async def _turns(
        self,
        prompt: str | None,
        thread_id: str,
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        surface: ToolSurface,
    ) -> RunResult | None:
        """The loop itself; `prompt` None resumes an unfinished run (None if there is none)."""
        store = self.store
        history = await store.load_messages(thread_id)
        run = await store.load_run(thread_id)
        first_new = len(history)
        if prompt is None:
            if not run_is_open(history, run):
                return None  # the thread's last run ended: nothing to resume
            if run.resume_attempts >= self.max_resume_attempts:
                return await self._give_up(thread_id, history, run, emit)
            run = RunRecord(run.closed_at, run.resume_attempts + 1)  # counted before anything can fail
            await store.save_run(thread_id, run)
        unfinished = await unfinished_batch(
            store, thread_id, history, entry_of=lambda call: ledger_entry(thread_id, -1, call, surface.toolbox())
        )
        if unfinished is not None:
            await self._finish(thread_id, unfinished, history, cancellation, emit, surface)
        seen = {call.id for message in history if isinstance(message, AssistantMessage) for call in message.tool_calls}
        if prompt is not None:
            user = UserMessage(prompt)
            history.append(user)
            await store.append_messages(thread_id, [user])
        requests = input_tokens = output_tokens = calls_used = 0  # summed as ints: a Usage per turn costs
        failures = dict[str, int]()
        reason: EndReason = "limit"
        output = detail = ""
        for request_index in range(self.max_requests):
            if cancellation.cancelled:
                reason, detail = "canceled", cancellation.reason or ""
                break
            if emit is not None:
                emit(ModelRequestStarted(request_index))
            response = await self._ask(request_index, history, cancellation, emit, surface)
            if response is None:
                reason, detail = "canceled", cancellation.reason or ""
                break
            used = response.usage
            requests += used.requests
            input_tokens += used.input_tokens
            output_tokens += used.output_tokens
            calls = _fresh_ids(response.tool_calls, seen)
            if not calls:
                output, reason = response.text, "answer"
                if output:
                    answer = AssistantMessage(output)
                    history.append(answer)
                    await store.append_messages(thread_id, [answer])
                break
            runnable = calls[: max(0, self.max_tool_calls - calls_used)]
            calls_used += len(runnable)
            results = await self._run_batch(
                thread_id, request_index, response.text, calls, runnable, history, cancellation, emit, surface
            )
            if cancellation.cancelled:
                reason, detail = "canceled", cancellation.reason or ""
                break
            if (terminal := _first_terminal(results)) is not None:
                output, reason = terminal.message or "", "terminal_result"
                break
            if results.terminate:
                reason = "terminate"
                break
            if len(runnable) < len(calls):
                detail = f"the run reached its limit of {self.max_tool_calls} tool calls"
                break
            if exhausted := self._over_budget(calls, results, failures):
                detail = f"'{exhausted}' failed {failures[exhausted]} times (retry budget {self.retry_budget})"
                break
        else:
            detail = f"the run reached its limit of {self.max_requests} model requests"
        if reason != "answer" or not output:  # no final answer in the transcript: nothing to resume
            await store.save_run(thread_id, RunRecord(closed_at=len(history)))
        elif run.resume_attempts:
            await store.save_run(thread_id, RunRecord())
        result = RunResult(
            output=output,
            reason=reason,
            detail=detail,
            thread_id=thread_id,
            transcript=history,
            new_messages=history[first_new:],
            usage=Usage(requests, input_tokens, output_tokens),
        )
        if emit is not None:
            emit(RunFinished(result))
        return result

    async def _give_up(
        self, thread_id: str, history: list[Message], run: RunRecord, emit: Callable[[RunEvent], None] | None
    ) -> RunResult:
        """Close a run whose resume began `max_resume_attempts` times without finishing."""
        detail = f"the run could not be resumed ({run.resume_attempts} attempts did not finish); it was closed"
        _log.warning("thread %s: %s", thread_id, detail)
        messages = await close_run(self.store, thread_id, f"Canceled: {detail}", answered=self.toolsets.saved_result)
        history.extend(messages)
        result = RunResult(
            output="",
            reason="canceled",
            detail=detail,
            thread_id=thread_id,
            transcript=history,
            new_messages=list(messages),
            usage=Usage(),
        )
        if emit is not None:
            emit(RunFinished(result))
        return result

    async def _finish(
        self,
        thread_id: str,
        unfinished: Unfinished,
        history: list[Message],
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        surface: ToolSurface,
    ) -> None:
        """Give each call a stopped process left without a result its one result (see `ledger`)."""
        ran: dict[str, ToolResult] = {}
        if again := unfinished.again(surface.resume(unfinished.open)):
            calls = tuple(entry.call for entry in again)
            sent = (CallState.DISPATCHED, CallState.ANSWERED)
            answered = surface.answer(calls, unfinished.request_index, emit) if surface.answering else None
            client = self.clients.client_consent(thread_id)
            batch = await self.pipeline.with_tools(surface.toolbox(), client=client).invoke_batch(
                calls if answered is None else surface.rest(calls, answered),
                thread_id=thread_id,
                cancellation=cancellation,
                request_index=unfinished.request_index,
                observer=emit,
                record=self._recorder(thread_id, calls),
                approved=frozenset(entry.call.id for entry in again if entry.state in sent),
            )
            results = batch.results if answered is None else surface.merge(answered, batch.results)
            ran = dict(zip((call.id for call in calls), results, strict=True))
        results = [unfinished.settled.get(call.id) or ran[call.id] for call in unfinished.calls]
        await self._complete(thread_id, unfinished.calls, results, history, surface)

    def _recorder(
        self, thread_id: str, calls: tuple[ToolCall, ...], done: list[ToolResultMessage] | None = None
    ) -> Record:
        """Writes each call's result to the ledger the moment it is decided (the first result wins).

        With `done`, a batch of one call is completed at once instead (its ledger entry and its
        transcript message in one write; the message is added to `done`).
        """
        store = self.store
        if done is not None and len(calls) == 1:

            async def complete(result: ToolResult) -> ToolResult:
                done.extend(await store.complete_batch(thread_id, calls, [result]))
                return done[0].result

            return complete

        async def record(result: ToolResult) -> ToolResult:
            return await record_result(store, thread_id, result)

        return record

    async def _complete(
        self,
        thread_id: str,
        calls: Sequence[ToolCall],
        results: Sequence[ToolResult],
        history: list[Message],
        surface: ToolSurface,
        done: Sequence[ToolResultMessage] = (),
    ) -> list[ToolResult]:
        """Ledger TERMINAL (the first result written wins) and transcript, in one write; the results that stand.

        `done`: the messages of a batch its one call's record completed already. The toolsets
        are told the batch ended (`after_batch`), and may end the run by raising.
        """
        messages = done or await self.store.complete_batch(thread_id, calls, results)
        history.extend(messages)
        won = [message.result for message in messages]
        if surface.finishing:
            await surface.after_batch(calls, won)
        return won

    async def _ask(
        self,
        request_index: int,
        history: list[Message],
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        surface: ToolSurface,
    ) -> ModelResponse | None:
        """Ask the model; None if the caller canceled first."""
        messages: Sequence[Message] = tuple(history)
        if self.history is not None:
            messages = await self.history(messages)
        request = ModelRequest(
            system=surface.system_prompt(self.instructions) if surface.instructing else self.instructions,
            messages=messages,
            tools=surface.definitions(),
            tool_choice=self.tool_choice,
            request_index=request_index,
        )
        response = await guarded(self._receive(self.model.stream(request), emit), None, cancellation)
        return None if response is INTERRUPTED else response

    async def _receive(
        self, events: AsyncIterator[ModelEvent], emit: Callable[[RunEvent], None] | None
    ) -> ModelResponse:
        """Read the model's stream to its response, passing text deltas on to `emit`."""
        response: ModelResponse | None = None
        drained = False
        try:
            async for event in events:
                if isinstance(event, TextDelta):
                    if emit is not None:
                        emit(event)
                else:
                    response = event
            drained = True
        finally:
            # A stream left early (canceled, failed) must release what it holds, e.g. a connection.
            if not drained and (aclose := getattr(events, "aclose", None)) is not None:
                with CancelScope(shield=True):
                    await aclose()
        if response is None:
            raise ProviderError(self.model.name, "the model's stream ended without a complete response")
        return response

    async def _run_batch(
        self,
        thread_id: str,
        request_index: int,
        text: str,
        calls: tuple[ToolCall, ...],
        runnable: tuple[ToolCall, ...],
        history: list[Message],
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        surface: ToolSurface,
    ) -> _Results:
        assistant = AssistantMessage(text, calls)
        history.append(assistant)
        entries = surface.entries(thread_id, request_index, calls)
        await self.store.record_batch(thread_id, assistant, entries)  # the message and the ledger, write-ahead
        done: list[ToolResultMessage] = []
        # Calls a toolset answers itself (e.g. a container's expansion) come before the pipeline is built.
        answered = surface.answer(runnable, request_index, emit) if surface.answering else None
        pipeline = self.pipeline
        if (client := self.clients.client_consent(thread_id)) is not None or surface.static is not pipeline.toolbox:
            pipeline = pipeline.with_tools(surface.toolbox(), client=client)  # its person may be asked
        batch = await pipeline.invoke_batch(
            runnable if answered is None else surface.rest(runnable, answered),
            thread_id=thread_id,
            cancellation=cancellation,
            request_index=request_index,
            observer=emit,
            record=self._recorder(thread_id, calls, done),  # a decided outcome is written at once
        )
        ran = batch.results if answered is None else surface.merge(answered, batch.results)
        results = _Results(ran, terminate=batch.terminate)
        for call in calls[len(runnable) :]:
            reason = f"Not run: the run reached its limit of {self.max_tool_calls} tool calls"
            results.append(ToolResult.canceled(call.id, reason, "system"))
        results[:] = await self._complete(thread_id, calls, results, history, surface, done)
        return results

    def _over_budget(self, calls: Sequence[ToolCall], results: Sequence[ToolResult], failures: dict[str, int]) -> str:
        """Count this batch's failures per tool; return a tool that is past its budget, or ''."""
        for call, result in zip(calls, results, strict=True):
            if not result.success and result.type is not ResultType.CANCELED:
                failures[call.name] = failures.get(call.name, 0) + 1
                if failures[call.name] > self.retry_budget:
                    return call.name
        return ""


_NO_INPUT: Mapping[Toolset, object] = MappingProxyType({})


class _Results(list[ToolResult]):
    """The results of a batch, in the calls' order, and whether a filter asked to end the run."""

    __slots__ = ("terminate",)

    def __init__(self, results: Iterable[ToolResult], *, terminate: bool) -> None:
        super().__init__(results)
        self.terminate = terminate


def _first_terminal(results: Sequence[ToolResult]) -> ToolResult | None:
    for result in results:
        if is_terminal_result(result):
            return result
    return None


def _fresh_ids(calls: Sequence[ToolCall], seen: set[str]) -> tuple[ToolCall, ...]:
    """Give a new id to any call whose id is empty or already used in the thread."""
    ids = {call.id for call in calls}
    if "" not in ids and len(ids) == len(calls) and ids.isdisjoint(seen):
        seen.update(ids)
        return tuple(calls)  # the usual case: the model's own tuple, no copy
    fresh: list[ToolCall] = []
    for call in calls:
        if not call.id or call.id in seen:
            call = ToolCall(id=_new_id("call_"), name=call.name, arguments=call.arguments)
        seen.add(call.id)
        fresh.append(call)
    return tuple(fresh)


def _new_id(prefix: str) -> str:
    return prefix + secrets.token_hex(16)
