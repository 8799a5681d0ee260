/**
 * The client's tools: handlers by name, the check of their arguments, the execution ledger, and
 * the answer to each request.
 *
 * `Handlers.run(request)` always resolves to a ToolUseResult for the request's `id`:
 *
 * | what happened | `errorCode` |
 * |---|---|
 * | the handler returned | none: success |
 * | no handler for the tool | `unknown_tool` |
 * | the arguments miss a required property or have the wrong basic type | `invalid_parameters` |
 * | the handler threw | `execution_error` (or a `ToolError`'s own code) |
 * | the handler ran past the deadline | `timeout`, "Tool execution exceeded timeout of Nms" |
 * | the client was closed while it ran | `canceled` (not sent: a closed client sends nothing) |
 * | the `cancel` signal aborted with a `ToolError` (the server withdrew the call) | its code (not sent either) |
 * | the value cannot be sent | `execution_error`; `result_too_large` past the frame limit |
 *
 * The argument check is deliberately minimal (the server validates arguments against the full
 * JSON Schema before it sends a request): the root's `required` properties must be present,
 * `additionalProperties: false` refuses unknown ones, and a property whose schema names a `type`
 * (or a list of types) must have that basic JSON type: string, number, integer, boolean, object,
 * array, null. Nested schemas, formats, patterns and bounds are not checked here.
 *
 * @module
 */

import { check, DEFAULT_LIMITS, encode, type Limits } from "./codec.js";
import { ToolError, UsageError } from "./errors.js";
import { failure, timeoutFailure } from "./results.js";
import type { Augmentation, ClientToolGroup, ContentItem, JsonSchema, ToolUseRequest, ToolUseResult } from "./messages.js";
import { MessageType, type WireMap } from "./wire.js";

/** What a handler gets besides the arguments. */
export interface ToolContext {
  /** The request being answered. */
  request: ToolUseRequest;
  /**
   * Aborted when the call ends without the handler: its deadline passed (the `timeout` answer has
   * been sent), the server withdrew it (ToolUseCancel: nothing will be sent), or the client was
   * closed. Stop working then; `signal.reason` is a `ToolError` whose `code` says which
   * (`timeout`; the server's code, e.g. `canceled`, `timeout`, `client_disconnected`; `canceled`).
   */
  signal: AbortSignal;
}

/**
 * A function that runs one client tool. It gets the call's arguments and returns text, any JSON
 * value, a `ToolResponse` (content items, a failure, an augmentation), or nothing; it throws a
 * `ToolError` to fail with a code of its own.
 */
export type ToolHandler = (args: WireMap, context: ToolContext) => unknown;

/** A handler with its own deadline, when shorter than the request's `timeoutMs`. */
export interface ToolHandlerSpec {
  handler: ToolHandler;
  timeoutMs?: number;
}

/** What `ToolResponse` is made of. */
export interface ToolResponseInit {
  /** Items for the model: `{type: "text", text}`, `{type: "json", value}`, `{type: "binary", mimeType, data, filename?}`. */
  content?: ContentItem[];
  /** False to fail (with `errorCode`, default `execution_error`, and `errorMessage`). */
  success?: boolean;
  errorCode?: string;
  errorMessage?: string;
  /** Changes to the thread's client tools (docs/client-tools.md, "Augmentation"). */
  augmentation?: Augmentation;
}

/** A handler's full answer: content items, a failure, an augmentation. */
export class ToolResponse {
  readonly content: ContentItem[];
  readonly success: boolean;
  readonly errorCode: string | undefined;
  readonly errorMessage: string | undefined;
  readonly augmentation: Augmentation | undefined;

  constructor(init: ToolResponseInit = {}) {
    this.content = init.content ?? [];
    this.success = init.success ?? true;
    this.errorCode = init.errorCode;
    this.errorMessage = init.errorMessage;
    this.augmentation = init.augmentation;
  }
}

