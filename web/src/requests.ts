/**
 * `Requests`: what the server asks of this client, each answered once — client tool calls
 * (through the handlers and the execution ledger) and consent prompts (through the application's
 * consent handler).
 *
 * | delivered | first time | again, answered | again, unanswered |
 * |---|---|---|---|
 * | ToolUseRequest | run the handler, send its ToolUseResult | resend the ledger's answer, run nothing | running: its answer goes out when it ends; interrupted by a reload: see below |
 * | ConsentRequest | ask, send the ConsentAnswer | resend the same answer, ask nobody | asking: nothing; interrupted by a reload: ask again |
 *
 * A ToolUseCancel withdraws a request: the server settled the call without this client's result.
 * Its handler's signal aborts, no result is sent for it (not when the handler ends later either),
 * and the ledger remembers the withdrawal (also across a reload), so the request never runs again
 * and a re-delivery is answered with nothing. A result that had already gone out is refused by the
 * server with a 302 naming its stanza id, which the ledger kept: `refused()` reports it.
 *
 * A page reload ends a handler mid-run. Its request stays in the saved ledger without an answer;
 * when the conversation resumes (or the server sends the request again), a `read` tool runs again
 * (reading twice is harmless) and any other is answered `execution_error`, as whether it took
 * effect is unknown: a tool that may have written is never run twice.
 *
 * Each execution runs inside `traceExecution` when the client has one, told the server's call
 * span that the request's envelope named (`traceParent`); an execution resumed after a reload has
 * no envelope, so no parent.
 *
 * @module
 */

import { type ConsentHandler, decide } from "./consent.js";
import type { ClientEvent } from "./events.js";
import { ToolError } from "./errors.js";
import type { ConsentAnswer, ConsentRequest, Message, ToolUseCancel, ToolUseRequest, ToolUseResult } from "./messages.js";
import { type ClientState, packMessage, type RestoredState } from "./state.js";
import { failure } from "./results.js";
import { type ExecutionLedger, type Handlers, settled } from "./tools.js";
import { type TraceExecution, type TraceParent, traceParent } from "./tracing.js";
import type { WireMap } from "./wire.js";

const MAX_REMEMBERED = 1_000;

/** What `Requests` needs from its client. */
export interface RequestsIO {
  /**
   * Number, save and send a message (it waits in the outbox while disconnected); `numbered` is
   * told its stanza id before the state is saved.
   */
  post(message: Message, numbered?: (stanzaId: number) => void): void;
  emit(event: ClientEvent): void;
  onConsent: ConsentHandler | undefined;
  /** Aborted when the client closes: handlers are canceled and nothing more is answered. */
  signal: AbortSignal;
  /** Wraps each handler's execution (`ConnectOptions.traceExecution`). */
  traceExecution?: TraceExecution | undefined;
}

