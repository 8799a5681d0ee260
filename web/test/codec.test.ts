// The codec's limits, each refused with its code, and what it refuses besides.

import { describe, it } from "node:test";

import { decode, DEFAULT_LIMITS, encode, type Limits, packValue, readFrame } from "../src/codec.js";
import { ErrorCode, ProtocolError } from "../src/errors.js";
import type { Envelope } from "../src/messages.js";
import { MessageType } from "../src/wire.js";
import { expect } from "./expect.js";
import { hex } from "./support.js";

const user = (content: unknown, extra: Record<string, unknown> = {}) =>
  packValue({ stanzaId: 1, conversationId: "c", type: 2, body: { id: "m", content, ...extra } });

function refusal(data: Uint8Array, limits: Limits = DEFAULT_LIMITS): [number, boolean] {
  try {
    decode(data, limits);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return [(error as ProtocolError).code, (error as ProtocolError).recoverable];
  }
  throw new Error("the frame was accepted");
}

const tight = (changes: Partial<Limits>): Limits => ({ ...DEFAULT_LIMITS, ...changes });

function nested(depth: number): unknown {
  let value: unknown = "x";
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe("limits", () => {
  it("default to the protocol's", () => {
    expect(DEFAULT_LIMITS).toEqual({
      maxFrameBytes: 1024 * 1024,
      maxStrLen: 1024 * 1024,
      maxBinLen: 1024 * 1024,
      maxArrayLen: 65_536,
      maxMapLen: 65_536,
      maxContainers: 65_536,
      maxDepth: 32,
    });
  });

  it("refuse a frame larger than maxFrameBytes with 104, before reading it", () => {
    const frame = user("x".repeat(1024 * 1024));
    expect(refusal(frame)).toEqual([ErrorCode.FRAME_TOO_LARGE, true]);
    expect(refusal(new Uint8Array(2 * 1024 * 1024))).toEqual([ErrorCode.FRAME_TOO_LARGE, true]);
  });

  for (const [what, frame, limits] of [
    ["a string", user("x".repeat(11)), { maxStrLen: 10 }],
    ["a map key", user("x", { ["k".repeat(11)]: 1 }), { maxStrLen: 10 }],
    ["binary", user("x", { data: new Uint8Array(11) }), { maxBinLen: 10 }],
    ["an array", user("x", { items: new Array(11).fill(0) }), { maxArrayLen: 10 }],
    ["a map", user("x", { map: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, i])) }), { maxMapLen: 10 }],
    ["the containers", user("x", { items: Array.from({ length: 9 }, () => []) }), { maxContainers: 10 }],
  ] as const) {
    it(`refuse ${what} beyond its limit with 106`, () => {
      expect(refusal(frame, tight(limits))).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
    });
  }

  it("refuse an array header beyond the limit before its items come", () => {
    const frame = Uint8Array.from([0x81, 0xa1, 0x61, 0xdd, 0x00, 0x01, 0x11, 0x70]); // {"a": array32 of 70,000}
    expect(refusal(frame)).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
  });

  it("accept depth 32 and refuse depth 33 (the envelope is 1, the body 2)", () => {
    expect(decode(user("x", { deep: nested(30) })).message.type).toBe(MessageType.USER_MESSAGE);
    expect(refusal(user("x", { deep: nested(31) }))).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
  });

  it("refuse a million nested arrays without a stack overflow", () => {
    const frame = new Uint8Array(1_000_000).fill(0x91);
    expect(refusal(frame)).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
  });

  it("stop a frame of many small containers at the container budget", () => {
    const items = Array.from({ length: 60_000 }, () => ({}));
    const frame = user("x", { a: items, b: items });
    expect(refusal(frame)).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
  });
});