/**
 * The answer for a handler's return value; the value travels once. Text and any other JSON value
 * travel in `result` (seed 001): a map as it is, another value as `{"value": ...}`. A
 * `ToolResponse`'s content items travel in `content`.
 */
export function success(requestId: string, value: unknown): ToolUseResult {
  const type = MessageType.TOOL_USE_RESULT;
  if (value instanceof ToolResponse) return fromResponse(requestId, value);
  if (value === undefined || value === null) return { type, id: requestId, success: true };
  const wire = toWire(value);
  const result = isPlainObject(wire) && !isValueObject(wire) ? (wire as WireMap) : ({ value: wire } as WireMap);
  return { type, id: requestId, success: true, result };
}

/** `{"value": x}` stands for `x`: a map whose only key is `value` travels wrapped again. */
function isValueObject(value: Record<string, unknown>): boolean {
  const keys = Object.keys(value);
  return keys.length === 1 && keys[0] === "value";
}

function fromResponse(requestId: string, response: ToolResponse): ToolUseResult {
  const base: ToolUseResult = { type: MessageType.TOOL_USE_RESULT, id: requestId, success: response.success };
  if (!response.success) {
    base.errorCode = response.errorCode ?? "execution_error";
    base.errorMessage = response.errorMessage ?? "the tool failed";
  }
  if (response.content.length > 0) base.content = response.content.map((item) => toWire(item) as ContentItem);
  if (response.augmentation !== undefined) base.augmentation = toWire(response.augmentation) as Augmentation;
  return base;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Turn a handler's value into what MessagePack carries, with JSON's rules: `toJSON()` is called
 * (a `Date` becomes its ISO text), undefined and functions leave objects (and become null in
 * arrays), `Uint8Array` stays binary, a `Map` becomes a map of string keys.
 *
 * @throws UsageError for what cannot travel: a bigint, a cycle.
 */
export function toWire(value: unknown, seen: Set<object> = new Set()): unknown {
  if (value === null || typeof value === "boolean" || typeof value === "string") return value;
  if (typeof value === "number") return value;
  if (typeof value === "bigint") throw new UsageError("a bigint cannot be sent: convert it to a number or a string");
  if (typeof value !== "object") return undefined; // undefined, functions, symbols
  if (value instanceof Uint8Array) return value;
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === "function") return toWire(withJson.toJSON(), seen);
  if (seen.has(value)) throw new UsageError("a value that contains itself cannot be sent");
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => toWire(item, seen) ?? null);
    const entries = value instanceof Map ? [...value.entries()].map(([k, v]) => [String(k), v]) : Object.entries(value);
    const out: Record<string, unknown> = {};
    for (const [key, item] of entries as [string, unknown][]) {
      const converted = toWire(item, seen);
      if (converted !== undefined) Object.defineProperty(out, key, { value: converted, enumerable: true, writable: true, configurable: true });
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

// -- the argument check ----------------------------------------------------------------------

/** The problems of `args` against the parts of a `parametersSchema` this client checks ("" when none). */
export function argumentProblems(schema: JsonSchema | undefined, args: WireMap): string {
  if (schema === undefined) return "";
  const problems: string[] = [];
  const properties = isPlainObject(schema["properties"]) ? (schema["properties"] as Record<string, unknown>) : {};
  const required = Array.isArray(schema["required"]) ? schema["required"] : [];
  for (const name of required) {
    if (typeof name === "string" && !Object.prototype.hasOwnProperty.call(args, name)) {
      problems.push(`'${name}' is a required property`);
    }
  }
  for (const [name, value] of Object.entries(args)) {
    const property = properties[name];
    if (property === undefined) {
      if (schema["additionalProperties"] === false) problems.push(`'${name}' is not an allowed property`);
      continue;
    }
    const wanted = isPlainObject(property) ? property["type"] : undefined;
    const types = typeof wanted === "string" ? [wanted] : Array.isArray(wanted) ? wanted : [];
    if (types.length > 0 && !types.some((type) => hasType(value, type))) {
      problems.push(`'${name}' must be of type ${types.join(" or ")}`);
    }
  }
  return problems.join("; ");
}

function hasType(value: unknown, type: unknown): boolean {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "number":
      return typeof value === "number";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return isPlainObject(value);
    default:
      return true; // a type this check does not know: the server's validation decides
  }
}

