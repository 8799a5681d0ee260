/**
 * MessagePack with limits: `encode(envelope)` and `decode(data)`, with the limits and the error
 * codes of toolwire's Python codec (docs/protocol.md, "Limits").
 *
 * A frame from a peer may be hostile. Before `@msgpack/msgpack` builds anything, `check()` walks
 * the bytes once without building values or recursing: every length, the number of maps and
 * arrays and the nesting depth are bounded, map keys must be unique strings, strings must be valid
 * UTF-8, and extension types and trailing bytes are refused. Every failure is a `ProtocolError`
 * with its code, never another exception.
 *
 * One extension is read: type 0 with the single byte 0x00 (`d4 00 00`), which msgpackr writes for
 * `undefined`. As a map value it makes the key absent, as `JSON.stringify` would; as an array item
 * it reads as null. Every other extension is refused (101), and so is `undefined` as a map key.
 *
 * `readFrame` is the first half of `decode`: it checks the bytes and the envelope and keeps the
 * body unread, so that a connection can drop a duplicate stanza before reading its body.
 *
 * @module
 */

import { decode as unpack, encode as pack, ExtensionCodec } from "@msgpack/msgpack";

import { ErrorCode, ProtocolError } from "./errors.js";
import { envelopeToMap, parseBody } from "./bodies.js";
import { CONVERSATION_IN_BODY, type Envelope, type Message } from "./messages.js";
import { type WireMap, type WireValue, isMap, kind, own } from "./wire.js";

const MiB = 1024 * 1024;
const INT32 = 2 ** 31 - 1;
const TRACE_FIELDS: readonly [string, string][] = [
  ["trace_id", "messaging.trace_id"],
  ["span_id", "messaging.span_id"],
];

/** Bounds on what `decode` accepts from a peer. */
export interface Limits {
  /** Bytes in one frame (the WebSocket message); 1 MiB. */
  maxFrameBytes: number;
  /** Bytes in one string; 1 MiB. */
  maxStrLen: number;
  /** Bytes in one binary value; 1 MiB. */
  maxBinLen: number;
  /** Items in one array; 65,536. */
  maxArrayLen: number;
  /** Pairs in one map; 65,536. */
  maxMapLen: number;
  /** Maps and arrays in the whole frame; 65,536. */
  maxContainers: number;
  /** Nesting of maps and arrays, the envelope being depth 1; 32. */
  maxDepth: number;
}

/** The defaults of the protocol: 1 MiB frames, depth 32, 65,536 items and containers. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxFrameBytes: MiB,
  maxStrLen: MiB,
  maxBinLen: MiB,
  maxArrayLen: 65_536,
  maxMapLen: 65_536,
  maxContainers: 65_536,
  maxDepth: 32,
});

/** A frame whose bytes and envelope were checked; the body is not read yet. */
export class Frame {
  constructor(
    /** As sent; 0 when the peer sent none. */
    readonly stanzaId: number,
    /** The envelope's conversation id ("" when absent). */
    readonly conversationId: string,
    /** The numeric message type, known or not. */
    readonly type: number,
    /** The metadata, with a dialect's top-level trace fields moved in. */
    readonly meta: WireMap,
    /** The body, unread. */
    readonly body: WireMap,
  ) {}

  /**
   * Read the body into its message.
   *
   * @throws ProtocolError 102 for an unknown type, 105 for a bad field; `originatingId` is the stanza id.
   */
  open(): Envelope {
    let message: Message;
    let conversationId: string;
    try {
      message = parseBody(this.type, this.body);
      conversationId = this.bodyConversation(message);
    } catch (error) {
      const origin = this.stanzaId || undefined;
      if (error instanceof ProtocolError) throw new ProtocolError(error.code, error.detail, error.recoverable, origin);
      // A bug here must not escape `decode`.
      throw new ProtocolError(ErrorCode.INTERNAL, "the message could not be read", true, origin);
    }
    return { stanzaId: this.stanzaId, conversationId, message, meta: this.meta };
  }

