/**
 * `ToolwireClient`: one conversation with `toolwire serve`, and `connect()` to open it.
 *
 * The sans-I/O `Connection` does the numbering, the duplicates, the outbox and the replay; this
 * module only shuttles frames, runs handlers and consent prompts, keeps the execution ledger, and
 * turns what arrives into events.
 *
 * ```
 * frame ──► Connection.receive ──► ToolUseRequest(client)  ledger ──► handler ──► ToolUseResult
 *                                  ToolUseCancel            ledger: withdrawn, handler aborted, no result
 *                                  ErrorMessage 302         the result it names ──► resultRefused
 *                                  ConsentRequest           onConsent ──► ConsentAnswer
 *                                  the rest                 events, registration results
 *       ◄── state saved, then ack()
 * socket drops ──► backoff ──► Connection.resume(state) + hello(conversation): both outboxes replay
 * ```
 *
 * @module
 */

import { type Limits, DEFAULT_LIMITS } from "./codec.js";
import { Connection, newId } from "./connection.js";
import type { ConsentHandler } from "./consent.js";
import { ConnectionClosed, ErrorCode, RegistrationError, UsageError } from "./errors.js";
import { type ClientEvent, type ConnectionState, Run, streamEvent } from "./events.js";
import type { ClientToolGroup, Envelope, ErrorMessage, Message } from "./messages.js";
import { Requests } from "./requests.js";
import { outcomeOf } from "./results.js";
import { sequencingFromJSON, sequencingToJSON } from "./sequencing.js";
import { type ClientState, readState, type StateStore } from "./state.js";
import { ExecutionLedger, Handlers, type ToolHandler, type ToolHandlerSpec, toWire } from "./tools.js";
import type { TraceExecution } from "./tracing.js";
import {
  backoff,
  type Dialer,
  hintedUrl,
  type ReconnectOptions,
  socketUrl,
  type Transport,
  webSocketDialer,
} from "./transport.js";
import { MessageType } from "./wire.js";

/** The version this client announces. */
export const CLIENT_VERSION = "toolwire-web/0.1.0";
/** The optional features this client supports. */
export const FEATURES = ["clientTools", "consent", "runStatus", "resume", "runQueue"];
/** The feature that asks for an answer's AssistantMessage also after it was streamed (`wholeAnswers` option). */
export const WHOLE_ANSWERS = "wholeAnswers";
const MAX_REMEMBERED = 1_000;

/** Options of `connect()`. */
export interface ConnectOptions {
  /** Sent as the `token` query parameter (browsers cannot set headers on a WebSocket). */
  token: string;
  /** The conversation to continue; defaults to the persisted state's, else a new one. */
  conversationId?: string;
  /** Tool groups registered before `connect()` resolves. */
  groups?: ClientToolGroup[];
  /** Groups or skills to offer expanded from the start. */
  expandedContainers?: string[];
  /** Tool name → the function that runs it (or `{handler, timeoutMs}`). */
  handlers?: Record<string, ToolHandler | ToolHandlerSpec>;
  /** Answers the server's consent prompts; without it every call needing consent is denied. */
  onConsent?: ConsentHandler;
  /** Everything that happens (see `ClientEvent`). */
  onEvent?: (event: ClientEvent) => void;
  /** State to resume from (see `ToolwireClient.exportState()`); `persist`'s when absent. */
  state?: ClientState;
  /** Where the state is read from and saved to after every change (e.g. `webStorage(localStorage, key)`). */
  persist?: StateStore;
  /** Reconnect and resume when the connection drops (`false`: don't). */
  reconnect?: ReconnectOptions | false;
  /** What a frame from the server may contain. */
  limits?: Limits;
  /** How to reach the server; the global WebSocket by default. */
  dial?: Dialer;
  clientVersion?: string;
  device?: string;
  /** Milliseconds to wait for the server's Configuration (10,000). */
  handshakeTimeoutMs?: number;
  /** Finished executions kept in the ledger (1,000). */
  ledgerSize?: number;
  /**
   * Also receive a streamed answer whole, as an `assistantMessage` event after its `answerText`
   * events (the `wholeAnswers` feature); by default a streamed answer arrives once, streamed,
   * and only an answer that was not streamed arrives as an `assistantMessage`.
   */
  wholeAnswers?: boolean;
  /**
   * Wraps each execution of a client tool handler, told the tool, the call and the server's call
   * span when the request's envelope named it (`messaging.trace_id` / `messaging.span_id` in its
   * `meta`): record the execution as that span's child. `openTelemetryTracing()` from
   * `@toolwire/client/otel` makes one with OpenTelemetry; without it nothing is traced.
   */
  traceExecution?: TraceExecution;
}

