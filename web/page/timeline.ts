/**
 * The timeline of one conversation, as plain JSON (saved in localStorage after every change, so a
 * reloaded page shows what it showed): the user's messages, the streamed answers, one entry per
 * tool call, and notices. `Timeline.apply()` folds each `ClientEvent` of the library into it;
 * `render.ts` draws it.
 *
 * Tool calls are keyed by the model's call id, which the ConsentRequest, the ToolUseRequest and
 * the server's mirrored ToolUseResult all carry, so a call asked about, then run, is one entry.
 * Events replayed after a reload or a reconnect land on the entries they already made. A browser
 * call the server withdrew (ToolUseCancel) takes the server's outcome and says so; a result the
 * server refused (302) is marked as not taken.
 *
 * Conventions on a tool's Success value (an object), see docs/browser.md:
 *
 * | field | shown for | as |
 * |---|---|---|
 * | `preview` | `safe_write` calls | a string, or `{before, after}`: the change, before and after |
 * | `undo` | `destructive` calls | `{tool, arguments, label?}`: an "Undo" button that asks the model to run `tool` |
 *
 * @module
 */

import { type ClientEvent, outcomeOf as readOutcome, resultTypeForCode, type ToolUseResult } from "../src/index.js";

/** The five outcome types (docs/protocol.md). */
export type Outcome = "success" | "error" | "canceled" | "timeout" | "denied";
const BY_TYPE: Outcome[] = ["success", "error", "canceled", "timeout", "denied"];

export interface Preview {
  text?: string;
  before?: string;
  after?: string;
}

export interface Undo {
  tool: string;
  arguments: Record<string, unknown>;
  label?: string;
}

export interface UserEntry {
  kind: "user";
  key: string;
  text: string;
}

export interface AnswerEntry {
  kind: "answer";
  key: string;
  /** The streamed pieces by `sequence` (a replayed piece lands on its own index). */
  parts: string[];
  done: boolean;
  /** The UserMessage this answers. */
  replyTo?: string;
  /** The id of the complete AssistantMessage, once it arrived. */
  final?: string;
}

export interface ToolEntry {
  kind: "tool";
  key: string;
  name: string;
  mode?: string;
  args: unknown;
  /** Where the call ran: this page's handlers, or the server's own tools. */
  where: "browser" | "server";
  status: "consent" | "running" | "done";
  outcome?: Outcome;
  /** The result's value (shortened) or the failure's message. */
  detail?: string;
  durationMs?: number;
  startedAt?: number;
  /** What the person answered when asked. */
  consent?: string;
  preview?: Preview;
  undo?: Undo;
  undoSent?: boolean;
  /** The server settled a browser call without the page's result (ToolUseCancel): its code and reason. */
  withdrawn?: { code: string; reason?: string };
  /** The server did not take the result the page sent (302): its message. */
  refused?: string;
}

export interface NoticeEntry {
  kind: "notice";
  key: string;
  text: string;
  level: "info" | "error";
}

export type Entry = UserEntry | AnswerEntry | ToolEntry | NoticeEntry;

/** What is saved per conversation. */
export interface Timeline {
  version: 1;
  entries: Entry[];
  /** The run in progress, if any (the composer waits for it). */
  running?: string;
  /** A message was sent and its run has not started yet. */
  sending?: boolean;
  /** The run waits for the server (its place in the queue: 1 is next). */
  queued?: number;
}

const DETAIL_CHARS = 400;

export function emptyTimeline(): Timeline {
  return { version: 1, entries: [] };
}

/** The text of an answer so far. */
export function answerText(entry: AnswerEntry): string {
  return entry.parts.join("");
}

/** The outcome type of a ToolUseResult (`resultType` first, then the code's: `outcomeOf` of the client). */
export function outcomeOf(result: ToolUseResult): Outcome {
  return BY_TYPE[readOutcome(result).type]!;
}

/** The outcome type of a failure's wire code: `timeout`, `canceled`, `denied`, else an error. */
export function outcomeOfCode(code: string | undefined): Outcome {
  return code === undefined ? "error" : BY_TYPE[resultTypeForCode(code)]!;
}

/** A result's value: its content items' value, else `result` (unwrapping `{value}`). */
export function valueOf(result: ToolUseResult): unknown {
  return readOutcome(result).value;
}

