// src/otel.ts
import { context, SpanKind, SpanStatusCode, trace, TraceFlags } from "@opentelemetry/api";

// src/errors.ts
var ErrorCode = {
  /** Not MessagePack, or outside the subset toolwire accepts (no extension types, string keys). */
  MALFORMED_FRAME: 101,
  /** A message type this version does not know; the frame was skipped. */
  UNKNOWN_TYPE: 102,
  /** The first message of a connection must be a Configuration. */
  HANDSHAKE_REQUIRED: 103,
  /** The frame exceeds `Limits.maxFrameBytes`. */
  FRAME_TOO_LARGE: 104,
  /** An envelope or body field is missing or has the wrong type or value. */
  INVALID_MESSAGE: 105,
  /** A length, count or depth limit of `Limits` was exceeded. */
  LIMIT_EXCEEDED: 106,
  /** A live connection stays on its conversation (or a frame named another conversation). */
  CONVERSATION_SWITCH_REFUSED: 107,
  /** The server refused too many frames of this principal's connections; it closes the connection. */
  TOO_MANY_REFUSALS: 108,
  /** The conversation to resume does not exist (any more). */
  CONVERSATION_NOT_FOUND: 201,
  /** The conversation belongs to another principal. */
  CONVERSATION_FORBIDDEN: 202,
  /** The principal has as many conversations as the server allows. */
  CONVERSATION_LIMIT: 203,
  /** The named tool is not registered. */
  TOOL_NOT_FOUND: 301,
  /** A ToolUseResult the server does not take: unknown, foreign, answered, or its call was settled without it. */
  RESULT_REFUSED: 302,
  /** A tool did not answer within its deadline. */
  TOOL_TIMEOUT: 304,
  /** No valid credentials were presented. */
  UNAUTHENTICATED: 401,
  /** The credentials do not allow this operation. */
  FORBIDDEN: 403,
  /** The server failed; details stay in its logs. */
  INTERNAL: 501
};
var NOT_RECOVERABLE = /* @__PURE__ */ new Set([
  ErrorCode.HANDSHAKE_REQUIRED,
  ErrorCode.CONVERSATION_NOT_FOUND,
  ErrorCode.CONVERSATION_FORBIDDEN,
  ErrorCode.UNAUTHENTICATED,
  ErrorCode.FORBIDDEN
]);

// src/wire.ts
function isMap(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

// src/results.ts
var ResultType = { SUCCESS: 0, ERROR: 1, CANCELED: 2, TIMEOUT: 3, DENIED: 4 };
var CODE_RESULT_TYPES = Object.freeze({
  unknown_tool: ResultType.ERROR,
  invalid_parameters: ResultType.ERROR,
  execution_error: ResultType.ERROR,
  client_disconnected: ResultType.ERROR,
  result_too_large: ResultType.ERROR,
  invalid_result: ResultType.ERROR,
  timeout: ResultType.TIMEOUT,
  canceled: ResultType.CANCELED,
  denied: ResultType.DENIED
});
var DEFAULT_CODES = Object.freeze({
  [ResultType.ERROR]: "execution_error",
  [ResultType.CANCELED]: "canceled",
  [ResultType.TIMEOUT]: "timeout",
  [ResultType.DENIED]: "denied"
});
function resultTypeForCode(code) {
  return Object.hasOwn(CODE_RESULT_TYPES, code) ? CODE_RESULT_TYPES[code] : ResultType.ERROR;
}
var EFFECT_UNKNOWN_NOTE = " (the tool could not be stopped; its effect is unknown)";
function outcomeOf(result, context2 = {}) {
  if (result.success) {
    return { type: ResultType.SUCCESS, value: result.content?.length ? contentValue(result.content) : unwrapValue(result.result) };
  }
  const named = result.resultType;
  const type = named !== void 0 && named > 0 && named <= 4 ? named : resultTypeForCode(result.errorCode ?? "");
  const code = result.errorCode ?? DEFAULT_CODES[type];
  const message = result.errorMessage ?? "";
  const outcome = { type, code, message };
  switch (type) {
    case ResultType.TIMEOUT: {
      const sent = detail(result.result, "timeout");
      const duration = sent.durationMs;
      const found = /timeout of (\d+)\s*ms/.exec(message);
      outcome.durationMs = typeof duration === "number" && Number.isInteger(duration) && duration >= 0 ? duration : found ? Number(found[1]) : context2.deadlineMs ?? null;
      outcome.effectUnknown = sent.effectUnknown === true || message.endsWith(EFFECT_UNKNOWN_NOTE);
      break;
    }
    case ResultType.DENIED: {
      const sent = detail(result.result, "denied");
      const standard = /^Call to '(.*?)' was denied: ([\s\S]*)$/.exec(message);
      outcome.tool = context2.toolName || (typeof sent.tool === "string" ? sent.tool : standard?.[1] ?? "");
      outcome.reason = typeof sent.reason === "string" ? sent.reason : standard?.[2] ?? message;
      break;
    }
    case ResultType.CANCELED: {
      const sent = detail(result.result, "canceled");
      outcome.reason = typeof sent.reason === "string" ? sent.reason : message;
      outcome.by = sent.by === "policy" || sent.by === "system" ? sent.by : "user";
      break;
    }
  }
  return outcome;
}
function detail(result, key) {
  const inner = result?.[key];
  return isMap(inner) ? inner : {};
}
function unwrapValue(value) {
  if (value === void 0) return void 0;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "value" ? value.value : value;
}
function contentValue(items) {
  const [first] = items;
  if (items.length !== 1 || first === void 0) return items;
  return first.type === "text" ? first.text : first.type === "json" ? first.value : first;
}

// src/otel.ts
var SCOPE = "toolwire";
var OUTCOMES = {
  [ResultType.SUCCESS]: "success",
  [ResultType.ERROR]: "error",
  [ResultType.CANCELED]: "canceled",
  [ResultType.TIMEOUT]: "timeout",
  [ResultType.DENIED]: "denied"
};
function openTelemetryTracing(options = {}) {
  return async (execution, run) => {
    const { toolName, callId, traceId, spanId } = execution;
    const tracer = options.tracer ?? trace.getTracer(SCOPE);
    const active = context.active();
    const parent = traceId !== void 0 && spanId !== void 0 ? trace.setSpanContext(active, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true }) : active;
    const span = tracer.startSpan(
      `execute_tool ${toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": toolName,
          "gen_ai.tool.call.id": callId,
          "gen_ai.tool.type": "function",
          "toolwire.tool.runs_on": "client"
        }
      },
      parent
    );
    try {
      const result = await context.with(trace.setSpan(parent, span), run);
      const outcome = outcomeOf(result);
      span.setAttribute("toolwire.outcome", OUTCOMES[outcome.type]);
      if (result.errorCode !== void 0) span.setAttribute("toolwire.error.code", result.errorCode);
      if (outcome.type === ResultType.ERROR || outcome.type === ResultType.TIMEOUT) {
        span.setAttribute("error.type", result.errorCode ?? "_OTHER");
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      return result;
    } catch (error) {
      span.setAttribute("error.type", error instanceof Error ? error.name : "_OTHER");
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  };
}
export {
  SCOPE,
  openTelemetryTracing
};
//# sourceMappingURL=toolwire-otel.js.map
