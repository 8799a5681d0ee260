/**
 * Trace context across the wire: the `traceExecution` hook of `connect()`, and the ids it is given.
 *
 * A server that records spans names its call's span in the `meta` of each client ToolUseRequest
 * envelope: `messaging.trace_id` (32 lowercase hex digits) and `messaging.span_id` (16), the W3C
 * ids (`toolwire.telemetry.trace_meta()` in Python). The client reads them here and hands them to
 * the hook around each handler's execution, so that the hook can record the execution as a child
 * of the server's span. The core library knows no tracing API: `@toolwire/client/otel`
 * (`openTelemetryTracing()`) makes the hook with OpenTelemetry, and any other tracer can too.
 *
 * @module
 */

import type { ToolUseResult } from "./messages.js";
import type { WireMap } from "./wire.js";

/** The envelope's `meta` field naming the trace of the span that sent it. */
export const TRACE_ID = "messaging.trace_id";
/** The envelope's `meta` field naming the span that sent it. */
export const SPAN_ID = "messaging.span_id";

/** A W3C parent: the server's span, as the envelope's `meta` named it. */
export interface TraceParent {
  /** 32 lowercase hex digits, not all zero. */
  traceId: string;
  /** 16 lowercase hex digits, not all zero. */
  spanId: string;
}

/** One execution of a client tool, as `traceExecution` is told of it. */
export interface TracedExecution {
  toolName: string;
  /** The model's call id (the request's `callId`, else its id): the `gen_ai.tool.call.id`. */
  callId: string;
  /** The ToolUseRequest's id. */
  requestId: string;
  /** The server's call span, when the request's envelope named a valid one (else absent). */
  traceId?: string;
  spanId?: string;
}

/**
 * Wraps each execution of a client tool handler, e.g. in a span (`@toolwire/client/otel`).
 *
 * Call `run()` once and return its answer (it never rejects: a handler's failure is a failed
 * ToolUseResult). Should the hook throw, the client warns (a `warning` event) and answers anyway,
 * running the handler if the hook had not.
 */
export type TraceExecution = (execution: TracedExecution, run: () => Promise<ToolUseResult>) => Promise<ToolUseResult>;

const TRACE = /^[0-9a-f]{32}$/;
const SPAN = /^[0-9a-f]{16}$/;
const ZEROS = /^0+$/;

/** The parent an envelope's `meta` names; undefined when absent or malformed (not lowercase hex of the right length, or all zeros). */
export function traceParent(meta: WireMap): TraceParent | undefined {
  const traceId = meta[TRACE_ID];
  const spanId = meta[SPAN_ID];
  if (typeof traceId !== "string" || typeof spanId !== "string") return undefined;
  if (!TRACE.test(traceId) || !SPAN.test(spanId) || ZEROS.test(traceId) || ZEROS.test(spanId)) return undefined;
  return { traceId, spanId };
}