/** JSON text of a wire value (bytes shown by their length), at most `limit` characters. */
export function jsonText(value: unknown, limit = DETAIL_CHARS): string {
  const text =
    JSON.stringify(value, (_key, item: unknown) => {
      if (item instanceof Uint8Array) return `<${item.byteLength} bytes>`;
      if (typeof item === "bigint") return item.toString();
      return item;
    }) ?? "null";
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

function plain(value: unknown): unknown {
  return JSON.parse(jsonText(value, Infinity)) as unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : jsonText(value);
}

/** The `preview` a safe_write result provides, if any. */
export function previewOf(value: unknown): Preview | undefined {
  if (!isObject(value)) return undefined;
  const preview = value.preview;
  if (typeof preview === "string") return { text: preview };
  if (isObject(preview) && ("before" in preview || "after" in preview)) {
    return { before: asText(preview.before ?? ""), after: asText(preview.after ?? "") };
  }
  return undefined;
}

/** The `undo` a destructive result declares, if any. */
export function undoOf(value: unknown): Undo | undefined {
  if (!isObject(value) || !isObject(value.undo)) return undefined;
  const { tool, arguments: args, label } = value.undo;
  if (typeof tool !== "string" || tool === "") return undefined;
  return {
    tool,
    arguments: isObject(args) ? (plain(args) as Record<string, unknown>) : {},
    ...(typeof label === "string" && { label }),
  };
}

/** The message the "Undo" button sends. */
export function undoMessage(entry: ToolEntry, undo: Undo): string {
  return `Undo the ${entry.name} call: please call ${undo.tool} with ${JSON.stringify(undo.arguments)}.`;
}

/**
 * Fold one event into the timeline.
 *
 * @param browserTools the names of this page's tools (a consent prompt for another is the server's).
 * @returns true when something changed (save and draw).
 */
export function apply(timeline: Timeline, event: ClientEvent, browserTools: ReadonlySet<string>): boolean {
  switch (event.kind) {
    case "runQueued":
      timeline.running = event.runId;
      timeline.sending = false;
      timeline.queued = event.position;
      return true;
    case "runStarted":
      timeline.running = event.runId;
      timeline.sending = false;
      delete timeline.queued;
      return true;
    case "runFinished":
      timeline.running = undefined;
      timeline.sending = false;
      delete timeline.queued;
      if (event.reason !== undefined && event.reason !== "answer") {
        const why = event.reason === "canceled" ? "Stopped" : `The run ended: ${event.reason}`;
        notice(timeline, `${why}${event.detail ? ` (${event.detail})` : ""}.`, "info");
      }
      return true;
    case "runFailed":
      if (event.runId === undefined || event.runId === timeline.running) {
        timeline.running = undefined;
        delete timeline.queued;
      }
      timeline.sending = false;
      notice(timeline, event.message, "error");
      return true;
    case "answerStarted":
      answer(timeline, event.messageId, event.previousId);
      return true;
    case "answerText": {
      const entry = answer(timeline, event.messageId);
      entry.parts[event.sequence] = event.text;
      for (let i = 0; i < entry.parts.length; i++) entry.parts[i] ??= "";
      entry.done ||= event.isFinal;
      return true;
    }
    case "assistantMessage": {
      if (timeline.entries.some((e) => e.kind === "answer" && (e.final === event.id || e.key === event.id))) return false;
      const streamed = [...timeline.entries]
        .reverse()
        .find((e): e is AnswerEntry => e.kind === "answer" && e.final === undefined && e.replyTo === event.previousId);
      const entry = streamed ?? answer(timeline, event.id, event.previousId);
      entry.parts = [event.content];
      entry.final = event.id;
      entry.done = true;
      return true;
    }
    case "serverToolCall": {
      const { request } = event;
      const entry = tool(timeline, request.callId ?? request.id, request.toolName, "server");
      Object.assign(entry, { mode: request.mode ?? entry.mode, args: plain(request.arguments) });
      if (entry.status !== "done") Object.assign(entry, { status: "running", startedAt: Date.now() });
      return true;
    }
    case "serverToolResult": {
      const entry = tool(timeline, event.result.id, event.toolName || "(a server tool)", "server");
      const durationMs = entry.startedAt === undefined ? undefined : Date.now() - entry.startedAt;
      finish(entry, event.result, durationMs);
      return true;
    }
    case "clientToolStarted": {
      const { request } = event;
      const entry = tool(timeline, request.callId ?? request.id, request.toolName, "browser");
      Object.assign(entry, { mode: request.mode ?? entry.mode, args: plain(request.arguments) });
      Object.assign(entry, { status: "running", outcome: undefined, detail: undefined, startedAt: Date.now() });
      return true;
    }
    case "clientToolCall": {
      const { request, result } = event;
      const entry = tool(timeline, request.callId ?? request.id, request.toolName, "browser");
      if (event.replayed && entry.status === "done") return false;
      entry.mode = request.mode ?? entry.mode;
      entry.args = plain(request.arguments);
      finish(entry, result, event.replayed ? entry.durationMs : event.durationMs);
      return true;
    }
    case "clientToolCanceled": {
      const { request } = event;
      if (request === undefined) return false; // a call this page never saw: there is no entry for it
      const entry = tool(timeline, request.callId ?? request.id, request.toolName, "browser");
      if (entry.withdrawn !== undefined) return false;
      entry.withdrawn = { code: event.code, ...(event.reason !== undefined && { reason: event.reason }) };
      // The server's outcome is what the model got, also when the page had answered (that result is refused).
      entry.outcome = outcomeOfCode(event.code);
      if (entry.status !== "done" && entry.startedAt !== undefined) entry.durationMs = Date.now() - entry.startedAt;
      entry.status = "done";
      return true;
    }
    case "resultRefused": {
      const { request } = event;
      const entry = tool(timeline, request.callId ?? request.id, request.toolName, "browser");
      if (entry.refused !== undefined) return false;
      entry.refused = event.message;
      return true;
    }
    case "consent": {
      const { request, answer: reply } = event;
      const entry = asked(timeline, request, browserTools);
      if (reply.allow) {
        entry.consent = reply.scope === "thread" ? "Allowed for this conversation" : "Allowed once";
        if (entry.status === "consent") entry.status = "running";
      } else {
        entry.consent = `Denied: ${reply.reason ?? "no reason given"}`;
        Object.assign(entry, { status: "done", outcome: "denied", detail: undefined }); // the consent line says why
      }
      return true;
    }
    case "serverError":
      timeline.sending = false; // e.g. a message refused after a reload (its run never starts)
      notice(timeline, `The server reported an error (${event.error.code}): ${event.error.message}`, "error");
      return true;
    case "warning":
      if (event.message.includes("(302)")) return false; // an answer sent twice after a resume: expected
      notice(timeline, event.message, "info");
      return true;
    case "connection":
      return false;
  }
}

/** A consent prompt arrived: its call's entry, waiting for the answer. */
export function asked(
  timeline: Timeline,
  request: { callId: string; toolName: string; mode: string; arguments?: unknown },
  browserTools: ReadonlySet<string>,
): ToolEntry {
  const where = browserTools.has(request.toolName) ? "browser" : "server";
  const entry = tool(timeline, request.callId, request.toolName, where);
  entry.mode = request.mode;
  entry.args = plain(request.arguments ?? {});
  if (entry.status === "running" && entry.outcome === undefined && entry.consent === undefined) entry.status = "consent";
  return entry;
}

export function addUser(timeline: Timeline, key: string, text: string): void {
  timeline.entries.push({ kind: "user", key, text });
  timeline.sending = true;
}

/** Add a notice (a problem, a run that ended early). */
export function notice(timeline: Timeline, text: string, level: NoticeEntry["level"]): void {
  timeline.entries.push({ kind: "notice", key: `notice-${timeline.entries.length}`, text, level });
}

function answer(timeline: Timeline, key: string, replyTo?: string): AnswerEntry {
  let entry = timeline.entries.find((e): e is AnswerEntry => e.kind === "answer" && e.key === key);
  if (entry === undefined) {
    entry = { kind: "answer", key, parts: [], done: false, ...(replyTo !== undefined && { replyTo }) };
    timeline.entries.push(entry);
  }
  return entry;
}

function tool(timeline: Timeline, key: string, name: string, where: ToolEntry["where"]): ToolEntry {
  let entry = timeline.entries.find((e): e is ToolEntry => e.kind === "tool" && e.key === key);
  if (entry === undefined) {
    entry = { kind: "tool", key, name, args: {}, where, status: "running" };
    timeline.entries.push(entry);
  }
  return entry;
}

function finish(entry: ToolEntry, result: ToolUseResult, durationMs: number | undefined): void {
  entry.status = "done";
  entry.outcome = outcomeOf(result);
  entry.durationMs = durationMs;
  if (entry.outcome !== "success") {
    entry.detail = result.errorMessage ?? result.errorCode ?? entry.outcome;
    return;
  }
  let value = valueOf(result);
  const preview = entry.mode === "safe_write" ? previewOf(value) : undefined;
  const undo = entry.mode === "destructive" ? undoOf(value) : undefined;
  if (preview !== undefined) entry.preview = preview;
  if (undo !== undefined) entry.undo = undo;
  if (isObject(value) && (preview !== undefined || undo !== undefined)) {
    const { preview: _shown, undo: _offered, ...rest } = value; // drawn on their own
    value = rest;
  }
  entry.detail = value === undefined ? "" : asText(value).slice(0, DETAIL_CHARS);
}
