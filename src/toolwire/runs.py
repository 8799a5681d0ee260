"""`RunLoop`: the loop of an `Agent`, from a run's first model request to its end.

```
prompt ──► model ──► text only ─────────────────────────────► end: answer
              │
              └──► a batch of tool calls ──► ledger PENDING (write-ahead)
                     ──► calls a toolset answers itself (a container's expansion)
                     ──► Pipeline.invoke_batch (policy, filters, deadlines; model order)
                     ──► one result per call ──► ledger TERMINAL, transcript, the toolsets' after_batch
                     ──► a terminal result, a filter's terminate, a limit, a cancel? ──► end
                     ──► otherwise ask the model again
```

The loop learns about tools only through the run's `ToolSurface` (`toolwire.toolsets`): what
the model sees, the ledger fields of each call, the calls a toolset answers, the callable tools.
`Agent` (`toolwire.loop`) holds the options and the public API, and binds the toolsets.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Final

from anyio import CancelScope

from ._fast import guarded, maker
from .client_tools.channel import ClientHub
from .envelopes import SUCCESS, ResultType, ToolCall, ToolResult, is_terminal_result
from .errors import ProviderError
from .events import EndReason, ModelRequestStarted, RunEvent, RunFinished, RunResult
from .guard import INTERRUPTED
from .history import HistoryStrategy
from .invocation import AskHook
from .ledger import Unfinished, close_run, record_result, run_is_open, unfinished_batch
from .messages import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from .models import Model, ModelEvent, ModelRequest, ModelResponse, TextDelta, ToolChoice
from .pipeline import Pipeline, Record
from .store import CallState, LedgerEntry, RunRecord, Store
from .tools import Cancellation
from .toolsets.binding import Toolsets
from .toolsets.surface import ToolSurface, ledger_entry

if TYPE_CHECKING:
    from .telemetry import Telemetry
    from .telemetry.run import RunTrace

__all__ = ["STORED", "RunLoop", "Stored", "new_id"]

_log = logging.getLogger("toolwire.loop")

_request: Final = maker(ModelRequest, "system", "messages", "tools", "tool_choice", "request_index")
"""`ModelRequest(...)`, faster (one per turn)."""


class Stored:
    """The type of `STORED`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STORED"


STORED: Final = Stored()
"""A run's prompt that the caller stored already: the transcript ends with it (`Agent.answer`)."""


class RunLoop:
    """The loop of an `Agent` (its options are the agent's; see `Agent`)."""

    model: Model
    store: Store
    pipeline: Pipeline
    toolsets: Toolsets
    clients: ClientHub
    instructions: str
    max_requests: int
    max_tool_calls: int
    retry_budget: int
    history: HistoryStrategy | None
    tool_choice: ToolChoice
    max_resume_attempts: int
    telemetry: Telemetry
    call_ids: CallIds

    async def _turns(
        self,
        prompt: str | Stored | None,
        thread_id: str,
        cancellation: Cancellation,
        emit: Callable[[RunEvent], None] | None,
        surface: ToolSurface,
        trace: RunTrace | None = None,
    ) -> RunResult | None:
        """The loop itself; `prompt` None resumes an unfinished run (None if there is none).

        `STORED`: the prompt is the user's message the transcript ends with (stored by the caller).

        `trace`: the run's telemetry, when spans or metrics are recorded (see `toolwire.telemetry`).
        """
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
        stored = None
        if prompt is STORED:
            stored = history.pop() if history else None
            if not isinstance(stored, UserMessage):
                raise RuntimeError(f"thread {thread_id}: its transcript does not end with a user's message")
        unfinished = await unfinished_batch(
            store, thread_id, history, entry_of=partial(_unknown_turn_entry, thread_id, surface)
        )  # (not a lambda: its cells would stay in this frame for the whole run, a parked run's memory)
        if unfinished is not None and stored is not None:
            raise RuntimeError(f"thread {thread_id}: a prompt was stored after calls that have no results")
        if unfinished is not None:
            await self._finish(thread_id, unfinished, history, cancellation, emit, surface, trace)
        seen = self.call_ids.of(thread_id, history)
        if stored is not None:
            history.append(stored)  # (put back: it is stored)
        elif isinstance(prompt, str):
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
            response = await self._ask(request_index, history, cancellation, emit, surface, trace)
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
            results, terminate = await self._run_batch(
                thread_id, request_index, response.text, calls, runnable, history, cancellation, emit, surface, trace
            )
            if cancellation.cancelled:
                reason, detail = "canceled", cancellation.reason or ""
                break
            if (terminal := _first_terminal(results)) is not None:
                output, reason = terminal.message or "", "terminal_result"
                break
            if terminate:
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
        trace: RunTrace | None,
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
                asking=self._asking(thread_id, again),
                trace=trace,
            )
            results = batch.results if answered is None else surface.merge(answered, batch.results)
            ran = dict(zip((call.id for call in calls), results, strict=True))
        results = [unfinished.settled.get(call.id) or ran[call.id] for call in unfinished.calls]
        await self._complete(thread_id, unfinished.calls, results, history, surface)

    def _asking(self, thread_id: str, entries: Sequence[LedgerEntry]) -> AskHook:
        """Moves the ledger entry of a call a person is asked about: AWAITING_APPROVAL, then DISPATCHED.

        A call still AWAITING_APPROVAL when the process stops never started: the next run asks
        again (`ledger.Unfinished.again`). A client call becomes DISPATCHED when it is sent (its
        toolset or the server's outbox marks it), not when it is allowed.
        """
        store = self.store

        async def asking(call: ToolCall, allowed: bool) -> None:  # rare: the batch's entries are looked at here
            if not allowed:
                await store.set_call_state(thread_id, call.id, CallState.AWAITING_APPROVAL)
            elif not any(entry.call.id == call.id and entry.execution == "client" for entry in entries):
                await store.set_call_state(thread_id, call.id, CallState.DISPATCHED)

        return asking

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
        trace: RunTrace | None,
    ) -> ModelResponse | None:
        """Ask the model; None if the caller canceled first."""
        messages: Sequence[Message] = tuple(history)
        if self.history is not None:
            messages = await self.history(messages)
        request = _request(
            system=surface.system_prompt(self.instructions) if surface.instructing else self.instructions,
            messages=messages,
            tools=surface.definitions(),
            tool_choice=self.tool_choice,
            request_index=request_index,
        )
        answer = guarded(self._receive(self.model.stream(request), emit), None, cancellation)
        response = await (answer if trace is None else trace.chat(request, answer))
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
        trace: RunTrace | None,
    ) -> tuple[list[ToolResult], bool]:
        """Run one batch to its results (those that stand, in the calls' order) and whether a filter ends the run."""
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
            asking=self._asking(thread_id, entries),
            trace=trace,
        )
        results = batch.results if answered is None else surface.merge(answered, batch.results)  # (new lists)
        for call in calls[len(runnable) :]:
            reason = f"Not run: the run reached its limit of {self.max_tool_calls} tool calls"
            results.append(ToolResult.canceled(call.id, reason, "system"))
        return await self._complete(thread_id, calls, results, history, surface, done), batch.terminate

    def _over_budget(self, calls: Sequence[ToolCall], results: Sequence[ToolResult], failures: dict[str, int]) -> str:
        """Count this batch's failures per tool; return a tool that is past its budget, or ''."""
        for result in results:  # the usual batch: all succeeded, nothing to count
            if result.type is not SUCCESS:
                break
        else:
            return ""
        for call, result in zip(calls, results, strict=True):
            if not result.success and result.type is not ResultType.CANCELED:
                failures[call.name] = failures.get(call.name, 0) + 1
                if failures[call.name] > self.retry_budget:
                    return call.name
        return ""