describe("what the codec refuses", () => {
  for (const [what, frame] of [
    ["truncated", user("x").subarray(0, -1)],
    ["empty", new Uint8Array(0)],
    ["trailing bytes", Uint8Array.from([...user("x"), 0xc0])],
    ["the never-used byte 0xc1", Uint8Array.from([0xc1])],
    ["an integer key", Uint8Array.from([0x81, 0x01, 0x02])],
    ["a binary key", Uint8Array.from([0x81, 0xc4, 0x01, 0x61, 0x02])],
    ["a map key", Uint8Array.from([0x81, 0x80, 0x02])],
    ["a repeated key", Uint8Array.from([0x82, 0xa1, 0x61, 0x01, 0xa1, 0x61, 0x02])],
    ["the key __proto__", Uint8Array.from([0x81, 0xa9, ...new TextEncoder().encode("__proto__"), 0x80])],
    ["invalid UTF-8", Uint8Array.from([0x81, 0xa1, 0x61, 0xa2, 0xc3, 0x28])],
    ["an encoded surrogate", Uint8Array.from([0x81, 0xa1, 0x61, 0xa3, 0xed, 0xa0, 0x80])],
    ["fixext 1", Uint8Array.from([0x81, 0xa1, 0x61, 0xd4, 0x01, 0x00])],
    ["ext 8", Uint8Array.from([0x81, 0xa1, 0x61, 0xc7, 0x01, 0x05, 0x00])],
    ["the timestamp extension", Uint8Array.from([0x81, 0xa1, 0x61, 0xd6, 0xff, 0, 0, 0, 0])],
    ["extension 0 with the byte 1", Uint8Array.from([0x81, 0xa1, 0x61, 0xd4, 0x00, 0x01])],
    ["extension 0 with no byte", Uint8Array.from([0x81, 0xa1, 0x61, 0xc7, 0x00, 0x00])],
    ["extension 0 with two bytes", Uint8Array.from([0x81, 0xa1, 0x61, 0xd5, 0x00, 0x00, 0x00])],
    ["a truncated undefined", Uint8Array.from([0x81, 0xa1, 0x61, 0xd4, 0x00])],
    ["undefined as a map key", Uint8Array.from([0x81, 0xd4, 0x00, 0x00, 0x01])],
    ["a key repeated with an undefined value", Uint8Array.from([0x82, 0xa1, 0x61, 0xd4, 0x00, 0x00, 0xa1, 0x61, 0x02])],
  ] as const) {
    it(`refuse ${what} with 101`, () => {
      expect(refusal(frame)).toEqual([ErrorCode.MALFORMED_FRAME, true]);
    });
  }

  for (const [what, frame] of [
    ["an array", packValue([1, 2])],
    ["a stanzaId beyond int32", packValue({ stanzaId: 2 ** 31, type: 2, body: {} })],
    ["a float stanzaId", packValue({ stanzaId: 1.5, type: 2, body: {} })],
    ["a type beyond uint16", packValue({ stanzaId: 1, type: 70_000, body: {} })],
    ["a body that is not a map", packValue({ stanzaId: 1, type: 2, body: [] })],
    ["a missing required field", user(undefined)],
    ["a field of the wrong type", user(42)],
    ["another conversation in the body", user("x", { conversationId: "other" })],
    ["a ToolUseCancel without its code", packValue({ stanzaId: -1, conversationId: "c", type: 105, body: { id: "req_1" } })],
    ["a ToolUseCancel with an empty id", packValue({ stanzaId: -1, conversationId: "c", type: 105, body: { id: "", code: "timeout" } })],
  ] as const) {
    it(`refuse ${what} with 105`, () => {
      expect(refusal(frame)).toEqual([ErrorCode.INVALID_MESSAGE, true]);
    });
  }

  it("refuse an unknown type with 102, naming its stanza", () => {
    const error = (() => {
      try {
        decode(packValue({ stanzaId: 7, conversationId: "c", type: 42, body: {} }));
      } catch (error) {
        return error as ProtocolError;
      }
      throw new Error("accepted");
    })();
    expect([error.code, error.originatingId, error.severity]).toEqual([ErrorCode.UNKNOWN_TYPE, 7, 1]);
  });

  it("never throw anything but ProtocolError for random bytes", () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 256;
    for (let i = 0; i < 2_000; i++) {
      const frame = Uint8Array.from({ length: 1 + (i % 40) }, random);
      if (i % 3 === 0) frame[0] = 0x80 | (frame[0]! & 0x0f); // a map, to go further
      try {
        decode(frame);
      } catch (error) {
        expect(error).toBeInstanceOf(ProtocolError);
      }
    }
  });
});