/** Options of `register()`. */
export interface RegisterOptions {
  expandedContainers?: string[];
  /** Forget the thread's client state (expansion, hidden tools, context) first. */
  resetClientState?: boolean;
}

/**
 * Connect to a toolwire server, open (or resume) a conversation and register tool groups.
 *
 * ```ts
 * const client = await connect("ws://127.0.0.1:8765/ws", { token, groups: [page], handlers: { GetSelection } });
 * const answer = await client.ask("What did I select?");
 * ```
 *
 * @throws ConnectionClosed the server cannot be reached or refused (token, unknown conversation).
 * @throws RegistrationError the groups were refused.
 */
export async function connect(url: string, options: ConnectOptions): Promise<ToolwireClient> {
  const client = new ToolwireClient(url, options);
  await client.open();
  if (options.groups !== undefined && options.groups.length > 0) {
    try {
      await client.register(options.groups, { expandedContainers: options.expandedContainers ?? [] });
    } catch (error) {
      client.close();
      throw error;
    }
  }
  return client;
}

/** The server could not be reached this time; another attempt may succeed. */
class Transient extends Error {}

interface Handshake {
  resolve: () => void;
  reject: (error: Error) => void;
  transport: Transport | undefined;
}

interface Waiter {
  resolve: (result: Message) => void;
  reject: (error: Error) => void;
}

/** A conversation with a toolwire server; get one from `connect()`. */
export class ToolwireClient {
  /** The functions that run this client's tools (`handlers.add(name, fn)` adds more). */
  readonly handlers: Handlers;
  /** Every client tool request answered, by request id. */
  readonly ledger: ExecutionLedger;
  private readonly options: ConnectOptions;
  private readonly url: string;
  private readonly limits: Limits;
  private readonly dial: Dialer;
  private connection: Connection;
  private requested: string | undefined;
  private transport: Transport | undefined;
  private socket = 0; // which transport the callbacks are about: stale ones are ignored
  private handshake: Handshake | undefined;
  private current: ConnectionState = "connecting";
  private failure: ConnectionClosed | undefined;
  private closing = false;
  private readonly closed = new AbortController(); // cancels the handlers still running on close()
  private readonly registrations: Waiter[] = [];
  private readonly requests: Requests;
  private readonly mirrored = new Map<string, string>();
  private run: Run | undefined;
  private runId: string | undefined;

  constructor(url: string, options: ConnectOptions) {
    this.options = options;
    this.url = socketUrl(url, options.token);
    this.limits = options.limits ?? DEFAULT_LIMITS;
    this.dial = options.dial ?? webSocketDialer();
    this.handlers = new Handlers(this.limits);
    this.ledger = new ExecutionLedger(options.ledgerSize ?? 1_000);
    for (const [name, handler] of Object.entries(options.handlers ?? {})) this.handlers.add(name, handler);
    this.requests = new Requests(this.handlers, this.ledger, {
      post: (message, numbered) => {
        try {
          this.post(message, false, numbered);
        } catch (error) {
          this.warn(`an answer could not be sent: ${(error as Error).message}`);
        }
      },
      emit: (event) => this.emit(event),
      onConsent: options.onConsent,
      signal: this.closed.signal,
      traceExecution: options.traceExecution,
    });
    this.connection = new Connection("client", { limits: this.limits });
    this.requested = options.conversationId;
    const saved = options.state ?? options.persist?.load();
    if (saved?.sequencing) this.restore(saved);
  }

  /** The conversation's id ("" before the first handshake); pass it as `conversationId` to continue it later. */
  get conversationId(): string {
    return this.connection.conversationId ?? "";
  }

  /** The connection's state, for a UI indicator (also reported as `connection` events). */
  get connectionState(): ConnectionState {
    return this.current;
  }

  // -- lifetime ------------------------------------------------------------------------------

  /**
   * Connect and complete the handshake; `connect()` calls it.
   *
   * @throws ConnectionClosed the server cannot be reached or refused the connection.
   */
  async open(): Promise<void> {
    this.setState("connecting");
    try {
      await this.attempt(this.requested);
    } catch (error) {
      const closed = error instanceof ConnectionClosed ? error : new ConnectionClosed(String((error as Error).message ?? error));
      this.fail(closed);
      throw closed;
    }
  }

