"""`RunTrace`: the spans and metrics of one run, its model requests, tool calls and consent waits."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic_core import to_json

from ..envelopes import ResultType, ToolResult
from ..messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from ..models import ModelRequest, ModelResponse
from .attributes import (
    AGENT_NAME,
    CONVERSATION,
    ERROR_TYPE,
    INPUT_TOKENS,
    MODE,
    OPERATION,
    OUTCOME,
    OUTPUT_TOKENS,
    PROVIDER,
    REQUEST_MODEL,
    RUNS_ON,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_TYPE,
)

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

    from ..events import RunResult
    from ..invocation import InvocationContext
    from ..policy import ConsentRequest, Permission
    from .providers import Instruments, Telemetry

T = TypeVar("T")


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
        instruments: Instruments | None,
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