  private bodyConversation(message: Message): string {
    const inBody = own(this.body, "conversationId");
    if (!CONVERSATION_IN_BODY.has(message.type) || inBody === undefined || inBody === this.conversationId) {
      return this.conversationId;
    }
    if (typeof inBody !== "string") {
      refuse(ErrorCode.INVALID_MESSAGE, `body.conversationId must be a string, got ${kind(inBody)}`);
    }
    if (this.conversationId) {
      refuse(ErrorCode.INVALID_MESSAGE, "body.conversationId differs from the envelope's conversationId");
    }
    return inBody;
  }
}

/** Return the MessagePack frame of an envelope (deterministic: the same envelope, the same bytes). */
export function encode(envelope: Envelope): Uint8Array {
  return packValue(envelopeToMap(envelope));
}

/** Encode one value as toolwire does: maps in key order, binary as bin, no extension types. */
export function packValue(value: unknown): Uint8Array {
  return pack(value, { ignoreUndefined: true });
}

/**
 * Read one frame from a peer.
 *
 * @throws ProtocolError for every frame that is not a valid envelope; nothing else escapes.
 */
export function decode(data: Uint8Array, limits: Limits = DEFAULT_LIMITS): Envelope {
  return readFrame(data, limits).open();
}

/**
 * Check a frame's bytes and envelope, leaving the body unread (see `Frame.open`).
 *
 * @throws ProtocolError 104 too large, 101 not MessagePack (or an extension type, a non-string or
 *   repeated key, invalid UTF-8, trailing bytes), 106 a limit, 105 an envelope field.
 */
export function readFrame(data: Uint8Array, limits: Limits = DEFAULT_LIMITS): Frame {
  if (!(data instanceof Uint8Array)) refuse(ErrorCode.MALFORMED_FRAME, `a frame must be bytes, got ${kind(data)}`);
  if (data.byteLength > limits.maxFrameBytes) {
    refuse(ErrorCode.FRAME_TOO_LARGE, `frame of ${data.byteLength} bytes exceeds the limit of ${limits.maxFrameBytes}`);
  }
  const root = unpackValue(data, limits);
  return envelope(root);
}

/** What msgpackr's `undefined` reads as until `place()` drops it from its map. */
const ABSENT = Symbol("undefined");
const UNDEFINED = new ExtensionCodec();
// `check` lets through only extension 0 with the byte 0x00: what it decodes to needs no look.
UNDEFINED.register({ type: 0, encode: () => null, decode: () => ABSENT });

/**
 * Read one MessagePack value under `limits` (what `check` refuses is refused first).
 *
 * @throws ProtocolError 101 or 106, like `readFrame`.
 */
export function unpackValue(data: Uint8Array, limits: Limits = DEFAULT_LIMITS): unknown {
  const undefinedValues = check(data, limits);
  let value: unknown;
  try {
    value = unpack(data, {
      maxStrLength: limits.maxStrLen,
      maxBinLength: limits.maxBinLen,
      maxArrayLength: limits.maxArrayLen,
      maxMapLength: limits.maxMapLen,
      maxExtLength: 1,
      extensionCodec: UNDEFINED,
    });
  } catch {
    // `check` accepted it, so this is not expected; don't include details either way.
    return refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value");
  }
  return undefinedValues > 0 ? place(value) : value;
}

/** Drop msgpackr's `undefined` from the maps of `root` and turn it into null in its arrays, without recursion. */
function place(root: unknown): unknown {
  if (root === ABSENT) return null;
  const stack: unknown[] = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (Array.isArray(node)) {
      node.forEach((item: unknown, index) => {
        if (item === ABSENT) node[index] = null;
        else stack.push(item);
      });
    } else if (isMap(node)) {
      for (const [key, item] of Object.entries(node)) {
        if ((item as unknown) === ABSENT) delete node[key];
        else stack.push(item);
      }
    }
  }
  return root;
}

/**
 * Walk one MessagePack value in `data` and refuse what toolwire does not accept, without building
 * it: a `ProtocolError` 101 (malformed, extension, key, UTF-8, trailing bytes) or 106 (a limit).
 *
 * @returns how many of msgpackr's `undefined` (`d4 00 00`) it holds.
 */