def _unknown_turn_entry(thread_id: str, surface: ToolSurface, call: ToolCall) -> LedgerEntry:
    """The ledger entry of a call found without one (request index -1: its turn is unknown)."""
    return ledger_entry(thread_id, -1, call, surface.toolbox())


def _first_terminal(results: Sequence[ToolResult]) -> ToolResult | None:
    for result in results:
        if is_terminal_result(result):
            return result
    return None


class CallIds:
    """The tool call ids of recent threads' transcripts, so that a run need not scan a long transcript whole.

    A transcript only grows: each thread's set is brought up to date from the messages added
    since it was last asked for, when the message it ended with then is still in its place, the
    very same object (the memory store and `SqliteStore`'s decoded transcripts hand out the same
    objects; a thread deleted and written anew under its id, or a store that decodes every load,
    is scanned whole).
    """

    __slots__ = ("_known", "threads")

    def __init__(self, threads: int = 256) -> None:
        self.threads = threads
        """How many threads' sets are kept (the least recently used go first)."""
        self._known: dict[str, tuple[int, Message | None, set[str]]] = {}

    def of(self, thread_id: str, history: Sequence[Message]) -> set[str]:
        """The ids of the calls in `history` (the thread's transcript); the run adds its own calls' ids to it."""
        start, ids = 0, set[str]()
        known = self._known.pop(thread_id, None)
        if known is not None:
            length, last, kept = known
            if length <= len(history) and (length == 0 or history[length - 1] is last):
                start, ids = length, kept
        for index in range(start, len(history)):
            message = history[index]
            if isinstance(message, AssistantMessage) and message.tool_calls:
                ids.update(call.id for call in message.tool_calls)
        self._known[thread_id] = (len(history), history[-1] if history else None, ids)  # (last: most recent)
        if len(self._known) > self.threads:
            del self._known[next(iter(self._known))]
        return ids


def _fresh_ids(calls: Sequence[ToolCall], seen: set[str]) -> tuple[ToolCall, ...]:
    """Give a new id to any call whose id is empty or already used in the thread."""
    if len(calls) == 1 and (only := calls[0].id) and only not in seen:  # the usual reply: one call
        seen.add(only)
        return tuple(calls)
    ids = {call.id for call in calls}
    if "" not in ids and len(ids) == len(calls) and ids.isdisjoint(seen):
        seen.update(ids)
        return tuple(calls)  # the usual case: the model's own tuple, no copy
    fresh: list[ToolCall] = []
    for call in calls:
        if not call.id or call.id in seen:
            call = ToolCall(id=new_id("call_"), name=call.name, arguments=call.arguments)
        seen.add(call.id)
        fresh.append(call)
    return tuple(fresh)


def new_id(prefix: str) -> str:
    """A new id: `prefix` and 128 random bits."""
    return prefix + secrets.token_hex(16)