/** A frame with msgpackr's `undefined` (`d4 00 00`) wherever `body` holds UNDEFINED_MARK. */
const UNDEFINED_MARK = "\u0000undefined";
function withUndefined(wire: unknown): Uint8Array {
  const marked = packValue(wire);
  const mark = [...packValue(UNDEFINED_MARK)];
  const out: number[] = [];
  for (let i = 0; i < marked.length; i++) {
    if (mark.every((byte, offset) => marked[i + offset] === byte)) {
      out.push(0xd4, 0x00, 0x00);
      i += mark.length - 1;
    } else {
      out.push(marked[i]!);
    }
  }
  return Uint8Array.from(out);
}

describe("msgpackr's undefined (d4 00 00)", () => {
  const U = UNDEFINED_MARK;

  it("makes a field absent", () => {
    const envelope = decode(withUndefined({ stanzaId: 1, conversationId: "c", type: 2, body: { id: "m", content: "hi", previousId: U } }));
    expect(envelope.message).toEqual({ type: 2, id: "m", content: "hi" });
  });

  it("makes an envelope field absent", () => {
    const envelope = decode(withUndefined({ stanzaId: U, conversationId: "c", type: 2, meta: U, body: { id: "m", content: "hi" } }));
    expect([envelope.stanzaId, envelope.meta]).toEqual([0, {}]);
  });

  it("is dropped from a map inside a result", () => {
    const body = { id: "r", success: true, result: { title: "Lunch", location: U } };
    expect(decode(withUndefined({ stanzaId: 1, type: 7, body })).message).toMatchObject({ result: { title: "Lunch" } });
    const result = (decode(withUndefined({ stanzaId: 1, type: 7, body })).message as { result: object }).result;
    expect(Object.keys(result)).toEqual(["title"]);
  });

  it("reads as null in an array", () => {
    const body = { id: "r", success: true, result: { events: [1, U, 3] } };
    expect(decode(withUndefined({ stanzaId: 1, type: 7, body })).message).toMatchObject({ result: { events: [1, null, 3] } });
  });

  it("reads the same in its ext 8 form (c7 01 00 00)", () => {
    const frame = withUndefined({ stanzaId: 1, type: 2, body: { id: "m", content: "hi", previousId: U } });
    const at = frame.indexOf(0xd4);
    const longForm = Uint8Array.from([...frame.subarray(0, at), 0xc7, 0x01, 0x00, 0x00, ...frame.subarray(at + 3)]);
    expect(decode(longForm).message).toEqual({ type: 2, id: "m", content: "hi" });
  });

  it("makes a required field missing (105)", () => {
    expect(refusal(withUndefined({ stanzaId: 1, type: 2, body: { id: "m", content: U } }))).toEqual([ErrorCode.INVALID_MESSAGE, true]);
  });

  it("as the whole frame is refused with 105", () => {
    expect(refusal(Uint8Array.from([0xd4, 0x00, 0x00]))).toEqual([ErrorCode.INVALID_MESSAGE, true]);
  });

  it("leaves maps that still count for the depth limit", () => {
    let deep: unknown = { x: U };
    for (let i = 0; i < 30; i++) deep = { x: deep };
    const frame = withUndefined({ stanzaId: 1, type: 2, body: { id: "m", content: "hi", deep } });
    expect(refusal(frame)).toEqual([ErrorCode.LIMIT_EXCEEDED, true]);
  });
});

