/**
 * What a client reports while it talks to the server (`onEvent`), and `Run`: the events of one
 * user message, until its run ends.
 *
 * | `kind` | when |
 * |---|---|
 * | `connection` | the connection's state changed: `connecting`, `open`, `reconnecting`, `closed` (for a UI indicator) |
 * | `runQueued` | the server runs as many runs as it allows: this run waits, at `position` (1: the next to start); sent again when it moves, at most about once a second |
 * | `runStarted` / `runFinished` / `runFailed` | an agent run began, ended (with its reason and output), or failed (or the message was refused: `code` 503, the server is busy, try again later) |
 * | `answerStarted`, `answerText` | a streamed answer began; one piece of it (StartAnswer, AssistantSentence) |
 * | `assistantMessage` | a complete answer (AssistantMessage): one that was not streamed, or every answer with the `wholeAnswers` option |
 * | `serverToolCall` / `serverToolResult` | the server runs one of its own tools: shown for transparency, never executed here |
 * | `clientToolStarted` / `clientToolCall` | this client runs one of its tools / answered it (`replayed`: from the ledger, nothing ran) |
 * | `clientToolCanceled` | the server settled a call of this client without its result (ToolUseCancel): the handler's signal aborted, no result is sent |
 * | `resultRefused` | the server refused a result this client sent (302): the call was settled without it; the tool ran, the model was not told |
 * | `consent` | the server asked whether a call may run, and this client answered |
 * | `serverError` | the server reported a recoverable error (e.g. it refused a frame) |
 * | `warning` | something the application may want to know: the state could not be saved, the server refused an answer sent twice after a resume (302) |
 *
 * `resultRefused` may come after its run ended (the result crossed the server's withdrawal): `onEvent`
 * gets it either way, a `Run` only while it lasts.
 *
 * @module
 */

import type { ConnectionClosed } from "./errors.js";
import { RunFailed } from "./errors.js";
import type {
  AssistantMessage,
  AssistantSentence,
  ConsentAnswer,
  ConsentRequest,
  ErrorMessage,
  RunStatus,
  StartAnswer,
  ToolUseRequest,
  ToolUseResult,
} from "./messages.js";
import type { Outcome } from "./results.js";
import { MessageType } from "./wire.js";

/** The state of the client's connection. */
export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";

export interface ConnectionEvent {
  kind: "connection";
  state: ConnectionState;
  /** While reconnecting: the attempt about to be made, from 1. */
  attempt?: number;
  /** When closed for good: why. */
  error?: ConnectionClosed;
}
export interface RunQueuedEvent {
  kind: "runQueued";
  runId: string;
  /** The run's place in the server's queue: 1 is the next to start. */
  position: number;
  /** The UserMessage the run answers (absent for a run the server resumed by itself). */
  messageId?: string;
}
export interface RunStartedEvent {
  kind: "runStarted";
  runId: string;
  /** The UserMessage the run answers (absent for a run the server resumed by itself). */
  messageId?: string;
}
export interface RunFinishedEvent {
  kind: "runFinished";
  runId: string;
  messageId?: string;
  /** `answer`, `terminal_result`, `terminate`, `limit` or `canceled`. */
  reason?: string;
  detail?: string;
  output?: string;
}
export interface RunFailedEvent {
  kind: "runFailed";
  /** Absent when the server refused the message itself. */
  runId?: string;
  messageId?: string;
  message: string;
  /** The ErrorMessage code when the server refused the message: 105 (a run is in progress), 503 (busy: try again later). */
  code?: number;
}
export interface AnswerStartedEvent {
  kind: "answerStarted";
  messageId: string;
  previousId?: string;
}
export interface AnswerTextEvent {
  kind: "answerText";
  messageId: string;
  sequence: number;
  text: string;
  isFinal: boolean;
}
export interface AssistantMessageEvent {
  kind: "assistantMessage";
  id: string;
  content: string;
  previousId?: string;
}
export interface ServerToolCallEvent {
  kind: "serverToolCall";
  request: ToolUseRequest;
}
export interface ServerToolResultEvent {
  kind: "serverToolResult";
  result: ToolUseResult;
  /** What the result reports (`outcomeOf`): its outcome type and details (a timeout's duration, ...). */
  outcome: Outcome;
  /** "" when the call itself was not seen (e.g. sent before this client connected). */
  toolName: string;
}
export interface ClientToolStartedEvent {
  kind: "clientToolStarted";
  request: ToolUseRequest;
}
export interface ClientToolCallEvent {
  kind: "clientToolCall";
  request: ToolUseRequest;
  /** What was sent back; `result.errorCode` tells a failure's kind. */
  result: ToolUseResult;
  /** How long the handler ran (0 when nothing ran). */
  durationMs: number;
  /** The request was seen before: the stored answer was sent again, nothing ran. */
  replayed: boolean;
}
export interface ClientToolCanceledEvent {
  kind: "clientToolCanceled";
  /** The withdrawn ToolUseRequest's id. */
  requestId: string;
  /** The request, when this client has it in its ledger (it has, unless it lost its state). */
  request?: ToolUseRequest;
  /** How the server settled the call: `timeout`, `canceled` (the run stopped), `client_disconnected`, ... */
  code: string;
  reason?: string;
  /** The handler was still running (its signal was aborted). */
  running: boolean;
}
export interface ResultRefusedEvent {
  kind: "resultRefused";
  request: ToolUseRequest;
  /** The result the server did not take. */
  result: ToolUseResult;
  /** The server's message. */
  message: string;
}
export interface ConsentEvent {
  kind: "consent";
  request: ConsentRequest;
  answer: ConsentAnswer;
}
export interface ServerErrorEvent {
  kind: "serverError";
  error: ErrorMessage;
}
export interface WarningEvent {
  kind: "warning";
  message: string;
}

