/**
 * `Connection`: the sans-I/O state machine of one end of a conversation, the TypeScript twin of
 * `toolwire.protocol.Connection`.
 *
 * Feed it the bytes of each frame with `receive()` and act on `Received.messages`; write
 * `Received.replies`, and close when `Received.close` says so. Send with `send()`, which returns
 * the bytes to write. Nothing here reads a socket or a clock.
 *
 * Rules (docs/protocol.md, "Sequencing, acknowledgements and resume"):
 *
 * - Stanza ids: client messages count 1, 2, 3…, server messages -1, -2, -3…. Configuration,
 *   Acknowledgement and the ErrorMessages a connection writes about a frame carry 0.
 * - A numbered stanza not beyond the last one seen from the peer is a duplicate and is dropped
 *   silently. Every numbered stanza that was delivered, or refused with an error, counts as seen.
 * - `ack()` returns one cumulative Acknowledgement of everything seen; call it after acting on (and
 *   persisting) what `receive()` returned. `receive()` also adds one by itself when `ackEvery`
 *   stanzas delivered by earlier calls are still unacknowledged.
 * - An Acknowledgement of stanza n drops the frames up to |n| from the outbox; the others are
 *   resent, with their original stanza ids, after the peer's next handshake.
 * - Handshake: the client's first frame is a Configuration (`hello()`); the server surfaces it and
 *   calls `accept()` (its Configuration, then the replay) or `refuse()`. The client replays its own
 *   outbox on the server's answer.
 *
 * @module
 */

import { encode, DEFAULT_LIMITS, type Frame, type Limits, readFrame } from "./codec.js";
import { ErrorCode, ProtocolError, UsageError } from "./errors.js";
import type { Configuration, Envelope, ErrorMessage, Message } from "./messages.js";
import { type Role, Sequencer, type Sequencing } from "./sequencing.js";
import { MessageType, type WireMap } from "./wire.js";

type Phase = "handshake" | "accepting" | "open" | "closed";

const UNNUMBERED: ReadonlySet<number> = new Set([MessageType.CONFIGURATION, MessageType.ACKNOWLEDGEMENT]);

/** What one `receive()` produced. */
export interface Received {
  /** New messages from the peer to act on, in order (duplicates and acknowledgements removed). */
  messages: Envelope[];
  /** Frames to write back now, in order: ErrorMessages, an Acknowledgement, or the client's replay. */
  replies: Uint8Array[];
  /** Close the connection after writing `replies` (a non-recoverable error, either side's). */
  close: boolean;
  /** The refusals the ErrorMessages in `replies` describe, for logs. */
  errors: ProtocolError[];
}

/** Options of a `Connection`. */
export interface ConnectionOptions {
  /** Sequencing to continue from (see `Connection.resume`). */
  state?: Sequencing | undefined;
  /** What `receive()` accepts. */
  limits?: Limits;
  /** Acknowledge by itself once this many stanzas wait for an acknowledgement (32). */
  ackEvery?: number;
  /** Unacknowledged frames kept for replay; the oldest go first beyond it (10,000). */
  maxOutbox?: number;
  /** Makes the ids of the ErrorMessages this connection writes. */
  newId?: () => string;
}

