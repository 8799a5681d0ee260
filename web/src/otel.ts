/**
 * `@toolwire/client/otel`: the `traceExecution` hook made with OpenTelemetry, a separate entry
 * point so that the core library (and the page's bundle) does not carry the OpenTelemetry API.
 * `@opentelemetry/api` is an optional peer dependency: install it (and an SDK) to use this.
 *
 * ```ts
 * import { connect } from "@toolwire/client";
 * import { openTelemetryTracing } from "@toolwire/client/otel";
 *
 * const client = await connect(url, { token, handlers, traceExecution: openTelemetryTracing() });
 * ```
 *
 * Each execution of a client tool handler is an `execute_tool {tool}` span (kind Internal), a
 * child of the server's call span when the request's envelope named it, with the attributes the
 * Python client records (docs/agent.md, "Tracing"): `gen_ai.operation.name` = `execute_tool`,
 * `gen_ai.tool.name`, `gen_ai.tool.call.id`, `gen_ai.tool.type` = `function`,
 * `toolwire.tool.runs_on` = `client`, and at the end `toolwire.outcome` (`success`, `error`,
 * `canceled`, `timeout`, `denied`), `toolwire.error.code` (a failure's wire code), and
 * `error.type` with status Error for the Error and Timeout outcomes.
 *
 * @module
 */

import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Tracer } from "@opentelemetry/api";

import { outcomeOf, ResultType } from "./results.js";
import type { TraceExecution } from "./tracing.js";

/** The instrumentation scope of the default tracer (the Python package's too). */
export const SCOPE = "toolwire";

const OUTCOMES: Record<ResultType, string> = {
  [ResultType.SUCCESS]: "success",
  [ResultType.ERROR]: "error",
  [ResultType.CANCELED]: "canceled",
  [ResultType.TIMEOUT]: "timeout",
  [ResultType.DENIED]: "denied",
};

/** Options of `openTelemetryTracing()`. */
export interface OpenTelemetryTracingOptions {
  /** The tracer of the spans; by default the global provider's `toolwire` tracer, looked up at each execution. */
  tracer?: Tracer;
}

/**
 * The `traceExecution` hook of `connect()` that records each client tool execution as a span.
 *
 * The server's span (the parent) counts as sampled, as in the Python client: its sampling
 * decision does not cross the wire, the local sampler decides. Without it, the span is a child of
 * the active span, if any. The span is active while the handler runs, so what the handler does
 * with instrumented libraries nests under it; across `await`s that needs a context manager (the
 * SDK's `AsyncLocalStorageContextManager` in node, `ZoneContextManager` in a browser).
 */
export function openTelemetryTracing(options: OpenTelemetryTracingOptions = {}): TraceExecution {
  return async (execution, run) => {
    const { toolName, callId, traceId, spanId } = execution;
    const tracer = options.tracer ?? trace.getTracer(SCOPE);
    const active = context.active();
    const parent =
      traceId !== undefined && spanId !== undefined
        ? trace.setSpanContext(active, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true })
        : active;
    const span = tracer.startSpan(
      `execute_tool ${toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": toolName,
          "gen_ai.tool.call.id": callId,
          "gen_ai.tool.type": "function",
          "toolwire.tool.runs_on": "client",
        },
      },
      parent,
    );
    try {
      const result = await context.with(trace.setSpan(parent, span), run);
      const outcome = outcomeOf(result);
      span.setAttribute("toolwire.outcome", OUTCOMES[outcome.type]);
      if (result.errorCode !== undefined) span.setAttribute("toolwire.error.code", result.errorCode);
      if (outcome.type === ResultType.ERROR || outcome.type === ResultType.TIMEOUT) {
        span.setAttribute("error.type", result.errorCode ?? "_OTHER");
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    } catch (error) {
      // `run()` does not reject; another hook wrapped around it might.
      span.setAttribute("error.type", error instanceof Error ? error.name : "_OTHER");
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  };
}