/** Everything `onEvent` gets, told apart by `kind`. */
export type ClientEvent =
  | ConnectionEvent
  | RunQueuedEvent
  | RunStartedEvent
  | RunFinishedEvent
  | RunFailedEvent
  | AnswerStartedEvent
  | AnswerTextEvent
  | AssistantMessageEvent
  | ServerToolCallEvent
  | ServerToolResultEvent
  | ClientToolStartedEvent
  | ClientToolCallEvent
  | ClientToolCanceledEvent
  | ResultRefusedEvent
  | ConsentEvent
  | ServerErrorEvent
  | WarningEvent;

/** The event a streamed answer's message or a run's status stands for. */
export function streamEvent(message: StartAnswer | AssistantSentence | AssistantMessage | RunStatus): ClientEvent {
  switch (message.type) {
    case MessageType.START_ANSWER: {
      const { messageId, previousId } = message;
      return { kind: "answerStarted", messageId, ...(previousId !== undefined && { previousId }) };
    }
    case MessageType.ASSISTANT_SENTENCE: {
      const { messageId, sequence, text } = message;
      return { kind: "answerText", messageId, sequence, text, isFinal: message.isFinal ?? false };
    }
    case MessageType.ASSISTANT_MESSAGE: {
      const { id, content, previousId } = message;
      return { kind: "assistantMessage", id, content, ...(previousId !== undefined && { previousId }) };
    }
    case MessageType.RUN_STATUS: {
      const { runId, reason, detail, output, messageId } = message;
      const answering = messageId === undefined ? {} : { messageId };
      if (message.status === "started") return { kind: "runStarted", runId, ...answering };
      if (message.status === "queued") return { kind: "runQueued", runId, position: message.position ?? 1, ...answering };
      if (message.status === "failed") {
        return { kind: "runFailed", runId, ...answering, message: `the run failed: ${detail ?? "no reason given"}` };
      }
      return {
        kind: "runFinished",
        runId,
        ...answering,
        ...(reason !== undefined && { reason }),
        ...(detail !== undefined && { detail }),
        ...(output !== undefined && { output }),
      };
    }
  }
}

/**
 * The run of one `send()`: iterate it for its events (`for await (const event of run)`, ending
 * after `runFinished`), or await `finished`. Client tools and consent prompts are answered whether
 * or not anyone iterates.
 */
export class Run implements AsyncIterable<ClientEvent> {
  /** Resolves with the `runFinished` event; rejects with `RunFailed` or `ConnectionClosed`. */
  readonly finished: Promise<RunFinishedEvent>;
  /** The server's id for the run, once it started. */
  runId: string | undefined;
  private readonly queue: ClientEvent[] = [];
  private wake: (() => void) | undefined;
  private outcome: { error?: Error } | undefined;
  private settle!: { resolve: (event: RunFinishedEvent) => void; reject: (error: Error) => void };

  /** @internal */
  constructor(
    /** The stanza id of the UserMessage, which the server's refusal names. */
    readonly stanzaId: number,
    /** The UserMessage's id, which the run's RunStatus names. */
    readonly messageId: string,
  ) {
    this.finished = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.finished.catch(() => {}); // awaited or not: never an unhandled rejection
  }

  /** True once the run finished or failed. */
  get done(): boolean {
    return this.outcome !== undefined;
  }

  /**
   * @internal Take an event if it belongs to this run: from the `runStarted` that names its
   * message (or names none, from an older server) to its `runFinished` or `runFailed`, or the
   * refusal of its message. Events of an earlier run, replayed after a reload, are not its own. A
   * `runStarted` naming no message while it is in progress is its resumption (a restarted server,
   * another replica): its end is this run's end.
   */
  offer(event: ClientEvent): void {
    if (this.outcome !== undefined || event.kind === "connection" || event.kind === "warning") return;
    if (this.runId === undefined) {
      const opening = event.kind === "runQueued" || event.kind === "runStarted";
      if (opening && (event.messageId === undefined || event.messageId === this.messageId)) {
        this.runId = event.runId;
        this.push(event);
      } else if (event.kind === "runFailed" && event.runId === undefined) {
        this.push(event); // the server refused the message
        this.fail(new RunFailed(event.message, undefined, event.code));
      }
      return;
    }
    if ((event.kind === "runQueued" || event.kind === "runStarted") && event.messageId === undefined) {
      // The server resumed this run after a restart, or another replica took it over: a new run
      // id (naming no message) for the same work, whose end is this run's end.
      this.runId = event.runId;
    } else if ((event.kind === "runFinished" || event.kind === "runFailed") && event.runId !== this.runId) {
      return;
    }
    this.push(event);
    if (event.kind === "runFailed") this.fail(new RunFailed(event.message, event.runId));
  }

  private push(event: ClientEvent): void {
    if (this.outcome !== undefined) return;
    this.queue.push(event);
    if (event.kind === "runFinished") {
      this.outcome = {};
      this.settle.resolve(event);
    }
    this.notify();
  }

  /** @internal End the run with an error (RunFailed, ConnectionClosed). */
  fail(error: Error): void {
    if (this.outcome !== undefined) return;
    this.outcome = { error };
    this.settle.reject(error);
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ClientEvent> {
    for (;;) {
      const event = this.queue.shift();
      if (event !== undefined) {
        yield event;
        continue;
      }
      if (this.outcome !== undefined) {
        if (this.outcome.error !== undefined) throw this.outcome.error;
        return;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
