/**
 * The wire's vocabulary: message type numbers, and a reader for the typed fields of a body.
 *
 * `Fields` reads one body; each method returns the field's value or throws `ProtocolError` 105
 * naming the message and the field (`ToolUseRequest.timeoutMs must be an integer ≥ 1, got a
 * string`). A field whose value is null counts as absent, as many encoders write nulls. Only own
 * properties are read: a body's `toString` is a field like any other, never Object's method.
 *
 * @module
 */

import { ErrorCode, ProtocolError } from "./errors.js";

/** The `type` of an envelope: the published protocol's numbers, and toolwire's own from 100. */
export const MessageType = {
  ERROR: 1,
  USER_MESSAGE: 2,
  ASSISTANT_MESSAGE: 3,
  TOOL_USE_REQUEST: 6,
  TOOL_USE_RESULT: 7,
  ACKNOWLEDGEMENT: 8,
  CONTROL_STOP: 10,
  CONFIGURATION: 12,
  START_ANSWER: 13,
  ASSISTANT_SENTENCE: 16,
  REGISTER_TOOLS: 100,
  REGISTER_TOOLS_RESULT: 101,
  CONSENT_REQUEST: 102,
  CONSENT_ANSWER: 103,
  RUN_STATUS: 104,
  TOOL_USE_CANCEL: 105,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/** The name of a known message type (`"USER_MESSAGE"`), or undefined. */
export function messageTypeName(type: number): keyof typeof MessageType | undefined {
  for (const [name, value] of Object.entries(MessageType)) {
    if (value === type) return name as keyof typeof MessageType;
  }
  return undefined;
}

/** A JSON-like value as MessagePack carries it (binary as `Uint8Array`). */
export type WireValue = null | boolean | number | string | Uint8Array | WireValue[] | WireMap;
/** A MessagePack map with string keys. */
export interface WireMap {
  [key: string]: WireValue;
}

/** Name a decoded value's type the way the protocol speaks of it ("a map", "a string"). */
export function kind(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "boolean") return "a boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a float";
  if (typeof value === "string") return "a string";
  if (value instanceof Uint8Array) return "binary";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "a map";
  return typeof value;
}

/** True for a plain decoded map (not an array, not binary). */
export function isMap(value: unknown): value is WireMap {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

/** The own property `key` of a map, undefined when absent or null. */
export function own(map: object, key: string): unknown {
  if (!Object.prototype.hasOwnProperty.call(map, key)) return undefined;
  const value: unknown = (map as Record<string, unknown>)[key];
  return value === null ? undefined : value;
}

interface Bounds {
  low?: number;
  high?: number;
}

/** Typed access to the fields of one message body. */
export class Fields {
  constructor(
    private readonly body: object,
    private readonly what: string,
  ) {}

  /** Return the 105 error for a field that is not what it should be. */
  refuse(key: string, expected: string, value: unknown): ProtocolError {
    const got = value === undefined || value === null ? "missing" : `got ${kind(value)}`;
    return new ProtocolError(ErrorCode.INVALID_MESSAGE, `${this.what}.${key} must be ${expected}, ${got}`);
  }

  /** The raw value of a field, undefined when absent or null. */
  get(key: string): unknown {
    return own(this.body, key);
  }

  /** Whether a field is present and not null. */
  has(key: string): boolean {
    return own(this.body, key) !== undefined;
  }

  /** A required string field. */
  text(key: string, nonEmpty = false): string {
    const value = this.get(key);
    if (typeof value !== "string" || (nonEmpty && value === "")) {
      throw this.refuse(key, nonEmpty ? "a non-empty string" : "a string", value);
    }
    return value;
  }

  /** A string field, `fallback` when absent. */
  textOr(key: string, fallback: string): string {
    return this.has(key) ? this.text(key) : fallback;
  }

  /** A string field, undefined when absent. */
  optionalText(key: string): string | undefined {
    return this.has(key) ? this.text(key) : undefined;
  }

  /** A boolean field; required when `fallback` is undefined. */
  flag(key: string, fallback?: boolean): boolean {
    const value = this.get(key);
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value !== "boolean") throw this.refuse(key, "a boolean", value);
    return value;
  }

  /** A boolean field, undefined when absent. */
  optionalFlag(key: string): boolean | undefined {
    return this.has(key) ? this.flag(key) : undefined;
  }

  /** An integer field within [`low`, `high`]; required when `fallback` is undefined. */
  integer(key: string, fallback?: number, bounds: Bounds = {}): number {
    const value = this.get(key);
    if (value === undefined && fallback !== undefined) return fallback;
    const { low, high } = bounds;
    if (
      typeof value !== "number" ||
      !Number.isInteger(value) ||
      (low !== undefined && value < low) ||
      (high !== undefined && value > high)
    ) {
      const range = low === undefined ? "" : high === undefined ? ` ≥ ${low}` : ` in ${low}..${high}`;
      throw this.refuse(key, `an integer${range}`, value);
    }
    return value;
  }

  /** An integer field, undefined when absent. */
  optionalInteger(key: string, bounds: Bounds = {}): number | undefined {
    return this.has(key) ? this.integer(key, undefined, bounds) : undefined;
  }

  /** A string field that must be one of `options`. */
  choice<T extends string>(key: string, options: readonly T[], fallback?: T): T {
    const value = this.get(key);
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value === "string" && (options as readonly string[]).includes(value)) return value as T;
    const shown = options.map((option) => `"${option}"`).join(" | ");
    if (typeof value === "string") {
      const quoted = `'${value}'`.slice(0, 40);
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, `${this.what}.${key} must be ${shown}, got ${quoted}`);
    }
    throw this.refuse(key, shown, value);
  }

  /** A map field; required when `fallback` is undefined. */
  mapping(key: string, fallback?: WireMap): WireMap {
    const value = this.get(key);
    if (value === undefined && fallback !== undefined) return fallback;
    if (!isMap(value)) throw this.refuse(key, "a map", value);
    return value;
  }

  /** A map field, undefined when absent. */
  optionalMapping(key: string): WireMap | undefined {
    return this.has(key) ? this.mapping(key) : undefined;
  }

  /** An array of strings; absent means empty. */
  texts(key: string): string[] {
    return this.array(key, (item) => typeof item === "string", "a string") as string[];
  }

  /** An array of maps; absent means empty. */
  mappings(key: string): WireMap[] {
    return this.array(key, isMap, "a map") as WireMap[];
  }

  private array(key: string, check: (item: unknown) => boolean, expected: string): unknown[] {
    const value = this.get(key);
    if (value === undefined) return [];
    if (!Array.isArray(value)) throw this.refuse(key, "an array", value);
    value.forEach((item: unknown, index) => {
      if (!check(item)) {
        const message = `${this.what}.${key}[${index}] must be ${expected}, got ${kind(item)}`;
        throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
      }
    });
    return [...(value as unknown[])];
  }
}
