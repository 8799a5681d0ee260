"""`Telemetry`: a run's OpenTelemetry spans and metrics, named by the GenAI semantic conventions.

```
invoke_agent {agent}             one per run (INTERNAL), a child of the caller's current span
├── chat {model}                 one per model request (CLIENT)
├── execute_tool {tool}          one per tool call (INTERNAL): validation, policy, filters, the tool
│   └── toolwire.consent {tool}  the policy's Ask: the wait for a person's answer
└── ...
```

Tool spans are siblings of the chat spans under the run's span, as the conventions draw an agent.
The chat and tool spans are the current span while they last, so what a model adapter or a tool
does (an instrumented HTTP client, an MCP session) nests under them.

Only the API (`opentelemetry-api`, the `otel` extra) is used: the application configures the SDK
and its exporters, or passes providers to `Telemetry`. Without a provider the cost is nil: a run
asks once whether anything is configured (not a call), and when nothing is, the loop and the
pipeline take the paths they take without this module. The API is not even imported unless the
application imported it first (no one can have configured a provider then).

Message contents (prompts, answers, tool arguments and results) are recorded only when the
application opts in: `Telemetry(record_content=True)` or the conventions' environment variable
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from pydantic_core import to_json

from .envelopes import ResultType, ToolResult
from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .models import ModelRequest, ModelResponse

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from .events import RunResult
    from .invocation import InvocationContext
    from .policy import ConsentRequest, Permission

__all__ = [
    "CAPTURE_CONTENT",
    "SPAN_ID",
    "TRACE_ID",
    "RunTrace",
    "Telemetry",
    "client_execution",
    "remote_parent",
    "trace_meta",
]

T = TypeVar("T")

CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' environment variable: `true` records message contents (see `Telemetry`)."""
TRACE_ID: Final = "messaging.trace_id"
"""An envelope's `meta` field: the trace of the span that sent it, 32 lowercase hex digits (W3C)."""
SPAN_ID: Final = "messaging.span_id"
"""An envelope's `meta` field: the span that sent it, 16 lowercase hex digits (W3C)."""
SCOPE: Final = "toolwire"
"""The instrumentation scope of the tracer and the meter."""

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
CONVERSATION: Final = "gen_ai.conversation.id"
AGENT_NAME: Final = "gen_ai.agent.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
ERROR_TYPE: Final = "error.type"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
OUTCOME: Final = "toolwire.outcome"
MODE: Final = "toolwire.tool.mode"
RUNS_ON: Final = "toolwire.tool.runs_on"

# The conventions' advised bucket boundaries (seconds) for model requests and tool calls, and for runs.
_OPERATION_BUCKETS: Final = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_RUN_BUCKETS: Final = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 102.4, 204.8, 409.6)
_TOKEN_BUCKETS: Final = tuple(4**power for power in range(14))
_NO_TRACER_PROVIDERS: Final = frozenset(("ProxyTracerProvider", "NoOpTracerProvider"))
_NO_METER_PROVIDERS: Final = frozenset(("_ProxyMeterProvider", "NoOpMeterProvider"))
"""The API's providers before the application sets one (the meter proxy's class is private)."""
_MISSING: Final = object()


