"""Trace context across the wire: an envelope's `meta` names the span that sent it, and the peer's span is its child."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .attributes import ERROR_TYPE, OPERATION, OUTCOME, RUNS_ON, SPAN_ID, TOOL_CALL_ID, TOOL_NAME, TOOL_TYPE, TRACE_ID

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer

T = TypeVar("T")


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
