/**
 * `ClientState`: everything a client must remember so that a reloaded page resumes its
 * conversation, as JSON (e.g. in `localStorage`).
 *
 * It holds the protocol's sequencing (numbering, last stanza seen, unacknowledged frames: the same
 * form as Python's `Sequencing.to_dict()`), the execution ledger (each client tool request, its
 * answer once there is one and the stanza id it went out with, or the server's withdrawal) and the
 * consent prompts (each request, and its answer). Messages
 * are stored as base64 MessagePack bodies, so binary content survives. `webStorage()` keeps it
 * under one key of a `Storage`.
 *
 * @module
 */

import { DEFAULT_LIMITS, packValue, unpackValue } from "./codec.js";
import { UsageError } from "./errors.js";
import { parseBody, toBody } from "./bodies.js";
import type { ConsentAnswer, ConsentRequest, Message, ToolUseRequest, ToolUseResult } from "./messages.js";
import { fromBase64, type SequencingJSON, toBase64 } from "./sequencing.js";
import type { Execution, Withdrawal } from "./tools.js";
import { isMap, MessageType } from "./wire.js";

/** The JSON a client persists; see the module docs. */
export interface ClientState {
  version: 1;
  /** The protocol's state; null before the first handshake bound a conversation. */
  sequencing: SequencingJSON | null;
  /**
   * Client tool requests (base64 MessagePack bodies), with the answer once sent and its stanza id,
   * or how the server withdrew the call (ToolUseCancel: nothing is sent for it, it never runs again).
   */
  ledger: { request: string; result?: string; stanzaId?: number; withdrawn?: Withdrawal }[];
  /** Consent requests, with the answer once given. */
  consents: { request: string; answer?: string }[];
}

/** Where a client keeps its state: read once when it connects, written after every change. */
export interface StateStore {
  load(): ClientState | undefined;
  save(state: ClientState): void;
}

/** The part of the Web Storage interface `webStorage` uses (`localStorage`, `sessionStorage`). */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/**
 * Keep a client's state under `key` of a `Storage` (`localStorage` survives reloads and restarts,
 * `sessionStorage` only reloads of one tab).
 */
export function webStorage(storage: StorageLike, key: string): StateStore {
  return {
    load() {
      const text = storage.getItem(key);
      if (text === null) return undefined;
      try {
        return JSON.parse(text) as ClientState;
      } catch {
        return undefined; // unreadable: start afresh rather than fail to connect
      }
    },
    save(state) {
      storage.setItem(key, JSON.stringify(state));
    },
  };
}

const packed = new WeakMap<object, string>();

/** The base64 MessagePack body of a message (cached: a message is packed once). */
export function packMessage(message: Message): string {
  let text = packed.get(message);
  if (text === undefined) {
    text = toBase64(packValue(toBody(message)));
    packed.set(message, text);
  }
  return text;
}

/**
 * Read a message of `type` that `packMessage` wrote.
 *
 * @throws UsageError the text is not such a message.
 */
export function unpackMessage<T extends Message>(type: T["type"], text: string): T {
  try {
    const body = unpackValue(fromBase64(text), DEFAULT_LIMITS);
    if (!isMap(body)) throw new UsageError("not a map");
    return parseBody(type, body) as T;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UsageError(`not a stored message of type ${type}: ${reason}`);
  }
}

/** A `ClientState`'s ledger and consents, read back. */
export interface RestoredState {
  ledger: Execution[];
  consents: { request: ConsentRequest; answer?: ConsentAnswer }[];
}

/**
 * Read the ledger and consents of a state.
 *
 * @throws UsageError the state is not a `ClientState` of this version.
 */
export function readState(state: ClientState): RestoredState {
  if (state?.version !== 1 || !Array.isArray(state.ledger) || !Array.isArray(state.consents)) {
    throw new UsageError("not a toolwire ClientState (version 1)");
  }
  return {
    ledger: state.ledger.map((entry) => ({
      request: unpackMessage<ToolUseRequest>(MessageType.TOOL_USE_REQUEST, entry.request),
      ...(entry.result !== undefined && {
        result: unpackMessage<ToolUseResult>(MessageType.TOOL_USE_RESULT, entry.result),
      }),
      ...(Number.isInteger(entry.stanzaId) && { stanzaId: entry.stanzaId }),
      ...(entry.withdrawn !== undefined && { withdrawn: withdrawal(entry.withdrawn) }),
    })),
    consents: state.consents.map((entry) => ({
      request: unpackMessage<ConsentRequest>(MessageType.CONSENT_REQUEST, entry.request),
      ...(entry.answer !== undefined && {
        answer: unpackMessage<ConsentAnswer>(MessageType.CONSENT_ANSWER, entry.answer),
      }),
    })),
  };
}

function withdrawal(value: unknown): Withdrawal {
  const { code, reason } = (isMap(value) ? value : {}) as { code?: unknown; reason?: unknown };
  if (typeof code !== "string") throw new UsageError("a ledger entry's withdrawal has no code");
  return { code, ...(typeof reason === "string" && { reason }) };
}