class Telemetry:
    """Where an agent's spans and metrics go, and whether they hold message contents.

    Give it to `Agent(telemetry=...)`; the default one uses the global providers the
    application set (`opentelemetry.trace.set_tracer_provider`, `metrics.set_meter_provider`).

    Args:
        tracer_provider: The provider of the spans; the global one when None. Spans are
            recorded only when there is a provider that is not the API's default (no-op).
        meter_provider: The provider of the metrics; the global one when None (as above).
        record_content: Record prompts, answers, tool arguments and results on the spans. When
            None, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` decides (`true` to record).
        agent_name: `gen_ai.agent.name`, and the run span's name `invoke_agent {agent_name}`.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        record_content: bool | None = None,
        agent_name: str | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.record_content = record_content
        self.agent_name = agent_name
        self._tracer: tuple[object, Tracer] | None = None
        self._instruments: tuple[object, _Instruments] | None = None
        # Before asking the API for its global providers (~1 µs each: `get_*_provider()` looks the
        # environment up on every call), a run reads the API's set-once globals directly (~0.1 µs):
        # None means never set, so the API's no-op default, unless the environment names a provider
        # for the API to load (looked up once, here).
        environ = os.environ
        self._no_named_providers = (
            "OTEL_PYTHON_TRACER_PROVIDER" not in environ and "OTEL_PYTHON_METER_PROVIDER" not in environ
        )

    def start_run(self, thread_id: str, model_name: str, *, resume: bool = False) -> RunTrace | None:
        """Start a run's span; None when neither spans nor metrics are configured (the usual case).

        Call `RunTrace.end` when the run ends, in the same task.
        """
        tracer = self.tracer()
        instruments = self.instruments()
        if tracer is None and instruments is None:
            return None
        content = self.record_content
        if content is None:
            content = os.environ.get(CAPTURE_CONTENT, "").strip().lower() in ("1", "true", "yes")
        return RunTrace(self, tracer, instruments, thread_id, model_name, content=content, resume=resume)

    def tracer(self) -> Tracer | None:
        """The tracer of this telemetry's provider; None when no provider is configured."""
        provider = self.tracer_provider
        if provider is None:
            api = sys.modules.get("opentelemetry.trace")
            if api is None or (self._no_named_providers and getattr(api, "_TRACER_PROVIDER", _MISSING) is None):
                return None  # the API is not loaded, or its global provider was never set
            provider = api.get_tracer_provider()
            if type(provider).__name__ in _NO_TRACER_PROVIDERS:
                return None
        cached = self._tracer
        if cached is not None and cached[0] is provider:
            return cached[1]
        from . import __version__

        tracer = provider.get_tracer(SCOPE, __version__)
        self._tracer = (provider, tracer)
        return tracer

    def instruments(self) -> _Instruments | None:
        """The metric instruments of this telemetry's provider; None when no provider is configured."""
        provider = self.meter_provider
        if provider is None:
            api = sys.modules.get("opentelemetry.metrics._internal")
            if api is None or (self._no_named_providers and getattr(api, "_METER_PROVIDER", _MISSING) is None):
                return None
            provider = api.get_meter_provider()
            if type(provider).__name__ in _NO_METER_PROVIDERS:
                return None
        cached = self._instruments
        if cached is not None and cached[0] is provider:
            return cached[1]
        instruments = _Instruments(provider)
        self._instruments = (provider, instruments)
        return instruments


class _Instruments:
    """The metric instruments, made once per meter provider."""

    __slots__ = ("operation", "runs", "tokens", "tool_calls", "tool_duration")

    def __init__(self, provider: MeterProvider) -> None:
        from . import __version__

        meter = provider.get_meter(SCOPE, __version__)
        self.operation: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_OPERATION_BUCKETS,
        )
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.runs: Histogram = meter.create_histogram(
            "gen_ai.invoke_agent.duration",
            unit="s",
            description="The duration of an agent run, from its start to its result.",
            explicit_bucket_boundaries_advisory=_RUN_BUCKETS,
        )
        self.tool_duration: Histogram = meter.create_histogram(
            "gen_ai.execute_tool.duration",
            unit="s",
            description="The duration of a tool call, from the model's call to its one result.",
            explicit_bucket_boundaries_advisory=_OPERATION_BUCKETS,
        )
        self.tool_calls: Counter = meter.create_counter(
            "toolwire.tool.calls",
            unit="{call}",
            description="Tool calls by outcome type, mode and where they ran.",
        )