  /**
   * Close the connection for good. Handlers still running are canceled (their signal aborts) and
   * nothing more is sent or saved; what was unsent stays in the saved state for a later resume.
   */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.closed.abort();
    const transport = this.transport;
    this.transport = undefined;
    this.socket += 1;
    transport?.close();
    this.fail(new ConnectionClosed("the client was closed"));
  }

  /** The state to persist; `connect({state})` resumes from it (see `ClientState`). */
  exportState(): ClientState {
    const state = this.connection.state();
    return {
      version: 1,
      sequencing: state === undefined ? null : sequencingToJSON(state),
      ...this.requests.export(),
    };
  }

  // -- what an application calls -------------------------------------------------------------

  /**
   * Register tool groups for the conversation and wait until the server applied them; they
   * replace same-named groups and survive reconnects.
   *
   * @throws RegistrationError the server refused them (its message, group and tool).
   * @throws ConnectionClosed the connection ended for good first.
   */
  async register(groups: ClientToolGroup[], options: RegisterOptions = {}): Promise<void> {
    const message: Message = {
      type: MessageType.REGISTER_TOOLS,
      groups: toWire(groups) as ClientToolGroup[],
      expandedContainers: options.expandedContainers ?? [],
      resetClientState: options.resetClientState ?? false,
    };
    const result = new Promise<Message>((resolve, reject) => this.registrations.push({ resolve, reject }));
    try {
      this.post(message, true);
    } catch (error) {
      this.registrations.pop();
      throw error;
    }
    const answer = await result;
    if (answer.type !== MessageType.REGISTER_TOOLS_RESULT) throw new UsageError("unexpected registration answer");
    if (!answer.ok) throw new RegistrationError(answer.error ?? "the server refused the tool groups", answer.group, answer.tool);
    this.handlers.learn(groups);
  }

  /**
   * Send a user message; its `Run` streams the events until the run ends.
   *
   * @throws UsageError the previous run has not ended yet.
   * @throws ConnectionClosed the connection ended for good.
   */
  send(text: string): Run {
    if (this.run !== undefined && !this.run.done) {
      throw new UsageError("a run is in progress: await its `finished` (or stop() it) before sending again");
    }
    const id = newId("msg");
    const stanza = this.post({ type: MessageType.USER_MESSAGE, id, content: text }, true);
    this.run = new Run(stanza, id);
    return this.run;
  }

  /**
   * Send a user message and return the final answer ("" when the run ended without one).
   *
   * @throws RunFailed the server refused the message or the run failed.
   * @throws ConnectionClosed the connection ended for good.
   */
  async ask(text: string): Promise<string> {
    const finished = await this.send(text).finished;
    return finished.output ?? "";
  }

  /** Ask the server to stop the run in progress (ControlStop); it then finishes as `canceled`. */
  stop(reason?: string): void {
    this.post({ type: MessageType.CONTROL_STOP, ...(this.runId && { runId: this.runId }), ...(reason && { reason }) }, true);
  }

  // -- the connection ------------------------------------------------------------------------

  private async attempt(conversationId: string | undefined): Promise<void> {
    const socket = ++this.socket;
    let pending!: Handshake;
    const handshake = new Promise<void>((resolve, reject) => {
      pending = { resolve, reject, transport: undefined };
    });
    handshake.catch(() => {}); // rejected while dialing (a close, the deadline), it is not awaited yet
    this.handshake = pending;
    // The deadline covers the dial too: a proxy may hold an upgrade that neither opens nor fails.
    const timer = setTimeout(() => {
      if (this.handshake !== pending) return;
      pending.reject(new Transient("the server did not answer the handshake in time"));
    }, this.options.handshakeTimeoutMs ?? 10_000);
    let transport: Transport | undefined;
    try {
      const dialing = this.dial(hintedUrl(this.url, conversationId), {
        frame: (data) => this.received(socket, data),
        closed: (reason) => this.dropped(socket, reason),
      });
      try {
        transport = await Promise.race([dialing, handshake.then(() => dialing)]);
      } catch (error) {
        dialing.then((late) => late.close(), () => {}); // a socket that opens after the deadline is closed
        if (error instanceof ConnectionClosed) throw error; // refused for good (the token): retrying cannot help
        throw new Transient(error instanceof Error ? error.message : String(error));
      }
      if (socket !== this.socket) {
        transport.close(); // closed while dialing
        throw new ConnectionClosed("the client was closed");
      }
      pending.transport = transport;
      const state = this.connection.state();
      const options = { limits: this.limits };
      this.connection = state ? Connection.resume(state, options) : new Connection("client", options);
      transport.send(
        this.connection.hello(conversationId, {
          clientVersion: this.options.clientVersion ?? CLIENT_VERSION,
          device: this.options.device ?? "browser",
          features: this.options.wholeAnswers ? [...FEATURES, WHOLE_ANSWERS] : FEATURES,
        }),
      );
      await handshake; // `answered()` opens the client when the server's Configuration arrives
    } catch (error) {
      if (socket === this.socket) this.socket += 1; // this transport's late callbacks are ignored
      transport?.close();
      throw error;
    } finally {
      clearTimeout(timer);
      if (this.handshake === pending) this.handshake = undefined;
    }
  }

  private received(socket: number, data: Uint8Array): void {
    if (socket !== this.socket) return;
    const handshake = this.handshake;
    if (handshake !== undefined) {
      this.answered(handshake, data);
      return;
    }
    const transport = this.transport;
    if (transport === undefined) return;
    const received = this.connection.receive(data);
    this.write(received.replies);
    for (const envelope of received.messages) this.act(envelope);
    this.persist(); // what was seen is saved before it is acknowledged
    if (received.close) {
      const error = received.messages.map((e) => e.message).find((m): m is ErrorMessage => m.type === MessageType.ERROR);
      const text = error?.message ?? received.errors[0]?.detail ?? "the connection closed after a protocol error";
      this.fail(new ConnectionClosed(`the server closed the conversation: ${text}`, error?.code ?? received.errors[0]?.code));
      this.socket += 1;
      transport.close();
      return;
    }
    if (received.messages.length > 0) {
      const ack = this.connection.ack();
      if (ack !== undefined) this.write([ack]);
    }
  }

  private answered(handshake: Handshake, data: Uint8Array): void {
    const received = this.connection.receive(data);
    const refusal = received.messages.map((e) => e.message).find((m): m is ErrorMessage => m.type === MessageType.ERROR);
    if (refusal !== undefined) {
      handshake.reject(new ConnectionClosed(`the server refused: ${refusal.message}`, refusal.code));
      return;
    }
    if (!this.connection.isOpen) {
      const error = received.errors[0];
      handshake.reject(new ConnectionClosed(error?.detail ?? "the handshake did not complete", error?.code));
      return;
    }
    // Open now, not when the awaiting code resumes: the frames after the server's Configuration
    // (its replay) may already be on their way, and they are ordinary frames.
    this.handshake = undefined;
    this.transport = handshake.transport;
    this.requested = this.connection.conversationId;
    this.write(received.replies); // our outbox, from what the server has not seen on
    this.opened();
    handshake.resolve();
  }

  private dropped(socket: number, reason: string): void {
    if (socket !== this.socket) return;
    if (this.handshake !== undefined) {
      this.handshake.reject(new Transient(reason));
      return;
    }
    this.transport = undefined;
    if (this.closing || this.failure !== undefined) return;
    void this.reconnect(reason);
  }

  private async reconnect(reason: string): Promise<void> {
    const policy = this.options.reconnect;
    if (policy === false) {
      this.fail(new ConnectionClosed(`the connection dropped (${reason}); reconnect is off`));
      return;
    }
    const attempts = policy?.attempts ?? 8;
    let last = reason;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      this.setState("reconnecting", attempt);
      await new Promise((resolve) => setTimeout(resolve, backoff(attempt, policy)));
      if (this.closing || this.failure !== undefined) return;
      try {
        await this.attempt(this.conversationId);
      } catch (error) {
        if (error instanceof ConnectionClosed) {
          this.fail(error);
          return;
        }
        last = error instanceof Error ? error.message : String(error);
        continue;
      }
      return;
    }
    this.fail(new ConnectionClosed(`gave up reconnecting after ${attempts} attempts: ${last}`));
  }

  /** The handshake completed: say so, and finish what a reload or a drop interrupted. */
  private opened(): void {
    this.setState("open");
    this.persist();
    this.requests.resume();
  }

  private write(frames: Uint8Array[]): void {
    const transport = this.transport;
    if (transport === undefined) return;
    for (const frame of frames) {
      try {
        transport.send(frame);
      } catch {
        return; // the socket died under us: the outbox replays what mattered
      }
    }
  }

  /**
   * Number and send a message; it stays in the outbox (and the saved state) until acknowledged.
   *
   * @param numbered told the stanza id before the state is saved.
   * @returns the message's stanza id.
   */
  private post(message: Message, own = false, numbered?: (stanzaId: number) => void): number {
    if (own && this.failure !== undefined) throw this.failure;
    const frame = this.connection.send(message);
    numbered?.(this.connection.lastStanza);
    this.persist();
    if (frame.byteLength > 0) this.write([frame]);
    return this.connection.lastStanza;
  }

  private fail(error: ConnectionClosed): void {
    if (this.failure === undefined) this.failure = error;
    this.transport = undefined;
    for (const waiter of this.registrations.splice(0)) waiter.reject(this.failure);
    this.run?.fail(this.failure);
    this.handshake?.reject(this.failure);
    this.setState("closed");
  }

  private setState(state: ConnectionState, attempt?: number): void {
    if (state === this.current && attempt === undefined) return;
    this.current = state;
    this.emit({
      kind: "connection",
      state,
      ...(attempt !== undefined && { attempt }),
      ...(state === "closed" && this.failure !== undefined && { error: this.failure }),
    });
  }

  // -- what arrives --------------------------------------------------------------------------

  private act(envelope: Envelope): void {
    const message = envelope.message;
    switch (message.type) {
      case MessageType.TOOL_USE_REQUEST:
        if (message.execution === "server") {
          remember(this.mirrored, message.id, message.toolName);
          this.emit({ kind: "serverToolCall", request: message });
        } else {
          this.requests.tool(message, envelope.meta); // "client", and "either" (it came to us: run it here)
        }
        return;
      case MessageType.TOOL_USE_RESULT: {
        const toolName = this.mirrored.get(message.id) ?? "";
        this.mirrored.delete(message.id);
        const outcome = outcomeOf(message, toolName ? { toolName } : {});
        this.emit({ kind: "serverToolResult", result: message, toolName, outcome });
        return;
      }
      case MessageType.TOOL_USE_CANCEL:
        this.requests.withdraw(message);
        return;
      case MessageType.CONSENT_REQUEST:
        this.requests.consent(message);
        return;
      case MessageType.START_ANSWER:
      case MessageType.ASSISTANT_SENTENCE:
      case MessageType.ASSISTANT_MESSAGE:
      case MessageType.RUN_STATUS:
        if (message.type === MessageType.RUN_STATUS) {
          this.runId = message.status === "started" || message.status === "queued" ? message.runId : undefined;
        }
        this.emit(streamEvent(message));
        return;
      case MessageType.REGISTER_TOOLS_RESULT:
        this.registrations.shift()?.resolve(message);
        return;
      case MessageType.ERROR:
        if (message.recoverable === false) return; // the connection closes and reports it
        if (this.run !== undefined && !this.run.done && message.originatingId === this.run.stanzaId) {
          this.emit({ kind: "runFailed", message: `the server refused the message: ${message.message}`, code: message.code });
        } else if (message.code === ErrorCode.RESULT_REFUSED) {
          // A result the server settled the call without (resultRefused); otherwise, expected
          // after a resume: an answer sent twice (replayed, and asked for again).
          const origin = message.originatingId;
          if (typeof origin !== "number" || !this.requests.refused(origin, message.message)) {
            this.warn(`the server refused an answer (${message.code}): ${message.message}`);
          }
        } else {
          this.emit({ kind: "serverError", error: message });
        }
        return;
      default:
        return; // a server does not send the others
    }
  }

  // -- events and state ----------------------------------------------------------------------

  private emit(event: ClientEvent): void {
    this.run?.offer(event);
    const listener = this.options.onEvent;
    if (listener === undefined) return;
    try {
      listener(event);
    } catch (error) {
      setTimeout(() => {
        throw error; // the application's bug: surface it without breaking the protocol
      });
    }
  }

  private warn(message: string): void {
    this.emit({ kind: "warning", message });
  }

  private persist(): void {
    const store = this.options.persist;
    if (store === undefined || this.closing) return; // a closed client must not overwrite a newer one's state
    try {
      store.save(this.exportState());
    } catch (error) {
      this.warn(`the client state could not be saved: ${(error as Error).message}`);
    }
  }

  private restore(saved: ClientState): void {
    try {
      const sequencing = sequencingFromJSON(saved.sequencing);
      if (sequencing.role !== "client") throw new UsageError("a server's state");
      if (this.requested !== undefined && this.requested !== sequencing.conversationId) return; // another conversation
      const restored = readState(saved);
      this.connection = Connection.resume(sequencing, { limits: this.limits });
      this.requested = sequencing.conversationId;
      this.requests.restore(restored);
    } catch (error) {
      this.warn(`the saved state was ignored: ${(error as Error).message}`);
    }
  }
}

function remember<V>(table: Map<string, V>, key: string, value: V): void {
  table.set(key, value);
  if (table.size > MAX_REMEMBERED) table.delete(table.keys().next().value!);
}