// -- handlers --------------------------------------------------------------------------------

const ENVELOPE_ALLOWANCE = 256; // room for the real envelope's conversation id and stanza id

/** The functions that run the client's tools, and the schemas their arguments must match. */
export class Handlers {
  private readonly handlers = new Map<string, ToolHandlerSpec>();
  /** Tool name → its registered `parametersSchema`. */
  readonly schemas = new Map<string, JsonSchema>();

  constructor(readonly limits: Limits = DEFAULT_LIMITS) {}

  /** Run `handler` for requests of tool `name` (replacing a handler of the same name). */
  add(name: string, handler: ToolHandler | ToolHandlerSpec): void {
    const spec = typeof handler === "function" ? { handler } : handler;
    if (typeof spec.handler !== "function") throw new UsageError(`the handler for '${name}' must be a function`);
    if (spec.timeoutMs !== undefined && !(spec.timeoutMs > 0)) {
      throw new UsageError(`the timeout of '${name}' must be a positive number of milliseconds`);
    }
    this.handlers.set(name, spec);
  }

  /** Whether a handler runs tool `name`. */
  has(name: string): boolean {
    return this.handlers.has(name);
  }

  /** Remember the parameters schemas of the groups' tools (after the server accepted them). */
  learn(groups: readonly ClientToolGroup[]): void {
    for (const group of groups) {
      for (const tool of group.tools ?? []) {
        if (tool.parametersSchema !== undefined) this.schemas.set(tool.name, tool.parametersSchema);
        else this.schemas.delete(tool.name);
      }
    }
  }

  /**
   * Run the request's handler and return the answer; never rejects.
   *
   * @param cancel aborting it stops waiting for the handler (whose own signal is aborted too);
   *   the answer is then `canceled`, or the code and message of the `ToolError` it was aborted with.
   */
  async run(request: ToolUseRequest, cancel?: AbortSignal): Promise<ToolUseResult> {
    const { id, toolName: name } = request;
    const spec = this.handlers.get(name);
    if (spec === undefined) return failure(id, "unknown_tool", `This client has no tool '${name}'.`);
    const problems = argumentProblems(this.schemas.get(name), request.arguments);
    if (problems) return failure(id, "invalid_parameters", `Invalid arguments for tool '${name}': ${problems}`);
    let deadline = request.timeoutMs ?? 30_000;
    if (spec.timeoutMs !== undefined) deadline = Math.min(deadline, Math.max(1, Math.round(spec.timeoutMs)));
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stop: (() => void) | undefined;
    const ended = new Promise<ToolUseResult>((resolve) => {
      timer = setTimeout(() => {
        const answer = timeoutFailure(id, deadline);
        controller.abort(new ToolError(answer.errorMessage ?? "", { code: "timeout" }));
        resolve(answer);
      }, deadline);
      stop = () => {
        const reason: unknown = cancel?.reason;
        if (reason instanceof ToolError) {
          controller.abort(reason);
          resolve(failure(id, reason.code, reason.message));
          return;
        }
        controller.abort(new ToolError("the client was closed", { code: "canceled" }));
        resolve(failure(id, "canceled", "the client was closed while the tool ran"));
      };
      if (cancel?.aborted) stop();
      cancel?.addEventListener("abort", stop);
    });
    const ran = (async (): Promise<ToolUseResult> => {
      try {
        const value: unknown = await spec.handler(request.arguments, { request, signal: controller.signal });
        return this.checked(success(id, value));
      } catch (error) {
        if (error instanceof ToolError) return toolError(id, error);
        const message = error instanceof Error ? error.message || error.name : String(error);
        return failure(id, "execution_error", message || "the tool failed");
      }
    })();
    try {
      return await Promise.race([ran, ended]);
    } finally {
      clearTimeout(timer);
      if (stop !== undefined) cancel?.removeEventListener("abort", stop);
    }
  }

