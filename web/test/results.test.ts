// The converter's TypeScript twin (src/results.ts): one code table, structured fields, the seed's
// texts as the fallback for frames of other implementations, a value sent once.

import { describe, it } from "node:test";

import { decode, encode } from "../src/codec.js";
import type { Envelope, ToolUseResult } from "../src/messages.js";
import { CODE_RESULT_TYPES, DEFAULT_CODES, failure, outcomeOf, ResultType, resultTypeForCode, timeoutFailure } from "../src/results.js";
import { success } from "../src/tools.js";
import { MessageType } from "../src/wire.js";
import { expect } from "./expect.js";

/** Through bytes, as the server (or another implementation) would read it. */
function wire(message: ToolUseResult): ToolUseResult {
  const envelope: Envelope = { stanzaId: 1, conversationId: "c", message, meta: {} };
  return decode(encode(envelope)).message as ToolUseResult;
}

describe("the code table", () => {
  it("maps every code to one outcome type, a tool's own code to an Error", () => {
    expect(Object.keys(CODE_RESULT_TYPES).sort()).toEqual([
      "canceled", "client_disconnected", "denied", "execution_error", "invalid_parameters", "invalid_result", "result_too_large", "timeout", "unknown_tool",
    ]);
    expect(resultTypeForCode("quota_exceeded")).toBe(ResultType.ERROR);
    expect(resultTypeForCode("toString")).toBe(ResultType.ERROR);
    for (const [type, code] of Object.entries(DEFAULT_CODES)) expect(resultTypeForCode(code)).toBe(Number(type));
  });

  it("reads an unknown code as an Error that keeps the code", () => {
    expect(outcomeOf(wire(failure("r", "quota_exceeded", "m")))).toEqual({ type: ResultType.ERROR, code: "quota_exceeded", message: "m" });
  });
});

describe("structured fields", () => {
  it("a timeout sends its duration as a field, and it is read from it", () => {
    const sent = wire(timeoutFailure("r", 5000, true));
    expect(sent.result).toEqual({ timeout: { durationMs: 5000, effectUnknown: true } });
    expect(outcomeOf(sent, { deadlineMs: 30_000 })).toMatchObject({ type: ResultType.TIMEOUT, durationMs: 5000, effectUnknown: true });
  });

  it("the fields win over the text", () => {
    const sent = { ...failure("r", "timeout", "Tool execution exceeded timeout of 5000ms"), result: { timeout: { durationMs: 4999 } } };
    expect(outcomeOf(wire(sent))).toMatchObject({ durationMs: 4999, effectUnknown: false });
  });

  it("a denial and a cancel are read from their payloads", () => {
    const denied = { ...failure("r", "denied", "Call to 'X' was denied: no"), result: { denied: { tool: "DeleteFile", reason: "not today" } } };
    expect(outcomeOf(wire(denied))).toMatchObject({ type: ResultType.DENIED, tool: "DeleteFile", reason: "not today" });
    const canceled = { ...failure("r", "canceled", "stop"), result: { canceled: { reason: "stop", by: "system" } } };
    expect(outcomeOf(wire(canceled))).toMatchObject({ type: ResultType.CANCELED, reason: "stop", by: "system" });
  });

  it("a resultType wins over the code", () => {
    expect(outcomeOf(wire({ ...failure("r", "policy_x", "no"), resultType: 4 }), { toolName: "Del" })).toMatchObject({
      type: ResultType.DENIED,
      code: "policy_x",
      tool: "Del",
      reason: "no",
    });
  });
});

describe("frames of other implementations: the seed's texts", () => {
  it("a timeout's duration and unknown effect", () => {
    expect(outcomeOf(wire(failure("r", "timeout", "Tool execution exceeded timeout of 5000ms")))).toMatchObject({ durationMs: 5000, effectUnknown: false });
    const text = "Tool execution exceeded timeout of 50ms (the tool could not be stopped; its effect is unknown)";
    expect(outcomeOf(wire(failure("r", "timeout", text)))).toMatchObject({ durationMs: 50, effectUnknown: true });
    expect(outcomeOf(wire(failure("r", "timeout", "slow")), { deadlineMs: 30_000 })).toMatchObject({ durationMs: 30_000 });
  });

  it("a denial's tool and reason", () => {
    expect(outcomeOf(wire(failure("r", "denied", "Call to 'DeleteFile' was denied: not today")))).toMatchObject({ tool: "DeleteFile", reason: "not today" });
  });
});

describe("a value is in a frame once", () => {
  it("text and JSON values travel in result only", () => {
    expect(success("r", "hi")).toEqual({ type: MessageType.TOOL_USE_RESULT, id: "r", success: true, result: { value: "hi" } });
    expect(success("r", { a: 1 })).toEqual({ type: MessageType.TOOL_USE_RESULT, id: "r", success: true, result: { a: 1 } });
    expect(success("r", { value: 1 }).result).toEqual({ value: { value: 1 } });
    expect(outcomeOf(wire(success("r", { value: 1 })))).toEqual({ type: ResultType.SUCCESS, value: { value: 1 } });
    expect(outcomeOf(wire(success("r", [1, 2])))).toEqual({ type: ResultType.SUCCESS, value: [1, 2] });
  });

  it("content items are the value of a frame that sends them", () => {
    const both: ToolUseResult = { type: 7, id: "r", success: true, result: { value: "x" }, content: [{ type: "text", text: "x" }] };
    expect(outcomeOf(wire(both))).toEqual({ type: ResultType.SUCCESS, value: "x" });
  });
});
