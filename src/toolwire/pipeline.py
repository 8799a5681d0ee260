"""`invoke()`: one `ToolCall` in, exactly one `ToolResult` out, on every path.

```
resolve the tool ── unknown ──► Error unknown_tool
validate arguments ── invalid ──► Error invalid_parameters
policy: Allow | Deny | Ask ── denied ──► Denied
filters (in the order given) ──► run the tool under its deadline
    ToolError ──► Error with its code     exception ──► Error execution_error
    deadline ──► Timeout                  ctx.cancel ──► Canceled by policy
caller's `Cancellation` at any point ──► Canceled by user
the result a tool returned or a filter set ──► bound to this call, standard JSON, within the size limit
```

Failures the model should see are results, never exceptions: `invoke()` raises only when the
task running it is itself cancelled from outside.

An unexpected exception (in a tool, a filter or the permission check) may carry secrets in its
text ("password=... exploded"), and what the model sees also goes to every client. So the model
and the clients see its type and a short error id (`RuntimeError (error id e_3f9a2c1b)`), and the
full text goes to the log under that id; a `ToolError`'s message, written for the model, passes as
it is. `expose_errors=True` (or `TOOLWIRE_EXPOSE_ERRORS=1`) shows the full text, for development.
"""

from __future__ import annotations

import copy
import functools
import logging
import math
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Collection, Coroutine, Sequence
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from anyio import CapacityLimiter, create_task_group, from_thread
from pydantic_core import PydanticSerializationError, to_json, to_jsonable_python

from ._fast import guarded, maker, together
from ._workers import Gather, run_sync
from .envelopes import ToolCall, ToolResult, new_success
from .errors import CallCanceled, InvalidArguments, ToolError
from .guard import INTERRUPTED, asyncio_loop
from .invocation import (
    AskHook,
    CallEvent,
    ConsentRequested,
    Filter,
    InvocationContext,
    Next,
    Observer,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
    compose,
)
from .modes import ToolMode
from .policy import ConsentAnswer, ConsentHandler, ConsentRequest, Decision, Permission, PermissionPolicy
from .tools import Cancellation, Tool, Toolbox, ToolContext

if TYPE_CHECKING:
    from .telemetry.run import RunTrace

__all__ = [
    "Batch",
    "CallEvent",
    "ConsentRequested",
    "Filter",
    "InvocationContext",
    "Next",
    "Observer",
    "Pipeline",
    "Record",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolProgress",
    "compose",
    "invoke",
    "invoke_batch",
]

_log = logging.getLogger("toolwire.pipeline")

Record = Callable[[ToolResult], Awaitable[ToolResult]]
"""Keeps a call's result the moment it is decided; returns the result that stands."""
_APPROVED: Final = Permission(Decision.ALLOW, "allowed before the process stopped", "ledger")
EXPOSE_ERRORS: Final = "TOOLWIRE_EXPOSE_ERRORS"
"""The environment variable that, set to `1`, shows the text of unexpected exceptions (`Pipeline`)."""

MAX_RESULT_BYTES: Final = 256 * 1024
MAX_ARGUMENT_BYTES: Final = 16 * 1024
_finished: Final = maker(ToolCallFinished, "call", "result", "duration_ms", "request_index", "tool_index")
"""`ToolCallFinished(...)`, faster (an event per call)."""
_ALLOW: Final = Decision.ALLOW
"""(A module constant is read ten times faster than an enum member: once per call.)"""
_EXCLUSIVE: Final = frozenset((ToolMode.DESTRUCTIVE, ToolMode.LOCAL))
_INT_BOUND: Final = 1 << 64


class Batch:
    """The outcome of a batch of calls: results in the model's order, and the contexts."""

    __slots__ = ("contexts",)

    def __init__(self, contexts: list[InvocationContext]) -> None:
        self.contexts = contexts

    @property
    def results(self) -> list[ToolResult]:
        """One result per call, in the order the calls were given."""
        return [ctx.result for ctx in self.contexts if ctx.result is not None]

    @property
    def terminate(self) -> bool:
        """True when a filter asked to end the run after this batch."""
        for ctx in self.contexts:  # not any(<generator>): this runs once per turn
            if ctx.terminate:
                return True
        return False