class RunTrace:
    """One run's span and what its model requests and tool calls record (see `Telemetry.start_run`)."""

    __slots__ = (
        "_agent",
        "_content",
        "_context",
        "_instruments",
        "_started",
        "_token",
        "_tracer",
        "model",
        "provider",
        "span",
        "thread_id",
    )

    def __init__(
        self,
        telemetry: Telemetry,
        tracer: Tracer | None,
        instruments: _Instruments | None,
        thread_id: str,
        model_name: str,
        *,
        content: bool,
        resume: bool,
    ) -> None:
        from opentelemetry import context, trace

        self._tracer = tracer if tracer is not None else trace.NoOpTracer()
        self._instruments = instruments
        self._content = content
        self._agent = telemetry.agent_name
        self.thread_id = thread_id
        self.provider, _, model = model_name.partition(":")
        self.model = model or model_name
        """`gen_ai.request.model`: a model's name after its provider (`openai:gpt-4o` → `gpt-4o`)."""
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            PROVIDER: self.provider,
            REQUEST_MODEL: self.model,
            CONVERSATION: thread_id,
        }
        if self._agent:
            attributes[AGENT_NAME] = self._agent
        if resume:
            attributes["toolwire.run.resume"] = True
        name = f"invoke_agent {self._agent}" if self._agent else "invoke_agent"
        self.span: Span = self._tracer.start_span(name, kind=trace.SpanKind.INTERNAL, attributes=attributes)
        self._context: Context = trace.set_span_in_context(self.span)
        self._token = context.attach(self._context)
        self._started = time.perf_counter()

    def end(self, result: RunResult | None, error: BaseException | None = None) -> None:
        """End the run's span with its result (None: nothing to resume), or the exception that ended it."""
        from opentelemetry import context, trace

        context.detach(self._token)
        span = self.span
        attributes: dict[str, Any] = {}
        if self._agent:
            attributes[AGENT_NAME] = self._agent
        attributes[REQUEST_MODEL] = self.model
        if result is not None:
            span.set_attributes(
                {
                    "toolwire.run.end_reason": result.reason,
                    "toolwire.run.requests": result.usage.requests,
                    INPUT_TOKENS: result.usage.input_tokens,
                    OUTPUT_TOKENS: result.usage.output_tokens,
                }
            )
            if self._content and result.output:
                span.set_attribute("gen_ai.output.messages", _output_json(result.output, None, ()))
        elif error is None:
            span.set_attribute("toolwire.run.end_reason", "nothing_to_resume")
        if isinstance(error, Exception):
            kind = type(error).__qualname__
            span.set_attribute(ERROR_TYPE, kind)
            span.set_status(trace.StatusCode.ERROR)
            span.record_exception(error)
            attributes[ERROR_TYPE] = kind
        elif error is not None:  # cancelled from outside (the caller's task), not a failure of the run
            span.set_attribute("toolwire.run.end_reason", "cancelled")
        span.end()
        if (instruments := self._instruments) is not None:
            instruments.runs.record(time.perf_counter() - self._started, attributes)

    async def chat(self, request: ModelRequest, answer: Awaitable[T]) -> T:
        """Await a model request's `answer` under its `chat {model}` span (the current span meanwhile)."""
        from opentelemetry import context, trace

        attributes: dict[str, Any] = {
            OPERATION: "chat",
            PROVIDER: self.provider,
            REQUEST_MODEL: self.model,
            CONVERSATION: self.thread_id,
            "toolwire.request_index": request.request_index,
        }
        if self._content:
            attributes["gen_ai.input.messages"] = _messages_json(request.messages)
            if request.system:
                attributes["gen_ai.system_instructions"] = to_json(
                    [{"type": "text", "content": request.system}]
                ).decode()
        span = self._tracer.start_span(
            f"chat {self.model}", context=self._context, kind=trace.SpanKind.CLIENT, attributes=attributes
        )
        token = context.attach(trace.set_span_in_context(span, self._context))
        started = time.perf_counter()
        error: str | None = None
        try:
            response = await answer
        except Exception as exc:
            error = type(exc).__qualname__
            span.set_attribute(ERROR_TYPE, error)
            span.set_status(trace.StatusCode.ERROR)
            span.record_exception(exc)
            raise
        else:
            if isinstance(response, ModelResponse):
                self._responded(span, response)
            else:  # the caller canceled the run while the model answered
                span.set_attribute("toolwire.canceled", True)
        finally:
            context.detach(token)
            duration = time.perf_counter() - started
            span.end()
            if (instruments := self._instruments) is not None:
                metric: dict[str, Any] = {OPERATION: "chat", PROVIDER: self.provider, REQUEST_MODEL: self.model}
                if error is not None:
                    metric[ERROR_TYPE] = error
                instruments.operation.record(duration, metric)
        return response

    def _responded(self, span: Span, response: ModelResponse) -> None:
        usage = response.usage
        attributes: dict[str, Any] = {INPUT_TOKENS: usage.input_tokens, OUTPUT_TOKENS: usage.output_tokens}
        if response.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = (response.finish_reason,)
        if response.model_name:
            attributes["gen_ai.response.model"] = response.model_name.partition(":")[2] or response.model_name
        if self._content:
            attributes["gen_ai.output.messages"] = _output_json(
                response.text, response.finish_reason, response.tool_calls
            )
        span.set_attributes(attributes)
        if (instruments := self._instruments) is not None:
            metric: dict[str, Any] = {OPERATION: "chat", PROVIDER: self.provider, REQUEST_MODEL: self.model}
            instruments.tokens.record(usage.input_tokens, {**metric, "gen_ai.token.type": "input"})
            instruments.tokens.record(usage.output_tokens, {**metric, "gen_ai.token.type": "output"})

    async def tool(self, ctx: InvocationContext, settle: Awaitable[None]) -> None:
        """Await one call's `settle` (the pipeline's whole path) under its `execute_tool {name}` span."""
        from opentelemetry import context, trace

        call = ctx.tool_call
        span = self._tracer.start_span(
            f"execute_tool {call.name}",
            context=self._context,
            kind=trace.SpanKind.INTERNAL,
            attributes={
                OPERATION: "execute_tool",
                TOOL_NAME: call.name,
                TOOL_CALL_ID: call.id,
                CONVERSATION: self.thread_id,
                "toolwire.request_index": ctx.request_index,
            },
        )
        token = context.attach(trace.set_span_in_context(span, self._context))
        started = time.perf_counter()
        try:
            await settle
        except BaseException:  # only a cancellation of the batch from outside: the call has no result
            span.set_attribute("toolwire.canceled", True)
            raise
        finally:
            context.detach(token)
            self._tool_ended(span, ctx, time.perf_counter() - started)

    def _tool_ended(self, span: Span, ctx: InvocationContext, duration: float) -> None:
        from opentelemetry import trace

        metric: dict[str, Any] = {TOOL_NAME: ctx.tool_call.name}
        attributes: dict[str, Any] = {}
        if (tool := ctx.tool) is not None:
            metric[TOOL_TYPE] = attributes[TOOL_TYPE] = "function" if tool.runs_on == "client" else "extension"
            metric[MODE] = attributes[MODE] = tool.mode.value
            metric[RUNS_ON] = attributes[RUNS_ON] = tool.runs_on
            attributes["toolwire.tool.mode_reason"] = tool.mode_decision.reason
            if tool.description:
                attributes["gen_ai.tool.description"] = tool.description
        if (permission := ctx.permission) is not None:
            attributes["toolwire.policy.decision"] = permission.decision.value
            attributes["toolwire.policy.source"] = permission.source
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = to_json(ctx.tool_call.arguments).decode()
        if (result := ctx.result) is not None:
            outcome = result.type.name.lower()
            metric[OUTCOME] = attributes[OUTCOME] = outcome
            if result.type is ResultType.DENIED:
                attributes["toolwire.policy.decision"] = "deny"
            if not result.success:
                attributes["toolwire.error.code"] = result.wire_code or outcome
            if result.type in (ResultType.ERROR, ResultType.TIMEOUT):
                metric[ERROR_TYPE] = attributes[ERROR_TYPE] = result.wire_code or "_OTHER"
                span.set_status(trace.StatusCode.ERROR)
            if _effect_unknown(result):
                attributes["toolwire.effect_unknown"] = True
            if self._content and result.success:
                attributes["gen_ai.tool.call.result"] = to_json(result.payload()).decode()
        span.set_attributes(attributes)
        span.end()
        if (instruments := self._instruments) is not None:
            instruments.tool_duration.record(duration, metric)
            metric.pop(ERROR_TYPE, None)
            metric.pop(TOOL_TYPE, None)
            instruments.tool_calls.add(1, metric)

    def consent(self, ctx: InvocationContext) -> ConsentWait:
        """Start the span of a policy's Ask (a child of the call's span); end it with `ConsentWait.end`."""
        call = ctx.tool_call
        span = self._tracer.start_span(
            f"toolwire.consent {call.name}", attributes={TOOL_NAME: call.name, TOOL_CALL_ID: call.id}
        )
        return ConsentWait(span)