  /** Refuse values that cannot travel: not MessagePack-able, beyond the limits, larger than a frame. */
  private checked(result: ToolUseResult): ToolUseResult {
    let frame: Uint8Array;
    try {
      frame = encode({ stanzaId: 1, conversationId: "c", message: result, meta: {} });
      check(frame, this.limits); // what the server would refuse, refused here
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return failure(result.id, "execution_error", `the tool's value cannot be sent: ${reason}`);
    }
    if (frame.byteLength > this.limits.maxFrameBytes - ENVELOPE_ALLOWANCE) {
      const message = `the tool's value is ${frame.byteLength} bytes, more than a frame holds (${this.limits.maxFrameBytes})`;
      return failure(result.id, "result_too_large", message);
    }
    return result;
  }
}

function toolError(requestId: string, error: ToolError): ToolUseResult {
  const result = failure(requestId, error.code, error.message);
  if (error.terminal) result.terminal = true;
  if (!error.needsFollowup) result.needsFollowup = false;
  return result;
}

// -- the ledger ------------------------------------------------------------------------------

/** How the server settled a call without this client's result (a ToolUseCancel). */
export interface Withdrawal {
  /** `timeout`, `canceled`, `client_disconnected`, ... */
  code: string;
  reason?: string;
}

/** One request id in the ledger. */
export interface Execution {
  request: ToolUseRequest;
  /** What was answered; undefined while the handler runs, and when the call was withdrawn first. */
  result?: ToolUseResult;
  durationMs?: number;
  /** The stanza id `result` was first sent with (an ErrorMessage 302 refusing it names it). */
  stanzaId?: number;
  /** The server settled the call without this client's result: nothing (more) is sent for it. */
  withdrawn?: Withdrawal;
}

/** Whether an execution is over: answered, or withdrawn by the server. */
export function settled(entry: Execution): boolean {
  return entry.result !== undefined || entry.withdrawn !== undefined;
}

/** Request id → its one execution; at most `maxEntries` settled ones are kept, oldest dropped. */
export class ExecutionLedger {
  private readonly entries = new Map<string, Execution>();

  constructor(readonly maxEntries = 1_000) {}

  /** The execution of `requestId`, if this client has seen it. */
  get(requestId: string): Execution | undefined {
    return this.entries.get(requestId);
  }

  /**
   * Record that `request` runs now; call `get()` first, a request id starts only once.
   *
   * @throws UsageError the request id is already in the ledger.
   */
  start(request: ToolUseRequest): Execution {
    if (this.entries.has(request.id)) throw new UsageError(`request '${request.id}' already ran: answer it from the ledger`);
    const entry: Execution = { request };
    this.entries.set(request.id, entry);
    this.trim();
    return entry;
  }

  /** Put an entry back, e.g. from persisted state. */
  restore(entry: Execution): void {
    this.entries.set(entry.request.id, entry);
    this.trim();
  }

  /** The execution whose result was first sent with stanza id `stanzaId` (an ErrorMessage 302 names it). */
  sentWith(stanzaId: number): Execution | undefined {
    for (const entry of this.entries.values()) if (entry.stanzaId === stanzaId) return entry;
    return undefined;
  }

  /** Every execution, oldest first. */
  list(): Execution[] {
    return [...this.entries.values()];
  }

  get size(): number {
    return this.entries.size;
  }

  private trim(): void {
    while (this.entries.size > this.maxEntries) {
      const oldest = [...this.entries.entries()].find(([, entry]) => settled(entry));
      if (oldest === undefined) return;
      this.entries.delete(oldest[0]);
    }
  }
}