export function check(data: Uint8Array, limits: Limits = DEFAULT_LIMITS): number {
  return new Scanner(data, limits).run();
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

interface Open {
  /** Items left to read: array items, or map keys and values (2 per pair). */
  left: number;
  /** The keys of a map seen so far; undefined for an array. */
  keys: Set<string> | undefined;
}

class Scanner {
  private pos = 0;
  private containers = 0;
  /** How many `undefined` values were read. */
  private undefinedValues = 0;
  private readonly view: DataView;
  private readonly stack: Open[] = [];

  constructor(
    private readonly data: Uint8Array,
    private readonly limits: Limits,
  ) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  run(): number {
    do {
      this.value();
      this.close();
    } while (this.stack.length > 0);
    if (this.pos !== this.data.byteLength) refuse(ErrorCode.MALFORMED_FRAME, "trailing bytes after the MessagePack value");
    return this.undefinedValues;
  }

  /** Pop the containers whose items were all read. */
  private close(): void {
    let top = this.stack[this.stack.length - 1];
    while (top !== undefined && top.left === 0) {
      this.stack.pop();
      top = this.stack[this.stack.length - 1];
    }
  }

  private value(): void {
    const top = this.stack[this.stack.length - 1];
    const isKey = top?.keys !== undefined && top.left % 2 === 0;
    if (top !== undefined) top.left -= 1;
    const byte = this.u8();
    if (isKey) {
      this.key(byte, top!.keys!);
      return;
    }
    if (byte <= 0x7f || byte >= 0xe0 || byte === 0xc0 || byte === 0xc2 || byte === 0xc3) return;
    if ((byte & 0xf0) === 0x80) return this.open(byte & 0x0f, true);
    if ((byte & 0xf0) === 0x90) return this.open(byte & 0x0f, false);
    if ((byte & 0xe0) === 0xa0) return this.string(byte & 0x1f);
    switch (byte) {
      case 0xc4:
      case 0xc5:
      case 0xc6: {
        const size = this.length(byte - 0xc4);
        if (size > this.limits.maxBinLen) limit(`${size} exceeds max_bin_len(${this.limits.maxBinLen})`);
        this.skip(size);
        return;
      }
      case 0xca:
        return this.skip(4);
      case 0xcb:
        return this.skip(8);
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:
        return this.skip(1 << (byte - 0xcc));
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3:
        return this.skip(1 << (byte - 0xd0));
      case 0xd9:
      case 0xda:
      case 0xdb:
        return this.string(this.length(byte - 0xd9));
      case 0xdc:
      case 0xdd:
        return this.open(this.length(byte - 0xdc + 1), false);
      case 0xde:
      case 0xdf:
        return this.open(this.length(byte - 0xde + 1), true);
      case 0xd4: // fixext 1: `d4 00 00` is msgpackr's undefined
      case 0xc7: // ext 8: `c7 01 00 00`, the same value in the longer form
        if (this.undefined(byte === 0xd4 ? [0x00, 0x00] : [0x01, 0x00, 0x00])) return;
        return refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted");
      case 0xc8:
      case 0xc9:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:
        return refuse(ErrorCode.MALFORMED_FRAME, "MessagePack extension types are not accepted");
      default: // 0xc1 is never used
        return refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value (truncated, or invalid bytes)");
    }
  }

  /** Read the rest of an `undefined` (`rest`: the bytes after the marker) if it is one. */
  private undefined(rest: number[]): boolean {
    if (this.pos + rest.length > this.data.byteLength) return false;
    if (rest.some((expected, offset) => this.data[this.pos + offset] !== expected)) return false;
    this.pos += rest.length;
    this.undefinedValues += 1;
    return true;
  }

  private key(byte: number, keys: Set<string>): void {
    let size: number;
    if ((byte & 0xe0) === 0xa0) size = byte & 0x1f;
    else if (byte >= 0xd9 && byte <= 0xdb) size = this.length(byte - 0xd9);
    else return refuse(ErrorCode.MALFORMED_FRAME, "map keys must be strings");
    const key = this.text(size);
    // A plain object cannot hold this key without changing its prototype.
    if (key === "__proto__") refuse(ErrorCode.MALFORMED_FRAME, "the map key __proto__ is not accepted");
    if (keys.has(key)) refuse(ErrorCode.MALFORMED_FRAME, "a map repeats a key");
    keys.add(key);
  }

  private string(size: number): void {
    this.text(size);
  }

  private text(size: number): string {
    if (size > this.limits.maxStrLen) limit(`${size} exceeds max_str_len(${this.limits.maxStrLen})`);
    const end = this.pos + size;
    if (end > this.data.byteLength) truncated();
    try {
      return utf8.decode(this.data.subarray(this.pos, (this.pos = end)));
    } catch {
      return refuse(ErrorCode.MALFORMED_FRAME, "a string is not valid UTF-8");
    }
  }

  private open(size: number, map: boolean): void {
    const max = map ? this.limits.maxMapLen : this.limits.maxArrayLen;
    if (size > max) limit(`${size} exceeds ${map ? "max_map_len" : "max_array_len"}(${max})`);
    this.containers += 1;
    if (this.containers > this.limits.maxContainers) limit("too many maps and arrays in one frame");
    // The new container sits one level below the innermost open one; the root is depth 1.
    if (this.stack.length + 1 > this.limits.maxDepth) limit(`maps and arrays nested deeper than ${this.limits.maxDepth}`);
    if (size > 0) this.stack.push({ left: map ? size * 2 : size, keys: map ? new Set() : undefined });
  }

  /** Read a big-endian length of 1, 2 or 4 bytes (`width` 0, 1, 2). */
  private length(width: number): number {
    const bytes = 1 << width;
    if (this.pos + bytes > this.data.byteLength) truncated();
    const at = this.pos;
    this.pos += bytes;
    if (bytes === 1) return this.view.getUint8(at);
    if (bytes === 2) return this.view.getUint16(at);
    return this.view.getUint32(at);
  }

  private u8(): number {
    if (this.pos >= this.data.byteLength) truncated();
    return this.data[this.pos++]!;
  }

  private skip(bytes: number): void {
    if (this.pos + bytes > this.data.byteLength) truncated();
    this.pos += bytes;
  }
}

function envelope(root: unknown): Frame {
  if (!isMap(root)) refuse(ErrorCode.INVALID_MESSAGE, `a frame must be a map (the envelope), got ${kind(root)}`);
  const wire = root;
  const stanzaId = own(wire, "stanzaId") ?? 0; // peers of one dialect number nothing
  if (typeof stanzaId !== "number" || !Number.isInteger(stanzaId) || stanzaId < -INT32 || stanzaId > INT32) {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.stanzaId must be an int32, got ${kind(stanzaId)}`);
  }
  const conversationId = own(wire, "conversationId") ?? "";
  if (typeof conversationId !== "string") {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.conversationId must be a string, got ${kind(conversationId)}`);
  }
  const type = own(wire, "type");
  if (typeof type !== "number" || !Number.isInteger(type) || type < 0 || type > 0xffff) {
    refuse(ErrorCode.INVALID_MESSAGE, `envelope.type must be a uint16, got ${kind(type)}`, stanzaId);
  }
  let meta = mapField(wire, "meta", stanzaId);
  const body = mapField(wire, "body", stanzaId);
  for (const [top, inside] of TRACE_FIELDS) {
    // A dialect puts tracing beside the envelope's fields instead of in meta.
    if (Object.prototype.hasOwnProperty.call(wire, top) && !Object.prototype.hasOwnProperty.call(meta, inside)) {
      meta = { ...meta, [inside]: wire[top] as WireValue };
    }
  }
  return new Frame(stanzaId, conversationId, type, meta, body);
}

function mapField(wire: WireMap, name: string, stanzaId: number): WireMap {
  const value = own(wire, name);
  if (value === undefined) return {};
  if (!isMap(value)) refuse(ErrorCode.INVALID_MESSAGE, `envelope.${name} must be a map, got ${kind(value)}`, stanzaId);
  return value;
}

function refuse(code: number, message: string, stanzaId = 0): never {
  throw new ProtocolError(code, message, undefined, stanzaId || undefined);
}

function limit(message: string): never {
  refuse(ErrorCode.LIMIT_EXCEEDED, message);
}

function truncated(): never {
  refuse(ErrorCode.MALFORMED_FRAME, "not a valid MessagePack value (truncated, or invalid bytes)");
}
