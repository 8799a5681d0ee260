/**
 * `Sequencing`: what one end of a conversation remembers across connections and page reloads.
 *
 * A `Connection` exports it with `state()` and continues from it with `Connection.resume(state)`,
 * so that a new connection goes on numbering where the last one stopped and resends what the peer
 * missed. `sequencingToJSON` gives the JSON form of toolwire's Python `Sequencing.to_dict()`
 * (frames as base64), e.g. for `localStorage`.
 *
 * @module
 */

import { ErrorCode, ProtocolError, UsageError } from "./errors.js";

/** Which end: client stanza ids count 1, 2, 3…, server stanza ids -1, -2, -3…. */
export type Role = "server" | "client";

/** The numbering of one end of a conversation and the frames its peer has not acknowledged. */
export interface Sequencing {
  /** The end this state belongs to; it fixes the sign of its stanza ids. */
  role: Role;
  /** The conversation (thread) id. */
  conversationId: string;
  /** The absolute value of the next stanza id this end sends. */
  nextStanza: number;
  /** The absolute value of the last stanza processed from the peer (its `lastSequenceSeen`). */
  lastSeen: number;
  /** Frames sent and not acknowledged yet, as [absolute stanza id, frame bytes], oldest first. */
  outbox: [number, Uint8Array][];
}

/** The JSON form of a `Sequencing`, the same as Python's `Sequencing.to_dict()`. */
export interface SequencingJSON {
  role: Role;
  conversationId: string;
  nextStanza: number;
  lastSeen: number;
  outbox: [number, string][];
}

/** Return the JSON-safe form of a state (frames as base64). */
export function sequencingToJSON(state: Sequencing): SequencingJSON {
  return {
    role: state.role,
    conversationId: state.conversationId,
    nextStanza: state.nextStanza,
    lastSeen: state.lastSeen,
    outbox: state.outbox.map(([stanza, frame]) => [stanza, toBase64(frame)]),
  };
}

/**
 * Read the form `sequencingToJSON()` (or Python's `to_dict()`) gives.
 *
 * @throws UsageError the data is not such a form.
 */
export function sequencingFromJSON(data: unknown): Sequencing {
  const value = data as Partial<SequencingJSON> | null;
  const integer = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 0;
  if (
    typeof value !== "object" ||
    value === null ||
    (value.role !== "client" && value.role !== "server") ||
    typeof value.conversationId !== "string" ||
    !integer(value.nextStanza) ||
    !integer(value.lastSeen) ||
    !Array.isArray(value.outbox)
  ) {
    throw new UsageError("not a Sequencing state: expected {role, conversationId, nextStanza, lastSeen, outbox}");
  }
  const outbox = value.outbox.map((entry): [number, Uint8Array] => {
    if (!Array.isArray(entry) || !integer(entry[0]) || typeof entry[1] !== "string") {
      throw new UsageError("not a Sequencing state: outbox entries are [stanza, base64 frame]");
    }
    return [entry[0], fromBase64(entry[1])];
  });
  return { ...value, outbox } as Sequencing;
}

/** The live numbering of one end, which a `Connection` updates as frames come and go. */
export class Sequencer {
  conversationId: string | undefined;
  next: number;
  lastSeen: number;
  /** The last stanza seen that an Acknowledgement has covered. */
  acked: number;
  readonly outbox: Map<number, Uint8Array>;

  constructor(
    conversationId: string | undefined,
    readonly maxOutbox: number,
    state?: Sequencing,
  ) {
    this.conversationId = state === undefined ? conversationId : state.conversationId;
    this.next = state?.nextStanza ?? 1;
    this.lastSeen = state?.lastSeen ?? 0;
    // What a resumed state has seen, its next handshake's `lastSequenceSeen` tells the peer.
    this.acked = this.lastSeen;
    this.outbox = new Map(state?.outbox ?? []);
  }

  /** Return the state to persist, or undefined before a conversation is bound. */
  export(role: Role): Sequencing | undefined {
    if (this.conversationId === undefined) return undefined;
    return {
      role,
      conversationId: this.conversationId,
      nextStanza: this.next,
      lastSeen: this.lastSeen,
      outbox: [...this.outbox.entries()],
    };
  }

  /** Record a frame sent under the stanza number `next`, and move on to the following one. */
  keep(frame: Uint8Array): void {
    this.outbox.set(this.next, frame);
    this.next += 1;
    while (this.outbox.size > this.maxOutbox) {
      this.outbox.delete(this.outbox.keys().next().value!);
    }
  }

  /** Record a peer's stanza as processed; false when it is a duplicate. */
  see(stanza: number): boolean {
    if (Math.abs(stanza) <= this.lastSeen) return false;
    this.lastSeen = Math.abs(stanza);
    return true;
  }

  /**
   * Drop the frames up to stanza `upto` (absolute) from the outbox.
   *
   * @throws ProtocolError 105 when `upto` was never sent.
   */
  acknowledged(upto: number): void {
    if (upto >= this.next) {
      const message = `Acknowledgement of stanza ${upto}, which was never sent (the last is ${this.next - 1})`;
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
    }
    for (const stanza of [...this.outbox.keys()]) {
      if (stanza <= upto) this.outbox.delete(stanza);
    }
  }

  /** Return the frames after the peer's `lastSequenceSeen`, dropping those it has seen. */
  replayAfter(peerSeen: number): Uint8Array[] {
    this.acknowledged(Math.min(peerSeen, this.next - 1));
    // A peer that saw more than this end remembers sending lost our state: number on after it.
    this.next = Math.max(this.next, peerSeen + 1);
    return [...this.outbox.values()];
  }

  /** How many stanzas were seen since the last acknowledgement. */
  unacknowledged(): number {
    return this.lastSeen - this.acked;
  }
}

/** Base64 of bytes (browsers and node alike). */
export function toBase64(bytes: Uint8Array): string {
  let text = "";
  for (let at = 0; at < bytes.length; at += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  }
  return btoa(text);
}

/**
 * Bytes of base64.
 *
 * @throws UsageError not base64.
 */
export function fromBase64(text: string): Uint8Array {
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    throw new UsageError("not base64");
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