export class Requests {
  private readonly consents = new Map<string, { request: ConsentRequest; answer?: ConsentAnswer }>();
  private readonly asking = new Set<string>();
  /** Request id → the controller of its running handler (a withdrawal aborts it). */
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly handlers: Handlers,
    private readonly ledger: ExecutionLedger,
    private readonly io: RequestsIO,
  ) {}

  /**
   * A ToolUseRequest to run here (`execution` "client" or "either").
   *
   * @param meta its envelope's, which may name the server's call span (`traceParent`).
   */
  tool(request: ToolUseRequest, meta: WireMap = {}): void {
    const entry = this.ledger.get(request.id);
    if (entry?.withdrawn !== undefined) return; // the server settled it: it takes no result
    const parent = traceParent(meta);
    if (entry === undefined) {
      this.ledger.start(request);
      void this.execute(request, parent);
    } else if (entry.result !== undefined) {
      this.io.post(entry.result);
      this.io.emit({ kind: "clientToolCall", request, result: entry.result, durationMs: 0, replayed: true });
    } else if (!this.running.has(request.id)) {
      this.interrupted(entry.request, parent);
    }
  }

  /** A ToolUseCancel: the server settled the call without this client's result. */
  withdraw(cancel: ToolUseCancel): void {
    const { id, code, reason } = cancel;
    const entry = this.ledger.get(id);
    if (entry?.withdrawn !== undefined) return; // told twice
    if (entry !== undefined) entry.withdrawn = { code, ...(reason !== undefined && { reason }) };
    const running = this.running.get(id);
    running?.abort(new ToolError(`the server withdrew the call (${code})${reason ? `: ${reason}` : ""}`, { code }));
    this.io.emit({
      kind: "clientToolCanceled",
      requestId: id,
      ...(entry !== undefined && { request: entry.request }),
      code,
      ...(reason !== undefined && { reason }),
      running: running !== undefined,
    });
  }

  /**
   * An ErrorMessage 302 named stanza `stanzaId`: report the result it refused.
   *
   * @returns false when no result was first sent with that stanza id (e.g. an answer sent again
   *   from the ledger after a resume, which the server had taken already).
   */
  refused(stanzaId: number, message: string): boolean {
    const entry = this.ledger.sentWith(stanzaId);
    if (entry?.result === undefined) return false;
    this.io.emit({ kind: "resultRefused", request: entry.request, result: entry.result, message });
    return true;
  }

  /** A ConsentRequest. */
  consent(request: ConsentRequest): void {
    const known = this.consents.get(request.id);
    if (known === undefined) {
      this.consents.set(request.id, { request });
      this.forgetOldConsents();
      void this.ask(request);
    } else if (known.answer !== undefined) {
      this.io.post(known.answer);
    } else if (!this.asking.has(request.id)) {
      void this.ask(request);
    }
  }

  /** The conversation (re)opened: finish the calls and prompts a reload interrupted. */
  resume(): void {
    for (const entry of this.ledger.list()) {
      if (!settled(entry) && !this.running.has(entry.request.id)) this.interrupted(entry.request);
    }
    for (const { request, answer } of this.consents.values()) {
      if (answer === undefined && !this.asking.has(request.id)) void this.ask(request);
    }
  }

  /** The ledger and consent prompts, for `ClientState`. */
  export(): Pick<ClientState, "ledger" | "consents"> {
    return {
      ledger: this.ledger.list().map(({ request, result, stanzaId, withdrawn }) => ({
        request: packMessage(request),
        ...(result !== undefined && { result: packMessage(result) }),
        ...(stanzaId !== undefined && { stanzaId }),
        ...(withdrawn !== undefined && { withdrawn }),
      })),
      consents: [...this.consents.values()].map(({ request, answer }) => ({
        request: packMessage(request),
        ...(answer !== undefined && { answer: packMessage(answer) }),
      })),
    };
  }

  /** Take back what `export()` saved. */
  restore(state: RestoredState): void {
    for (const entry of state.ledger) this.ledger.restore(entry);
    for (const entry of state.consents) this.consents.set(entry.request.id, entry);
  }

  private interrupted(request: ToolUseRequest, parent?: TraceParent): void {
    if (request.mode === "read") {
      void this.execute(request, parent);
      return;
    }
    const message = `the client was reloaded while '${request.toolName}' ran; whether it took effect is unknown`;
    this.answer(request, failure(request.id, "execution_error", message), 0);
  }

  private async execute(request: ToolUseRequest, parent: TraceParent | undefined): Promise<void> {
    const controller = new AbortController(); // aborted by a withdrawal, or when the client closes
    const closed = () => controller.abort(this.io.signal.reason);
    this.io.signal.addEventListener("abort", closed);
    this.running.set(request.id, controller);
    this.io.emit({ kind: "clientToolStarted", request });
    const started = performance.now();
    const result = await this.traced(request, parent, () => this.handlers.run(request, controller.signal));
    this.running.delete(request.id);
    this.io.signal.removeEventListener("abort", closed);
    if (this.io.signal.aborted) return; // closed: the request stays open in the saved state
    if (this.ledger.get(request.id)?.withdrawn !== undefined) return; // settled without it: send nothing
    this.answer(request, result, performance.now() - started);
  }

  /** `run()` inside the client's `traceExecution`, if any; a hook that throws is warned about and bypassed. */
  private async traced(
    request: ToolUseRequest,
    parent: TraceParent | undefined,
    run: () => Promise<ToolUseResult>,
  ): Promise<ToolUseResult> {
    const hook = this.io.traceExecution;
    if (hook === undefined) return run();
    let running: Promise<ToolUseResult> | undefined;
    const once = () => (running ??= run()); // the handler runs once, whatever the hook does
    const { toolName, callId, id } = request;
    try {
      return await hook({ toolName, callId: callId ?? id, requestId: id, ...parent }, once);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.io.emit({ kind: "warning", message: `traceExecution failed for '${toolName}': ${message}` });
      return once();
    }
  }

  private answer(request: ToolUseRequest, result: ToolUseResult, durationMs: number): void {
    const entry = this.ledger.get(request.id) ?? this.ledger.start(request);
    entry.result = result;
    entry.durationMs = durationMs;
    this.io.post(result, (stanzaId) => (entry.stanzaId = stanzaId));
    this.io.emit({ kind: "clientToolCall", request, result, durationMs, replayed: false });
  }

  private async ask(request: ConsentRequest): Promise<void> {
    this.asking.add(request.id);
    const answer = await decide(this.io.onConsent, request);
    this.asking.delete(request.id);
    if (this.io.signal.aborted) return;
    const entry = this.consents.get(request.id);
    if (entry !== undefined) entry.answer = answer;
    this.io.post(answer);
    this.io.emit({ kind: "consent", request, answer });
  }

  private forgetOldConsents(): void {
    for (const [id, entry] of this.consents) {
      if (this.consents.size <= MAX_REMEMBERED) return;
      if (entry.answer !== undefined) this.consents.delete(id);
    }
  }
}