class Pipeline:
    """A toolbox with its policy, filters and limits: build once, invoke many calls.

    Args:
        toolbox: The tools that can be called.
        policy: Decides whether each call may run; the default preset when None (local tools
            then need a consent handler, so they are denied).
        filters: Run in the given order around every allowed call.
        max_result_bytes: A larger serialized payload becomes Error `result_too_large`.
        max_argument_bytes: Larger arguments are refused as `invalid_parameters`.
        max_concurrency: How many calls of one batch run at once.
        expose_errors: Show the model (and so the clients) the text of unexpected exceptions,
            for development. By default they see the exception's type and a short error id, and
            the full text is logged under that id. None reads `TOOLWIRE_EXPOSE_ERRORS` (`1`,
            `true` or `yes` to expose).
    """

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        policy: PermissionPolicy | None = None,
        filters: Sequence[Filter] = (),
        max_result_bytes: int = MAX_RESULT_BYTES,
        max_argument_bytes: int = MAX_ARGUMENT_BYTES,
        max_concurrency: int = 8,
        expose_errors: bool | None = None,
    ) -> None:
        self.toolbox = toolbox
        self.policy = policy if policy is not None else PermissionPolicy()
        self.filters = tuple(filters)
        self.max_result_bytes = max_result_bytes
        self.max_argument_bytes = max_argument_bytes
        self.max_concurrency = max_concurrency
        if expose_errors is None:
            expose_errors = os.environ.get(EXPOSE_ERRORS, "").strip().lower() in ("1", "true", "yes")
        self.expose_errors = expose_errors
        self.consent: ConsentHandler | None = None
        """Asked for consent instead of the policy's own handler (see `with_tools`)."""
        self.client_consent: ConsentHandler | None = None
        """Asks the person at the thread's client (see `with_tools`)."""
        self._chain = compose(self.filters, self._execute)
        self._approved: Collection[str] = ()

    def with_tools(
        self, toolbox: Toolbox, *, consent: ConsentHandler | None = None, client: ConsentHandler | None = None
    ) -> Pipeline:
        """This pipeline over another toolbox (e.g. a thread's client tools beside the server's).

        The copy shares the policy, filters and limits. `consent`, when given, is asked instead of
        the policy's consent handler; `client` asks the person at the thread's client, who answers
        when the policy has no handler, or when its handler leaves it to them (see
        `PermissionPolicy.check`).
        """
        clone = copy.copy(self)
        clone.toolbox = toolbox
        if consent is not None:
            clone.consent = consent
        if client is not None:
            clone.client_consent = client
        if consent is not None or client is not None:  # a running tool's questions go to them (`_ask`)
            clone._chain = compose(clone.filters, clone._execute)
        return clone

    async def invoke(
        self,
        call: ToolCall,
        *,
        thread_id: str | None = None,
        cancellation: Cancellation | None = None,
    ) -> ToolResult:
        """Run one call through the whole path and return its one result."""
        ctx = InvocationContext(
            call, thread_id=thread_id, cancellation=Cancellation() if cancellation is None else cancellation
        )
        await self._run(ctx)  # `run()` without an observer: nothing else to settle, two frames less
        assert ctx.result is not None
        return ctx.result

    async def run(
        self,
        call: ToolCall,
        *,
        thread_id: str | None = None,
        cancellation: Cancellation | None = None,
        request_index: int = 0,
        tool_index: int = 0,
        tool_count: int = 1,
        observer: Observer | None = None,
    ) -> InvocationContext:
        """Run one call and return its finished context (`result`, `terminate`, `properties`).

        Args:
            call: The model's call.
            thread_id: The conversation, for approvals, caches and the tool's context.
            cancellation: Cancel it to end the call as Canceled by the user.
            request_index: Index of the model request whose reply held the call.
            tool_index: Position of the call in its batch.
            tool_count: Number of calls in the batch.
            observer: Told when the call starts, asks for consent and finishes.
        """
        ctx = InvocationContext(
            call,
            thread_id=thread_id,
            cancellation=Cancellation() if cancellation is None else cancellation,
            request_index=request_index,
            tool_index=tool_index,
            tool_count=tool_count,
            observer=observer,
        )
        await self._settle(ctx)
        return ctx

    async def _settle(self, ctx: InvocationContext, record: Record | None = None) -> None:
        """Run one call to its result, have it recorded, and tell the observer it finished."""
        await self._run(ctx)
        if record is not None:
            assert ctx.result is not None
            ctx.result = await record(ctx.result)
        if (observer := ctx.observer) is not None:
            ctx.announce()
            assert ctx.result is not None
            duration_ms = (time.perf_counter() - ctx.started_at) * 1000
            observer(_finished(ctx.tool_call, ctx.result, duration_ms, ctx.request_index, ctx.tool_index))

    async def _run(self, ctx: InvocationContext) -> None:
        call, cancellation = ctx.tool_call, ctx.cancellation
        if cancellation.cancelled:
            ctx.result = _canceled(call, cancellation)
            return
        tool = self.toolbox.get(call.name)
        if tool is None:
            ctx.result = self._unknown_tool(call)
            return
        ctx.tool, ctx.mode = tool, tool.mode
        try:
            ctx.arguments = self._validate(tool, call)
        except InvalidArguments as exc:
            ctx.result = ToolResult.failed(call.id, str(exc), code="invalid_parameters")
            return
        permission = self.policy.decide(tool)
        if permission.decision is _ALLOW:  # the common case, without a coroutine
            ctx.permission = permission
        elif call.id in self._approved:  # allowed (and sent) before the process stopped: not asked again
            ctx.permission = _APPROVED
        elif not await self._permit(ctx, tool, call, permission):
            return
        if ctx.observer is not None:
            ctx.announce()
        try:
            await self._chain(ctx)
        except Exception as exc:
            shown = self._unexpected(exc, "a filter failed on call %s of tool %s", call.id, tool.name)
            if ctx.result is None:
                message = f"A filter failed while running '{tool.name}': {shown}"
                ctx.result = ToolResult.failed(call.id, message, error_type=type(exc).__name__)
        result = ctx.result
        if result is None:
            ctx.result = (
                ToolResult.canceled(call.id, "A filter canceled the call", "policy") if ctx.cancel else _no_result(ctx)
            )
        elif result is not ctx._checked:  # pyright: ignore[reportPrivateUsage]
            # A filter set it: a cached result of another call, or one built for none (seed 003).
            ctx.result = self._answer(call, tool, result)

    async def _permit(
        self, ctx: InvocationContext, tool: Tool[..., Any], call: ToolCall, permission: Permission
    ) -> bool:
        """Ask the policy (the decision was not Allow); on a denial or a cancel, set the result too.

        For an Ask, the context's `asking` hook hears of the wait and of the approval (the ledger's
        AWAITING_APPROVAL, then DISPATCHED: a restart asks again only a call that never started).
        """
        ask = permission.decision is Decision.ASK
        hook = ctx._asking if ask else None  # pyright: ignore[reportPrivateUsage]
        if hook is not None:
            await hook(call, False)
        on_ask = ctx.observer and _asker(ctx.observer)
        trace = ctx._trace  # pyright: ignore[reportPrivateUsage]
        waiting = None if trace is None or not ask else trace.consent(ctx)
        if waiting is not None:
            on_ask = waiting.asker(on_ask)
        policy = self.policy
        try:
            if not ask:  # a Deny: nothing to wait for
                ctx.permission = await policy.check(call, tool, ctx.thread_id)
            else:  # `policy.check`'s steps, with the wait for a person in this frame (a parked run's memory)
                client = self.client_consent
                handler = self.consent or policy.consent or client
                request = await policy._question(call, tool, ctx.thread_id, permission, handler, client)  # pyright: ignore[reportPrivateUsage]
                if isinstance(request, Permission):
                    ctx.permission = request
                else:
                    assert handler is not None  # (a question has someone to answer it)
                    if on_ask is not None:
                        on_ask(request)
                    outcome, failure, cancellation = None, None, ctx.cancellation
                    try:  # the caller's cancellation ends the wait
                        outcome = await policy._consenting(handler, request, cancellation)  # pyright: ignore[reportPrivateUsage]
                    except Exception as exc:
                        failure = exc
                    answer = policy._consent_answer(outcome, failure, request, cancellation)  # pyright: ignore[reportPrivateUsage]
                    ctx.permission = await policy._answered(request, permission, tool, answer)  # pyright: ignore[reportPrivateUsage]
        except CallCanceled:
            ctx.permission = None
        except Exception as exc:  # a failing policy or approval store must not let the call through
            shown = self._unexpected(exc, "the permission check failed on call %s of tool %s", call.id, tool.name)
            ctx.permission = Permission(Decision.DENY, f"the permission check failed ({shown})", "error")
        finally:
            if waiting is not None:
                waiting.end(ctx.permission)
        if ctx.permission is None:
            ctx.result = _canceled(call, ctx.cancellation)
            return False
        if not ctx.permission.allowed:
            ctx.result = ToolResult.denied(call.id, tool.name, ctx.permission.reason)
            return False
        if (edited := ctx.permission.arguments) is not None:  # approved with the person's arguments
            call = replace(call, arguments=dict(edited))
            try:
                ctx.arguments = self._validate(tool, call)
            except InvalidArguments as exc:
                message = f"The arguments the user approved '{tool.name}' with are invalid: {exc}"
                ctx.result = ToolResult.failed(call.id, message, code="invalid_parameters")
                return False
            ctx.tool_call = call
        if hook is not None:
            await hook(call, True)
        return True

    async def invoke_batch(
        self,
        calls: Sequence[ToolCall],
        *,
        thread_id: str | None = None,
        cancellation: Cancellation | None = None,
        request_index: int = 0,
        observer: Observer | None = None,
        record: Record | None = None,
        approved: Collection[str] = (),
        asking: AskHook | None = None,
        trace: RunTrace | None = None,
    ) -> Batch:
        """Run the calls of one model reply and return their results in the given order.

        Calls run concurrently (up to `max_concurrency`), except destructive and local calls,
        which run alone and in order.

        Args:
            calls: The calls, in the model's order.
            thread_id: The conversation, for approvals, caches and the tools' context.
            cancellation: Cancel it to end the unfinished calls as Canceled by the user.
            request_index: Index of the model request whose reply held the calls.
            observer: Told when each call starts, asks for consent and finishes.
            record: Given each call's result the moment it is decided, before the observer hears
                of it and while other calls of the batch may still run; returns the result that
                stands (e.g. the one a ledger already held). The loop writes it to the ledger.
            approved: Ids of calls the policy allowed before (a restart resuming them): they
                are not asked again.
            asking: Told when a call waits for a person's consent and when they allowed it
                (the loop moves its ledger entry: AWAITING_APPROVAL, then DISPATCHED).
            trace: The run's telemetry (`Telemetry.start_run`): each call gets its span and
                metrics; None when nothing is recorded.
        """
        cancellation = Cancellation() if cancellation is None else cancellation
        pipeline = self
        if approved:  # a restart resuming calls: the batch runs on a copy that knows them
            pipeline = copy.copy(self)
            pipeline._approved = approved
        if len(calls) != 1:
            return await pipeline._several(
                calls, thread_id, cancellation, request_index, observer, record, asking, trace
            )
        # The common reply, one call: no task, no segments (and a small frame, kept while a call waits).
        ctx = InvocationContext(
            calls[0],
            thread_id=thread_id,
            cancellation=cancellation,
            request_index=request_index,
            observer=observer,
            asking=asking,
        )
        if trace is not None:
            ctx._trace = trace  # pyright: ignore[reportPrivateUsage]
            await pipeline._traced(ctx, record)
        else:  # one frame less without events or a record
            await (pipeline._run(ctx) if observer is None and record is None else pipeline._settle(ctx, record))
        return Batch([ctx])

    async def _several(
        self,
        calls: Sequence[ToolCall],
        thread_id: str | None,
        cancellation: Cancellation,
        request_index: int,
        observer: Observer | None,
        record: Record | None,
        asking: AskHook | None,
        trace: RunTrace | None,
    ) -> Batch:
        """`invoke_batch` of any number of calls but one: runs of calls that may go together, in order."""
        count = len(calls)
        contexts: list[InvocationContext] = []
        for index, call in enumerate(calls):
            ctx = InvocationContext(
                call,
                thread_id=thread_id,
                cancellation=cancellation,
                request_index=request_index,
                tool_index=index,
                tool_count=count,
                observer=observer,
                asking=asking,
            )
            if trace is not None:
                ctx._trace = trace  # pyright: ignore[reportPrivateUsage]
            contexts.append(ctx)
        settle = self._settle if trace is None else self._traced
        tools = [self.toolbox.get(call.name) for call in calls]
        exclusive = [tool is not None and tool.mode in _EXCLUSIVE for tool in tools]
        start = 0
        while start < count:
            end = start + 1
            if not exclusive[start]:
                while end < count and not exclusive[end]:
                    end += 1
            if end - start == 1:
                await settle(contexts[start], record)  # one call: no task, no limiter
            else:
                await self._together(contexts[start:end], tools[start:end], record, settle)
            start = end
        return Batch(contexts)

    def _traced(self, ctx: InvocationContext, record: Record | None) -> Coroutine[Any, Any, None]:
        """`_settle` under the call's span (the batch's calls have their run's `trace`)."""
        trace = ctx._trace  # pyright: ignore[reportPrivateUsage]
        assert trace is not None
        return trace.tool(ctx, self._settle(ctx, record))

    async def _together(
        self,
        contexts: list[InvocationContext],
        tools: list[Tool[..., Any] | None],
        record: Record | None,
        settle: Callable[[InvocationContext, Record | None], Coroutine[Any, Any, None]],
    ) -> None:
        """Run calls concurrently (up to `max_concurrency` at once).

        A call that finishes without waiting (most do) needs no task of its own (`_fast.together`).
        `_settle` never raises for a call's failure, so only a cancellation of the whole batch
        from outside ends the group early.
        """
        if len(contexts) > self.max_concurrency:
            limiter = CapacityLimiter(self.max_concurrency)  # acquiring one yields: only when needed

            async def limited(ctx: InvocationContext) -> None:
                async with limiter:
                    await settle(ctx, record)

            async with create_task_group() as group:
                for ctx in contexts:
                    group.start_soon(limited, ctx)
            return
        gather = self._gather(contexts, tools)
        if gather is None:
            await together(settle, contexts, record)
            return
        try:
            # Closed once every call had its first step (`call_soon` runs after the tasks' first steps).
            await together(settle, contexts, record, gather.close_soon)
        finally:
            gather.close()  # the calls gathered before a cancellation, if any, are not left waiting

    @staticmethod
    def _gather(contexts: list[InvocationContext], tools: list[Tool[..., Any] | None]) -> Gather | None:
        """A `Gather` for the calls of a batch when two or more run in worker threads (on asyncio), else None.

        `tools`: the calls' tools (None: unknown). Their threads' work then starts as one job
        (`toolwire._workers`): one hop for the batch.
        """
        count = 0
        for tool in tools:
            if tool is not None and not tool.is_async and not tool.inline:
                count += 1
        if count < 2 or (loop := asyncio_loop()) is None:
            return None
        gather = Gather(loop)
        for ctx in contexts:
            ctx._gather = gather  # pyright: ignore[reportPrivateUsage]
        return gather

    def _unexpected(self, exc: Exception, what: str, *args: object) -> str:
        """Log an unexpected exception in full under a new error id; return what others may see of it.

        Its text may hold secrets, and what the model sees reaches every client: unless
        `expose_errors`, that is the exception's type and the error id, never its text.
        """
        error_id = "e_" + secrets.token_hex(4)
        _log.error(f"{what} (error id %s)", *args, error_id, exc_info=exc)
        if self.expose_errors:
            return f"{type(exc).__name__}: {exc}"
        return f"{type(exc).__name__} (error id {error_id})"

    def _validate(self, tool: Tool[..., Any], call: ToolCall) -> dict[str, Any]:
        if self.max_argument_bytes and len(to_json(call.arguments)) > self.max_argument_bytes:
            raise InvalidArguments(tool.name, [f"the arguments are larger than {self.max_argument_bytes} bytes"])
        return tool.validate(call.arguments)

    def _unknown_tool(self, call: ToolCall) -> ToolResult:
        names = self.toolbox.suggest(call.name)
        hint = f" Available tools include: {', '.join(names)}." if names else " No tools are available."
        return ToolResult.failed(call.id, f"Unknown tool '{call.name}'.{hint}", code="unknown_tool")

    async def _execute(self, ctx: InvocationContext) -> None:
        """The end of the chain: run the tool under its deadline and set `ctx.result`."""
        call, tool, cancellation = ctx.tool_call, ctx.tool, ctx.cancellation
        assert tool is not None
        if ctx.cancel:
            ctx.result = ToolResult.canceled(call.id, "A filter canceled the call", "policy")
            return
        if cancellation.cancelled:
            ctx.result = _canceled(call, cancellation)
            return
        kwargs = ctx.arguments
        tool_context = None
        function = tool.function
        if tool.takes_context:
            in_loop = tool.is_async or tool.inline
            tool_context = ToolContext(
                call.id,
                tool.name,
                ctx.thread_id,
                cancellation,
                progress=None if ctx.observer is None else partial(_report if in_loop else _report_from_thread, ctx),
                ask=partial(self._ask, ctx),
            )
            function = tool.with_context(tool_context)
        try:
            # The call ends at its deadline or when the caller cancels (nothing to arm if it never waits).
            if tool.is_async:
                value = await guarded(function(**kwargs), tool.timeout, cancellation)
            elif tool.inline:
                value = function(**kwargs)
            else:  # in a worker thread, with the batch's other sync calls when they start together
                gather = ctx._gather  # pyright: ignore[reportPrivateUsage]
                value = await run_sync(partial(function, **kwargs), tool.timeout, cancellation, gather)
        except ToolError as exc:
            ctx.result = ToolResult.failed(
                call.id,
                exc.message,
                code=exc.code,
                error_type=exc.error_type,
                needs_followup=exc.needs_followup,
                terminal=exc.terminal,
                next_action="retry" if exc.retryable else None,
                data=exc.data,
            )
            return
        except Exception as exc:
            shown = self._unexpected(exc, "tool %s raised an exception on call %s", tool.name, call.id)
            ctx.result = ToolResult.failed(call.id, shown, error_type=type(exc).__name__)
            return
        if value is INTERRUPTED:
            if tool_context is not None:
                tool_context.stop()
            if cancellation.cancelled:
                ctx.result = _canceled(call, cancellation)
            else:
                effect_unknown = not tool.is_async
                ctx.result = ToolResult.timeout(call.id, round(tool.timeout * 1000), effect_unknown)
            return
        ctx.result = ctx._checked = self._to_result(call, tool, value)  # pyright: ignore[reportPrivateUsage]

    async def _ask(self, ctx: InvocationContext, question: str) -> ConsentAnswer:
        """A running call's question to whoever answers its consent (`ToolContext.ask`)."""
        tool = ctx.tool
        assert tool is not None
        request = ConsentRequest(
            ctx.tool_call,
            tool.name,
            tool.mode,
            question,
            ctx.thread_id,
            tool.description,
            allow_always=False,
            client=self.client_consent,
            running=True,
        )
        return await self.policy.ask(
            request,
            on_ask=ctx.observer and _asker(ctx.observer),
            consent=self.consent,
            client=self.client_consent,
            cancellation=ctx.cancellation,
        )

    def _to_result(self, call: ToolCall, tool: Tool[..., Any], value: Any) -> ToolResult:
        if _small_json(value, self.max_result_bytes):  # the common value: its own JSON form, within the limit
            return new_success(call.id, value)
        if isinstance(value, ToolResult):
            return self._answer(call, tool, value)
        try:
            # Also dumps pydantic models, dataclasses, datetimes; JSON has no NaN or Infinity.
            data = to_jsonable_python(value, inf_nan_mode="null")
        except PydanticSerializationError as exc:
            return ToolResult.failed(
                call.id,
                f"'{tool.name}' returned a value that is not JSON ({type(value).__name__}): {exc}",
                error_type=type(value).__name__,
            )
        return self._answer(call, tool, ToolResult(call_id=call.id, data=data))

    def _answer(self, call: ToolCall, tool: Tool[..., Any], result: ToolResult) -> ToolResult:
        """Make a result the answer of `call`: bound to it, its data standard JSON, within the size limit.

        A result a tool returned or a filter set answers the call it was given for, whatever id it
        carries (a cached result keeps the id of the call that filled the cache). A non-finite
        number (NaN, Infinity) in its data becomes null.
        """
        result = result.with_call_id(call.id)
        data = result.data
        if _small_json(data, self.max_result_bytes):
            return result
        try:
            encoded = to_json(data)
        except PydanticSerializationError as exc:
            return ToolResult.failed(call.id, f"The result of '{tool.name}' is not JSON: {exc}")
        if b"NaN" in encoded or b"Infinity" in encoded:  # perhaps only inside a string: then nothing changes
            result = replace(result, data=to_jsonable_python(data, inf_nan_mode="null"))
            encoded = to_json(result.data)
        if self.max_result_bytes:
            size = len(encoded) if result.success else len(to_json(result.payload()))
            if size > self.max_result_bytes:
                return ToolResult.failed(
                    call.id,
                    f"The result of '{tool.name}' is larger than {self.max_result_bytes} bytes; "
                    "ask for less data (narrower filters, fewer items, a page of results).",
                    code="result_too_large",
                )
        return result


