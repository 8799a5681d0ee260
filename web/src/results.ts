/**
 * The one converter between an outcome and the ToolUseResult message (type 7), the twin of the
 * server's `toolwire.protocol.results`: the code ↔ outcome type table, the answers this client
 * builds, and the reading of a result (`outcomeOf`).
 *
 * A message carries each thing once: a success's value in `result` (a value that is not a map as
 * `{"value": ...}`) or, for content items, in `content`, never both; a failure's details as
 * structured fields, seed 000's payload in `result`: `{"timeout": {"durationMs", "effectUnknown"}}`,
 * `{"denied": {"tool", "reason"}}`, `{"canceled": {"reason", "by"}}`, `{"error": {"type"}}`. A frame
 * without them (another implementation's) is read from the seed's texts: "Tool execution exceeded
 * timeout of 5000ms", "Call to 'X' was denied: reason".
 *
 * @module
 */

import type { ContentItem, ToolUseResult } from "./messages.js";
import { isMap, MessageType, type WireMap } from "./wire.js";

/** How a tool call concluded (seed 000). */
export const ResultType = { SUCCESS: 0, ERROR: 1, CANCELED: 2, TIMEOUT: 3, DENIED: 4 } as const;
export type ResultType = (typeof ResultType)[keyof typeof ResultType];

/** The wire error codes and the outcome type of each; any other code is an Error. */
export const CODE_RESULT_TYPES: Readonly<Record<string, ResultType>> = Object.freeze({
  unknown_tool: ResultType.ERROR,
  invalid_parameters: ResultType.ERROR,
  execution_error: ResultType.ERROR,
  client_disconnected: ResultType.ERROR,
  result_too_large: ResultType.ERROR,
  invalid_result: ResultType.ERROR,
  timeout: ResultType.TIMEOUT,
  canceled: ResultType.CANCELED,
  denied: ResultType.DENIED,
});

/** The code of each failed outcome type when a result names none of its own. */
export const DEFAULT_CODES: Readonly<Record<Exclude<ResultType, 0>, string>> = Object.freeze({
  [ResultType.ERROR]: "execution_error",
  [ResultType.CANCELED]: "canceled",
  [ResultType.TIMEOUT]: "timeout",
  [ResultType.DENIED]: "denied",
});

/** The outcome type a wire error code stands for (a code of a tool's own is an Error). */
export function resultTypeForCode(code: string): ResultType {
  return Object.hasOwn(CODE_RESULT_TYPES, code) ? CODE_RESULT_TYPES[code]! : ResultType.ERROR;
}

/** A failed answer with a wire code (`unknown_tool`, `invalid_parameters`, ...). */
export function failure(requestId: string, code: string, message: string): ToolUseResult {
  return { type: MessageType.TOOL_USE_RESULT, id: requestId, success: false, errorCode: code, errorMessage: message };
}

const EFFECT_UNKNOWN_NOTE = " (the tool could not be stopped; its effect is unknown)";

/** The answer of a handler that ran past `durationMs`: the seed's text, and the duration as a field. */
export function timeoutFailure(requestId: string, durationMs: number, effectUnknown = false): ToolUseResult {
  const text = `Tool execution exceeded timeout of ${durationMs}ms`;
  const detail: WireMap = effectUnknown ? { durationMs, effectUnknown: true } : { durationMs };
  return { ...failure(requestId, "timeout", effectUnknown ? text + EFFECT_UNKNOWN_NOTE : text), result: { timeout: detail } };
}

/** What a ToolUseResult reports, read from its structured fields, else from the seed's texts. */
export interface Outcome {
  type: ResultType;
  /** The wire code of a failure (its own, or its type's default). */
  code?: string;
  /** A failure's text. */
  message?: string;
  /** A success's value: its content items' value, else its `result` (`{"value": x}` is `x`). */
  value?: unknown;
  /** Timeout: the deadline that passed (null when unknown). */
  durationMs?: number | null;
  /** Timeout: the tool could not be stopped and may still finish its work. */
  effectUnknown?: boolean;
  /** Denied: the tool refused. */
  tool?: string;
  /** Denied, Canceled: why. */
  reason?: string;
  /** Canceled: `user`, `policy` or `system`. */
  by?: string;
}

/**
 * Read a ToolUseResult (e.g. a `serverToolResult`'s).
 *
 * @param context what the request said: its tool (a Denied names it) and its deadline (a Timeout
 *   that gives no duration lasted it).
 */
export function outcomeOf(result: ToolUseResult, context: { toolName?: string; deadlineMs?: number } = {}): Outcome {
  if (result.success) {
    return { type: ResultType.SUCCESS, value: result.content?.length ? contentValue(result.content) : unwrapValue(result.result) };
  }
  const named = result.resultType;
  const type: ResultType =
    named !== undefined && named > 0 && named <= 4 ? (named as ResultType) : resultTypeForCode(result.errorCode ?? "");
  const code = result.errorCode ?? DEFAULT_CODES[type as Exclude<ResultType, 0>];
  const message = result.errorMessage ?? "";
  const outcome: Outcome = { type, code, message };
  switch (type) {
    case ResultType.TIMEOUT: {
      const sent = detail(result.result, "timeout");
      const duration = sent.durationMs;
      const found = /timeout of (\d+)\s*ms/.exec(message);
      outcome.durationMs =
        typeof duration === "number" && Number.isInteger(duration) && duration >= 0
          ? duration
          : found
            ? Number(found[1])
            : (context.deadlineMs ?? null);
      outcome.effectUnknown = sent.effectUnknown === true || message.endsWith(EFFECT_UNKNOWN_NOTE);
      break;
    }
    case ResultType.DENIED: {
      const sent = detail(result.result, "denied");
      const standard = /^Call to '(.*?)' was denied: ([\s\S]*)$/.exec(message);
      outcome.tool = context.toolName || (typeof sent.tool === "string" ? sent.tool : (standard?.[1] ?? ""));
      outcome.reason = typeof sent.reason === "string" ? sent.reason : (standard?.[2] ?? message);
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

function detail(result: WireMap | undefined, key: string): WireMap {
  const inner = result?.[key];
  return isMap(inner) ? inner : {};
}

function unwrapValue(value: WireMap | undefined): unknown {
  if (value === undefined) return undefined;
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "value" ? value.value : value;
}

/** The value of content items: one text item its text, one json item its value, else the item(s). */
function contentValue(items: readonly ContentItem[]): unknown {
  const [first] = items;
  if (items.length !== 1 || first === undefined) return items;
  return first.type === "text" ? first.text : first.type === "json" ? first.value : first;
}