/** A random id: `prefix_` and 128 bits as hex. */
export function newId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `${prefix}_${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

function received(messages: Envelope[] = [], replies: Uint8Array[] = [], close = false, errors: ProtocolError[] = []): Received {
  return { messages, replies, close, errors };
}

/** One end of a conversation on one connection; see the module docs for the rules. */
export class Connection {
  readonly role: Role;
  readonly limits: Limits;
  readonly ackEvery: number;
  readonly maxOutbox: number;
  private readonly newId: () => string;
  private readonly sign: 1 | -1;
  private phase: Phase = "handshake";
  private seq: Sequencer;
  private requested: string | undefined;
  private helloReceived: Configuration | undefined;

  constructor(role: Role, options: ConnectionOptions = {}) {
    const { state } = options;
    if (state !== undefined && state.role !== role) {
      throw new UsageError(`a ${state.role} state cannot resume a ${role} connection`);
    }
    this.role = role;
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.ackEvery = options.ackEvery ?? 32;
    this.maxOutbox = options.maxOutbox ?? 10_000;
    this.newId = options.newId ?? (() => newId("err"));
    this.sign = role === "client" ? 1 : -1;
    this.seq = new Sequencer(undefined, this.maxOutbox, state);
  }

  /**
   * Continue a conversation from exported state, e.g. after a reconnect or a page reload.
   *
   * `send()` on a resumed connection keeps frames in the outbox (and returns empty bytes) until a
   * handshake replays them.
   */
  static resume(state: Sequencing, options: Omit<ConnectionOptions, "state"> = {}): Connection {
    return new Connection(state.role, { ...options, state });
  }

  /** The conversation this end is bound to, once known. */
  get conversationId(): string | undefined {
    return this.seq.conversationId;
  }

  /** True between a completed handshake and a close. */
  get isOpen(): boolean {
    return this.phase === "open";
  }

  /** True after a non-recoverable error; `receive()` then ignores everything. */
  get closed(): boolean {
    return this.phase === "closed";
  }

  /** The absolute id of the last numbered stanza this end sent (0 before any). */
  get lastStanza(): number {
    return this.seq.next - 1;
  }

  /** Export the sequencing state to persist (undefined before a conversation is bound). */
  state(): Sequencing | undefined {
    return this.seq.export(this.role);
  }

  // -- handshake ------------------------------------------------------------------------------

  /**
   * Client: return the Configuration that opens the connection; write it first.
   *
   * @param conversationId The conversation to resume; defaults to the resumed state's, else new.
   */
  hello(
    conversationId?: string,
    options: { clientVersion?: string; device?: string; features?: string[] } = {},
  ): Uint8Array {
    this.require("client", "hello");
    const requested = conversationId ?? this.seq.conversationId ?? "";
    if (requested !== this.seq.conversationId) {
      // A new conversation, or another than the state's.
      this.seq = new Sequencer(requested || undefined, this.maxOutbox);
    }
    this.requested = requested;
    const hello: Configuration = {
      type: MessageType.CONFIGURATION,
      conversationId: requested,
      lastSequenceSeen: this.seq.lastSeen,
      ...(options.clientVersion !== undefined && { clientVersion: options.clientVersion }),
      ...(options.device !== undefined && { device: options.device }),
      features: options.features ?? [],
    };
    return encode({ stanzaId: 0, conversationId: requested, message: hello, meta: {} });
  }

  /**
   * Server: bind the conversation the client's Configuration asked for, or a new one.
   *
   * @returns the frames to write: the server's Configuration, then the frames the client missed.
   */
  accept(conversationId: string, options: { state?: Sequencing | undefined; features?: string[] } = {}): Uint8Array[] {
    this.require("server", "accept");
    if (this.phase !== "accepting" || this.helloReceived === undefined) {
      throw new UsageError("accept() answers a client's Configuration: call it after receive() surfaced one");
    }
    const { state } = options;
    if (state !== undefined && state.conversationId !== conversationId) {
      throw new UsageError(`the state is for conversation '${state.conversationId}', not '${conversationId}'`);
    }
    if (state !== undefined || this.seq.conversationId !== conversationId) {
      this.seq = new Sequencer(conversationId, this.maxOutbox, state);
    }
    const hello = this.helloReceived;
    const peerSeen = hello.conversationId ? (hello.lastSequenceSeen ?? 0) : 0;
    const answer: Configuration = {
      type: MessageType.CONFIGURATION,
      conversationId,
      lastSequenceSeen: this.seq.lastSeen,
      features: options.features ?? [],
    };
    this.phase = "open";
    return [encode({ stanzaId: 0, conversationId, message: answer, meta: {} }), ...this.seq.replayAfter(peerSeen)];
  }

  /** Server: return a non-recoverable ErrorMessage (e.g. 201, 202, 401) and close this connection. */
  refuse(code: number, message: string): Uint8Array {
    this.phase = "closed";
    return this.errorFrame(new ProtocolError(code, message, false));
  }

  // -- sending --------------------------------------------------------------------------------

  /**
   * Number a message, keep it until acknowledged, and return the frame to write.
   *
   * @returns the frame; empty while the connection is not open (the frame then waits in the
   *   outbox and goes out with the next handshake's replay).
   * @throws UsageError no conversation is bound yet, or the message is one the connection writes itself.
   * @throws ProtocolError 104 when the frame exceeds `limits.maxFrameBytes`; nothing was sent.
   */
  send(message: Message, meta: WireMap = {}): Uint8Array {
    if (UNNUMBERED.has(message.type)) {
      throw new UsageError("Configuration and Acknowledgement are written by hello(), accept() and ack(), not send()");
    }
    const conversationId = this.seq.conversationId;
    if (conversationId === undefined) {
      throw new UsageError("no conversation yet: send after the handshake, or resume a state");
    }
    const frame = encode({ stanzaId: this.sign * this.seq.next, conversationId, message, meta });
    if (frame.byteLength > this.limits.maxFrameBytes) {
      throw new ProtocolError(ErrorCode.FRAME_TOO_LARGE, `a frame of ${frame.byteLength} bytes exceeds the limit`);
    }
    this.seq.keep(frame);
    return this.phase === "open" ? frame : new Uint8Array(0);
  }

  /** How many stanzas were seen since the last Acknowledgement this end wrote. */
  get unacknowledged(): number {
    return this.seq.unacknowledged();
  }

  /**
   * Return a cumulative Acknowledgement of every stanza seen, or undefined if nothing is new.
   *
   * @param upto acknowledge only up to this stanza (absolute value), e.g. the last one whose
   *   effects are persisted; every stanza seen by default.
   */
  ack(upto?: number): Uint8Array | undefined {
    const seq = this.seq;
    const last = upto === undefined ? seq.lastSeen : Math.min(Math.abs(upto), seq.lastSeen);
    if (this.phase !== "open" || seq.conversationId === undefined || last <= seq.acked) return undefined;
    seq.acked = last;
    const message = { type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: -this.sign * last };
    return encode({ stanzaId: 0, conversationId: seq.conversationId, message, meta: {} });
  }

  // -- receiving ------------------------------------------------------------------------------

  /** Take one frame from the peer; never throws for anything the peer sends. */
  receive(data: Uint8Array): Received {
    if (this.phase === "closed") return received();
    const replies: Uint8Array[] = [];
    if (this.phase === "open" && this.seq.unacknowledged() >= this.ackEvery) {
      const ack = this.ack();
      if (ack !== undefined) replies.push(ack);
    }
    try {
      const frame = readFrame(data, this.limits);
      return this.phase !== "open" ? this.handshake(frame, replies) : this.opened(frame, replies);
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      if (this.phase !== "open") {
        // A peer that cannot even open the conversation is not spoken to any further.
        error.recoverable = false;
      }
      if (!error.recoverable) this.phase = "closed";
      return received([], [...replies, this.errorFrame(error)], !error.recoverable, [error]);
    }
  }

  private opened(frame: Frame, replies: Uint8Array[]): Received {
    const numbered = frame.stanzaId !== 0 && !UNNUMBERED.has(frame.type);
    if (numbered) {
      if (frame.stanzaId * this.sign > 0) {
        const peer = this.role === "client" ? "server" : "client";
        const message = `envelope.stanzaId ${frame.stanzaId} has the wrong sign for a ${peer} message`;
        throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message, undefined, frame.stanzaId);
      }
      if (!this.seq.see(frame.stanzaId)) return received([], replies); // a duplicate: dropped silently
    }
    if (frame.type === MessageType.CONFIGURATION) {
      const message = `this connection is bound to conversation '${this.seq.conversationId}'; open a new one`;
      throw new ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message);
    }
    const envelope = frame.open();
    const message = envelope.message;
    if (message.type === MessageType.ACKNOWLEDGEMENT) {
      this.seq.acknowledged(Math.abs(message.acknowledgedStanzaId));
      return received([], replies);
    }
    if (message.type === MessageType.ERROR && message.recoverable === false) {
      this.phase = "closed";
      return received([envelope], replies, true);
    }
    return received([envelope], replies);
  }

  private handshake(frame: Frame, replies: Uint8Array[]): Received {
    if (this.phase === "accepting") {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "wait for the server's Configuration before sending");
    }
    if (
      (frame.type !== MessageType.CONFIGURATION && frame.type !== MessageType.ERROR) ||
      (frame.type === MessageType.ERROR && this.role === "server")
    ) {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration");
    }
    const envelope = frame.open();
    const message = envelope.message;
    if (message.type === MessageType.ERROR) {
      const recoverable = message.recoverable !== false;
      if (!recoverable) this.phase = "closed";
      return received([envelope], replies, !recoverable);
    }
    if (message.type !== MessageType.CONFIGURATION) {
      throw new ProtocolError(ErrorCode.HANDSHAKE_REQUIRED, "the first message must be a Configuration");
    }
    if (this.role === "server") {
      this.helloReceived = message;
      this.phase = "accepting";
      return received([envelope], replies);
    }
    return received([envelope], [...replies, ...this.answered(message)]);
  }

  /** Client: the server bound a conversation; resend what it has not seen. */
  private answered(config: Configuration): Uint8Array[] {
    const bound = config.conversationId ?? "";
    if (!bound) {
      throw new ProtocolError(ErrorCode.INVALID_MESSAGE, "the server's Configuration must name the conversation");
    }
    if (this.requested && bound !== this.requested) {
      const message = `asked to resume '${this.requested}', the server bound '${bound}'`;
      throw new ProtocolError(ErrorCode.CONVERSATION_SWITCH_REFUSED, message, false);
    }
    if (this.seq.conversationId !== bound) this.seq = new Sequencer(bound, this.maxOutbox);
    this.phase = "open";
    return this.seq.replayAfter(config.lastSequenceSeen ?? 0);
  }

  private require(role: Role, method: string): void {
    if (this.role !== role) throw new UsageError(`${method}() is for the ${role} end of a connection`);
  }

  private errorFrame(error: ProtocolError): Uint8Array {
    const message: ErrorMessage = {
      type: MessageType.ERROR,
      id: this.newId(),
      code: error.code,
      message: error.detail,
      severity: error.severity,
      recoverable: error.recoverable,
      ...(error.originatingId !== undefined && { originatingId: error.originatingId }),
    };
    return encode({ stanzaId: 0, conversationId: this.seq.conversationId ?? "", message, meta: {} });
  }
}