def _small_json(value: object, limit: int) -> bool:
    """True for a value that is its own JSON form and surely within `limit` bytes (0: no limit)."""
    if type(value) is str:
        return not limit or len(value) * 6 + 2 <= limit  # at most 6 bytes per character (`\\uXXXX`)
    if type(value) is int:
        return -_INT_BOUND < value < _INT_BOUND
    if type(value) is float:
        return math.isfinite(value)
    return value is None or type(value) is bool


def _report(ctx: InvocationContext, progress: float, total: float | None, message: str | None) -> None:
    assert ctx.observer is not None
    ctx.observer(ToolProgress(ctx.tool_call, progress, total, message))


def _report_from_thread(ctx: InvocationContext, progress: float, total: float | None, message: str | None) -> None:
    """A report from a tool running in a worker thread, told in the event loop's thread (observers expect it)."""
    try:
        from_thread.run_sync(_report, ctx, progress, total, message)
    except RuntimeError:  # a thread of the tool's own, or the run has ended: no one to tell
        pass


def _asker(observer: Observer) -> Callable[[ConsentRequest], None]:
    return lambda request: observer(ConsentRequested(request))


@functools.cache
def _default_policy() -> PermissionPolicy:
    # Shared by `invoke()` calls without a policy: it has no consent handler, so it never stores
    # an approval or a denial that one caller could see from another.
    return PermissionPolicy()