class ConsentWait:
    """The span of one wait for consent: whether a person was asked, and the policy's answer."""

    __slots__ = ("_asked", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self._asked = False

    def asker(self, on_ask: Callable[[ConsentRequest], None] | None) -> Callable[[ConsentRequest], None]:
        """`on_ask` for the policy: notes that a person is asked, then tells `on_ask`."""

        def asked(request: ConsentRequest) -> None:
            self._asked = True
            self.span.add_event(
                "toolwire.consent.requested", {"toolwire.consent.at_client": request.client is not None}
            )
            if on_ask is not None:
                on_ask(request)

        return asked

    def end(self, permission: Permission | None) -> None:
        """End the wait with the policy's answer (None: the caller canceled it)."""
        span = self.span
        span.set_attribute("toolwire.consent.asked", self._asked)
        if permission is None:
            span.set_attribute("toolwire.canceled", True)
        else:
            span.set_attribute("toolwire.policy.decision", permission.decision.value)
            span.set_attribute("toolwire.policy.source", permission.source)
        span.end()


def _effect_unknown(result: ToolResult) -> bool:
    """True for a Timeout whose tool could not be stopped (`ToolResult.timeout(effect_unknown=True)`)."""
    data: object = result.data
    if result.type is not ResultType.TIMEOUT or not isinstance(data, dict):
        return False
    detail = cast(dict[str, object], data).get("timeout")
    return isinstance(detail, dict) and cast(dict[str, object], detail).get("effectUnknown") is True


def _messages_json(messages: Sequence[Message]) -> str:
    """The conventions' `gen_ai.input.messages`: a role and parts per message, as JSON."""
    out: list[dict[str, Any]] = []
    for message in messages:
        match message:
            case UserMessage(content=content):
                out.append({"role": "user", "parts": [{"type": "text", "content": content}]})
            case AssistantMessage(text=text, tool_calls=calls):
                out.append({"role": "assistant", "parts": _parts(text, calls)})
            case ToolResultMessage(result=result):
                part = {"type": "tool_call_response", "id": result.call_id, "result": result.payload()}
                out.append({"role": "tool", "parts": [part]})
    return to_json(out).decode()


def _output_json(text: str, finish_reason: str | None, calls: Sequence[Any]) -> str:
    """The conventions' `gen_ai.output.messages`: the one answer of a request, as JSON."""
    message: dict[str, Any] = {"role": "assistant", "parts": _parts(text, calls)}
    if finish_reason:
        message["finish_reason"] = finish_reason
    return to_json([message]).decode()


def _parts(text: str, calls: Sequence[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts.extend({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments} for call in calls)
    return parts


# -- across the wire ------------------------------------------------------------------------------


def trace_meta(span: Span | None = None) -> dict[str, str]:
    """The ids of `span` (the current span when None) for an envelope's `meta`; empty without a valid span.

    A server puts them on the ToolUseRequest of a client call, so that the client's execution is
    a child of the call's `execute_tool` span (`remote_parent`, `client_execution`).
    """
    if "opentelemetry.trace" not in sys.modules and span is None:
        return {}
    from opentelemetry import trace

    context = (span if span is not None else trace.get_current_span()).get_span_context()
    if not context.is_valid:
        return {}
    return {TRACE_ID: trace.format_trace_id(context.trace_id), SPAN_ID: trace.format_span_id(context.span_id)}


def remote_parent(meta: Mapping[str, Any]) -> Context | None:
    """The span a peer named in an envelope's `meta` (`trace_meta`), as a parent; None when absent or malformed.

    The peer's sampling decision does not cross the wire: the parent counts as sampled, and the
    local sampler decides.
    """
    trace_id, span_id = meta.get(TRACE_ID), meta.get(SPAN_ID)
    if not isinstance(trace_id, str) or not isinstance(span_id, str):
        return None
    try:
        trace_number, span_number = int(trace_id, 16), int(span_id, 16)
    except ValueError:
        return None
    if len(trace_id) != 32 or len(span_id) != 16 or not trace_number or not span_number:
        return None
    from opentelemetry import trace

    parent = trace.SpanContext(trace_number, span_number, is_remote=True, trace_flags=trace.TraceFlags(1))
    return trace.set_span_in_context(trace.NonRecordingSpan(parent))


async def client_execution(
    tracer: Tracer,
    tool_name: str,
    call_id: str,
    meta: Mapping[str, Any],
    answer: Awaitable[T],
    outcome: Callable[[T], tuple[str, str | None]],
) -> T:
    """Await a client's execution of a server's request under its `execute_tool {tool_name}` span.

    The span is a child of the server's call span when the request's `meta` names it (see
    `trace_meta`), and the current span while the handler runs. `outcome` gives the answer's
    outcome type and its error code, if any.
    """
    from opentelemetry import context, trace

    parent = remote_parent(meta)
    span = tracer.start_span(
        f"execute_tool {tool_name}",
        context=parent,
        kind=trace.SpanKind.INTERNAL,
        attributes={
            OPERATION: "execute_tool",
            TOOL_NAME: tool_name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            RUNS_ON: "client",
        },
    )
    token = context.attach(trace.set_span_in_context(span, parent))
    try:
        result = await answer
    except BaseException:
        span.set_attribute("toolwire.canceled", True)
        raise
    else:
        kind, code = outcome(result)
        span.set_attribute(OUTCOME, kind)
        if code is not None:
            span.set_attribute("toolwire.error.code", code)
        if kind in ("error", "timeout"):
            span.set_attribute(ERROR_TYPE, code or "_OTHER")
            span.set_status(trace.StatusCode.ERROR)
    finally:
        context.detach(token)
        span.end()
    return result
