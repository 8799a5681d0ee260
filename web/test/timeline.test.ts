// The chat page's timeline (web/page/timeline.ts, pure: no DOM) folding the fates of a browser
// call: withdrawn by the server while it ran, or after the page had answered (the answer refused).

import { describe, it } from "node:test";

import type { ClientEvent } from "../src/events.js";
import type { ToolUseRequest } from "../src/messages.js";
import { MessageType } from "../src/wire.js";
import { apply, emptyTimeline, type Timeline, type ToolEntry } from "../page/timeline.js";
import { expect } from "./expect.js";

const PAGE_TOOLS = new Set(["GetUserInput"]);
const REQUEST: ToolUseRequest = {
  type: MessageType.TOOL_USE_REQUEST,
  id: "req_1",
  callId: "call_1",
  toolName: "GetUserInput",
  arguments: { question: "Your name?" },
  execution: "client",
  mode: "read",
};

function fold(...events: ClientEvent[]): { timeline: Timeline; changed: boolean[] } {
  const timeline = emptyTimeline();
  return { timeline, changed: events.map((event) => apply(timeline, event, PAGE_TOOLS)) };
}

function entry(timeline: Timeline): ToolEntry {
  const [only, ...rest] = timeline.entries;
  expect(rest).toEqual([]);
  if (only?.kind !== "tool") throw new Error(`not a tool entry: ${JSON.stringify(only)}`);
  return only;
}

describe("a browser call the server withdrew", () => {
  it("while it ran: done, with the server's outcome and why", () => {
    const canceled: ClientEvent = {
      kind: "clientToolCanceled",
      requestId: "req_1",
      request: REQUEST,
      code: "timeout",
      reason: "Tool execution exceeded timeout of 30000ms",
      running: true,
    };
    const { timeline, changed } = fold({ kind: "clientToolStarted", request: REQUEST }, canceled, canceled);
    expect(changed).toEqual([true, true, false]); // told twice (a replay): drawn once
    expect(entry(timeline)).toMatchObject({
      key: "call_1",
      where: "browser",
      status: "done",
      outcome: "timeout",
      withdrawn: { code: "timeout", reason: "Tool execution exceeded timeout of 30000ms" },
    });
    expect(entry(timeline).detail).toBeUndefined();
    expect(entry(timeline).refused).toBeUndefined();
  });

  it("after the page answered: the server's outcome, the page's answer kept, marked as not taken", () => {
    const result = { type: MessageType.TOOL_USE_RESULT, id: "req_1", success: true, content: [{ type: "text" as const, text: "Ada" }] };
    const { timeline } = fold(
      { kind: "clientToolStarted", request: REQUEST },
      { kind: "clientToolCall", request: REQUEST, result, durationMs: 12, replayed: false },
      { kind: "clientToolCanceled", requestId: "req_1", request: REQUEST, code: "canceled", running: false },
      { kind: "resultRefused", request: REQUEST, result, message: "no open request 'req_1'" },
    );
    expect(entry(timeline)).toMatchObject({
      status: "done",
      outcome: "canceled",
      detail: "Ada",
      durationMs: 12,
      withdrawn: { code: "canceled" },
      refused: "no open request 'req_1'",
    });
  });

  it("of a request the page never had: nothing to show", () => {
    const { timeline, changed } = fold({ kind: "clientToolCanceled", requestId: "req_x", code: "client_disconnected", running: false });
    expect(changed).toEqual([false]);
    expect(timeline.entries).toEqual([]);
  });
});