def _canceled(call: ToolCall, cancellation: Cancellation) -> ToolResult:
    return ToolResult.canceled(call.id, cancellation.reason or "Canceled", cancellation.by)


def _no_result(ctx: InvocationContext) -> ToolResult:
    _log.error("no filter produced a result for call %s", ctx.tool_call.id)
    return ToolResult.failed(
        ctx.tool_call.id,
        "The call produced no result: a filter neither called call_next nor set ctx.result.",
    )


async def invoke(
    call: ToolCall,
    toolbox: Toolbox,
    *,
    policy: PermissionPolicy | None = None,
    filters: Sequence[Filter] = (),
    thread_id: str | None = None,
    cancellation: Cancellation | None = None,
    **limits: Any,
) -> ToolResult:
    """Run one call through the whole path (validation, mode, policy, filters, deadline).

    Never raises for a failure of the call: every outcome is a `ToolResult`. To run many calls
    with the same toolbox, policy and filters, build a `Pipeline` once.

    Args:
        call: The model's call.
        toolbox: The tools that can be called.
        policy: The permission policy (the default preset when None).
        filters: Run in order around the call, after the policy allowed it.
        thread_id: The conversation, for approvals, caches and the tool's context.
        cancellation: Cancel it to end the call as Canceled by the user.
        **limits: `max_result_bytes`, `max_argument_bytes`, `expose_errors` (see `Pipeline`).
    """
    pipeline = Pipeline(toolbox, policy=policy or _default_policy(), filters=filters, **limits)
    return await pipeline.invoke(call, thread_id=thread_id, cancellation=cancellation)


async def invoke_batch(
    calls: Sequence[ToolCall],
    toolbox: Toolbox,
    *,
    policy: PermissionPolicy | None = None,
    filters: Sequence[Filter] = (),
    thread_id: str | None = None,
    cancellation: Cancellation | None = None,
    request_index: int = 0,
    **limits: Any,
) -> Batch:
    """Run the calls of one model reply (see `Pipeline.invoke_batch`)."""
    pipeline = Pipeline(toolbox, policy=policy or _default_policy(), filters=filters, **limits)
    return await pipeline.invoke_batch(
        calls, thread_id=thread_id, cancellation=cancellation, request_index=request_index
    )