describe("the dialect's ToolUseResult and Acknowledgement", () => {
  const result = (body: Record<string, unknown>) => decode(packValue({ stanzaId: 1, type: 7, body: { id: "r", ...body } })).message;
  const ack = (body: Record<string, unknown>) => decode(packValue({ stanzaId: 0, type: 8, body })).message;

  it("read a failure's error text as its errorMessage", () => {
    expect(result({ success: false, error: "Disk full" })).toMatchObject({ errorMessage: "Disk full" });
  });

  it("prefer errorMessage to error", () => {
    expect(result({ success: false, errorMessage: "Quota", error: "Disk full" })).toMatchObject({ errorMessage: "Quota" });
  });

  it("ignore the error of a success, and an error that is not text", () => {
    expect(result({ success: true, error: "stale" })).toEqual({ type: 7, id: "r", success: true, terminal: false, content: [] });
    expect(result({ success: false, error: { message: "x" } })).toEqual({ type: 7, id: "r", success: false, terminal: false, content: [] });
  });

  it("read lastSeenStanzaId as acknowledgedStanzaId, which wins when both are sent", () => {
    expect(ack({ lastSeenStanzaId: -5 })).toEqual({ type: 8, acknowledgedStanzaId: -5 });
    expect(ack({ acknowledgedStanzaId: -3, lastSeenStanzaId: -5 })).toEqual({ type: 8, acknowledgedStanzaId: -3 });
  });

  it("read an empty Acknowledgement as acknowledging nothing (0)", () => {
    expect(ack({})).toEqual({ type: 8, acknowledgedStanzaId: 0 });
  });
});

describe("what the codec accepts", () => {
  it("reads a dialect: no stanzaId, tracing beside the envelope, requestId, arguments, a textual code", () => {
    const frame = readFrame(packValue({ conversationId: "c", type: 7, trace_id: "t1", span_id: "s1", body: {} }));
    expect([frame.stanzaId, frame.meta]).toEqual([0, { "messaging.trace_id": "t1", "messaging.span_id": "s1" }]);
    const result = decode(packValue({ stanzaId: -1, type: 7, body: { id: "own", requestId: "req", success: true } }));
    expect(result.message).toMatchObject({ id: "req", success: true });
    const request = decode(
      packValue({ stanzaId: -1, type: 6, body: { id: "r", toolName: "T", arguments: { a: 1 }, execution: "client", messageId: "m" } }),
    );
    expect(request.message).toMatchObject({ arguments: { a: 1 }, timeoutMs: 30_000 });
    const error = decode(packValue({ stanzaId: 0, type: 1, body: { code: "rate", message: "slow down" } }));
    expect(error.message).toMatchObject({ code: 0, message: "rate: slow down" });
    expect(decode(packValue({ type: 1, body: { code: "301", message: "m" } })).message).toMatchObject({ code: 301 });
  });

  it("treats null fields as absent, and reads features as a map", () => {
    const envelope = decode(packValue({ stanzaId: 0, type: 12, meta: null, body: { conversationId: null, features: { a: true, b: false } } }));
    expect(envelope.message).toEqual({ type: 12, conversationId: "", lastSequenceSeen: 0, features: ["a"] });
  });

  it("reads a body's own fields only", () => {
    expect(refusal(packValue({ stanzaId: 1, type: 2, body: { id: "m" } }))).toEqual([ErrorCode.INVALID_MESSAGE, true]);
    const envelope = decode(packValue({ stanzaId: 1, type: 2, body: { id: "m", content: "x", toString: 1 } }));
    expect(envelope.message).toEqual({ type: 2, id: "m", content: "x" });
  });

  it("encodes deterministically: the same envelope, the same bytes, meta only when set", () => {
    const envelope: Envelope = { stanzaId: 3, conversationId: "c", message: { type: 2, id: "m", content: "hi" }, meta: {} };
    expect(hex(encode(envelope))).toBe(hex(encode({ ...envelope })));
    expect(decode(encode(envelope))).toEqual(envelope);
    const withMeta = { ...envelope, meta: { timestamp: 1 } };
    expect(Object.keys(decode(encode(withMeta)).meta)).toEqual(["timestamp"]);
  });
});
