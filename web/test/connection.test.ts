// The connection state machine: handshake, stanza ids, duplicates, acknowledgements, resume
// (the TypeScript twin of tests/protocol/test_protocol_connection.py).

import { describe, it } from "node:test";

import { decode, DEFAULT_LIMITS, encode, packValue } from "../src/codec.js";
import { Connection, type ConnectionOptions, type Received } from "../src/connection.js";
import { ErrorCode, ProtocolError, UsageError } from "../src/errors.js";
import type { AssistantMessage, ErrorMessage, Message, UserMessage } from "../src/messages.js";
import { type Sequencing, sequencingFromJSON, sequencingToJSON } from "../src/sequencing.js";
import { MessageType } from "../src/wire.js";
import { expect } from "./expect.js";
import { hex } from "./support.js";

const CONVERSATION = "thr_6f1c2a";
const user = (n: number): UserMessage => ({ type: MessageType.USER_MESSAGE, id: `m${n}`, content: `message ${n}` });
const answer = (n: number): AssistantMessage => ({ type: MessageType.ASSISTANT_MESSAGE, id: `a${n}`, content: `answer ${n}` });
const EMPTY: Received = { messages: [], replies: [], close: false, errors: [] };

function counter(prefix = "err"): () => string {
  let n = 0;
  return () => `${prefix}_${++n}`;
}

function openPair(options: ConnectionOptions = {}): [Connection, Connection] {
  const client = new Connection("client", { newId: counter("cerr"), ...options });
  const server = new Connection("server", { newId: counter("serr"), ...options });
  const [hello] = server.receive(client.hello()).messages;
  expect(hello?.message.type).toBe(MessageType.CONFIGURATION);
  for (const frame of server.accept(CONVERSATION)) client.receive(frame);
  expect(client.isOpen && server.isOpen).toBe(true);
  return [client, server];
}

const messages = (received: Received): Message[] => received.messages.map((envelope) => envelope.message);
const codes = (received: Received): number[] =>
  received.replies.map((frame) => decode(frame).message).flatMap((m) => (m.type === MessageType.ERROR ? [m.code] : []));

describe("stanza ids", () => {
  it("count up for the client and down for the server", () => {
    const [client, server] = openPair();
    expect([0, 1, 2].map((n) => decode(client.send(user(n))).stanzaId)).toEqual([1, 2, 3]);
    expect([0, 1, 2].map((n) => decode(server.send(answer(n))).stanzaId)).toEqual([-1, -2, -3]);
  });

  it("are 0 for the handshake and acknowledgement frames", () => {
    const [client, server] = openPair();
    server.receive(client.send(user(1)));
    const ack = server.ack()!;
    expect(decode(ack)).toEqual({
      stanzaId: 0,
      conversationId: CONVERSATION,
      message: { type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: 1 },
      meta: {},
    });
    expect(decode(client.send(user(2))).stanzaId).toBe(2);
    expect(client.lastStanza).toBe(2);
  });

  it("deliver messages in order", () => {
    const [client, server] = openPair();
    expect([0, 1, 2].map((n) => messages(server.receive(client.send(user(n)))))).toEqual([[user(0)], [user(1)], [user(2)]]);
  });
});

describe("handshake", () => {
  it("refuses a message before the Configuration with 103 and closes", () => {
    const server = new Connection("server", { newId: counter() });
    const received = server.receive(encode({ stanzaId: 1, conversationId: "", message: user(1), meta: {} }));
    expect(received.messages).toEqual([]);
    expect(received.close && server.closed).toBe(true);
    expect(decode(received.replies[0]!).message).toEqual({
      type: MessageType.ERROR,
      id: "err_1",
      code: 103,
      message: "the first message must be a Configuration",
      severity: 3,
      recoverable: false,
    });
    expect(server.receive(new Connection("client").hello())).toEqual(EMPTY); // closed: ignored
  });

  it("closes on garbage before the handshake, with its own code", () => {
    const received = new Connection("server").receive(Uint8Array.from([0xc1]));
    expect(codes(received)).toEqual([ErrorCode.MALFORMED_FRAME]);
    expect(received.close).toBe(true);
  });

  it("surfaces the client's Configuration; the server's I/O layer accepts", () => {
    const client = new Connection("client");
    const server = new Connection("server");
    const [hello] = server.receive(client.hello(undefined, { clientVersion: "web/1", features: ["consent"] })).messages;
    expect(hello!.message).toEqual({ type: 12, conversationId: "", lastSequenceSeen: 0, clientVersion: "web/1", features: ["consent"] });
    expect(server.isOpen).toBe(false);
    const [reply] = server.accept("thr_new", { features: ["runStatus"] });
    expect(decode(reply!)).toEqual({
      stanzaId: 0,
      conversationId: "thr_new",
      message: { type: 12, conversationId: "thr_new", lastSequenceSeen: 0, features: ["runStatus"] },
      meta: {},
    });
    expect(messages(client.receive(reply!))).toEqual([decode(reply!).message]);
    expect([client.conversationId, server.conversationId]).toEqual(["thr_new", "thr_new"]);
  });

  it("refuses a frame between the Configuration and accept() with 103", () => {
    const client = new Connection("client");
    const server = new Connection("server");
    server.receive(client.hello());
    const received = server.receive(encode({ stanzaId: 1, conversationId: "", message: user(1), meta: {} }));
    expect(codes(received)).toEqual([ErrorCode.HANDSHAKE_REQUIRED]);
    expect(received.close).toBe(true);
  });

  it("lets the server refuse a Configuration with a final error", () => {
    const client = new Connection("client");
    const server = new Connection("server");
    server.receive(client.hello("thr_gone"));
    const frame = server.refuse(ErrorCode.CONVERSATION_NOT_FOUND, "no conversation thr_gone");
    expect(server.closed).toBe(true);
    const received = client.receive(frame);
    expect(received.messages[0]!.message).toMatchObject({ type: MessageType.ERROR, code: 201, recoverable: false });
    expect(received.close && client.closed).toBe(true);
  });

  it("refuses to switch conversation on a live connection with 107", () => {
    const [client, server] = openPair();
    const received = server.receive(new Connection("client").hello("thr_other"));
    expect(codes(received)).toEqual([ErrorCode.CONVERSATION_SWITCH_REFUSED]);
    expect(received.close).toBe(false);
    expect(messages(server.receive(client.send(user(1))))).toEqual([user(1)]);
  });

  it("makes a client refuse a server that binds another conversation", () => {
    const client = new Connection("client");
    const server = new Connection("server");
    server.receive(client.hello("thr_a"));
    const received = client.receive(server.accept("thr_b")[0]!);
    expect(codes(received)).toEqual([ErrorCode.CONVERSATION_SWITCH_REFUSED]);
    expect(received.close).toBe(true);
  });

  it("keeps each handshake method to its role", () => {
    expect(() => new Connection("server").hello()).toThrow(UsageError);
    expect(() => new Connection("client").accept("c")).toThrow(UsageError);
    expect(() => new Connection("server").accept("c")).toThrow(UsageError); // no Configuration received
  });
});

describe("duplicates and refusals", () => {
  it("drops a duplicate stanza silently", () => {
    const [client, server] = openPair();
    const frame = client.send(user(1));
    expect(server.receive(frame).messages).toHaveLength(1);
    expect(server.receive(frame)).toEqual(EMPTY);
    expect(server.receive(client.send(user(2))).messages[0]!.stanzaId).toBe(2);
  });

  it("skips an unknown type with a recoverable 102; it counts as seen", () => {
    const [, server] = openPair();
    const unknown = packValue({ stanzaId: 1, conversationId: CONVERSATION, type: 4242, body: {} });
    const received = server.receive(unknown);
    expect([received.messages, codes(received), received.close]).toEqual([[], [ErrorCode.UNKNOWN_TYPE], false]);
    expect(server.receive(unknown).replies).toEqual([]); // seen: a replay of it is a duplicate
    const ack = encode({ stanzaId: 0, conversationId: CONVERSATION, message: { type: 8, acknowledgedStanzaId: 1 }, meta: {} });
    expect(hex(server.ack()!)).toBe(hex(ack));
  });

  it("refuses a stanza with the peer's sign with 105", () => {
    const [client, server] = openPair();
    const received = server.receive(encode({ stanzaId: -1, conversationId: CONVERSATION, message: user(1), meta: {} }));
    expect(codes(received)).toEqual([ErrorCode.INVALID_MESSAGE]);
    expect(server.receive(client.send(user(1))).messages[0]!.stanzaId).toBe(1);
  });

  it("closes on the peer's final error", () => {
    const [client, server] = openPair();
    const final: ErrorMessage = { type: MessageType.ERROR, id: "e", code: 501, message: "down", recoverable: false };
    const received = client.receive(server.send(final));
    expect(received.close && client.closed).toBe(true);
    expect(received.messages[0]!.message.type).toBe(MessageType.ERROR);
  });

  it("always delivers the unnumbered messages of a dialect peer", () => {
    const [, server] = openPair();
    const frame = packValue({ conversationId: CONVERSATION, type: 10, body: {} });
    expect([server.receive(frame).messages.length, server.receive(frame).messages.length]).toEqual([1, 1]);
  });

  it("answers bad frames with unnumbered errors naming the conversation", () => {
    const [, server] = openPair();
    const reply = decode(server.receive(Uint8Array.from([0xc1])).replies[0]!);
    expect([reply.stanzaId, reply.conversationId, reply.message.type]).toEqual([0, CONVERSATION, MessageType.ERROR]);
  });
});

describe("acknowledgements", () => {
  it("are cumulative and clear the outbox up to them", () => {
    const [client, server] = openPair();
    const frames = [0, 1, 2, 3].map((n) => server.send(answer(n)));
    client.receive(frames[0]!);
    client.receive(frames[1]!);
    const ack = client.ack()!;
    expect(decode(ack).message).toEqual({ type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: -2 });
    expect(server.receive(ack)).toEqual(EMPTY);
    expect(server.state()!.outbox).toEqual([
      [3, frames[2]],
      [4, frames[3]],
    ]);
  });

  it("are not written when nothing new was seen", () => {
    const [client, server] = openPair();
    expect(client.ack()).toBeUndefined();
    client.receive(server.send(answer(1)));
    expect(client.ack()).toBeDefined();
    expect(client.ack()).toBeUndefined();
  });

  it("can stop at the last stanza whose effects are persisted", () => {
    const [client, server] = openPair();
    for (const n of [0, 1, 2]) client.receive(server.send(answer(n)));
    expect(client.unacknowledged).toBe(3);
    expect(decode(client.ack(2)!).message).toEqual({ type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: -2 });
    expect(client.ack(-2)).toBeUndefined(); // nothing new up to there
    expect(client.unacknowledged).toBe(1);
    expect(decode(client.ack(99)!).message).toEqual({ type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: -3 });
  });

  it("of a stanza never sent are refused with 105", () => {
    const [, server] = openPair();
    const bogus = encode({ stanzaId: 0, conversationId: CONVERSATION, message: { type: 8, acknowledgedStanzaId: -5 }, meta: {} });
    const received = server.receive(bogus);
    expect([codes(received), received.close]).toEqual([[ErrorCode.INVALID_MESSAGE], false]);
  });

  it("are added by receive() for what earlier calls delivered", () => {
    const [client, server] = openPair({ ackEvery: 3 });
    const replies = [0, 1, 2, 3, 4].map((n) => server.receive(client.send(user(n))).replies);
    // The 4th receive acknowledges the 3 stanzas the I/O layer acted on; the 4th is not done yet.
    expect(replies.map((batch) => batch.length)).toEqual([0, 0, 0, 1, 0]);
    expect(decode(replies[3]![0]!).message).toEqual({ type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: 3 });
  });
});

describe("resume", () => {
  it("replays what the client missed, with the original ids", () => {
    let [client, server] = openPair();
    const frames = [0, 1, 2, 3].map((n) => server.send(answer(n)));
    client.receive(frames[0]!);
    client.receive(frames[1]!); // the connection drops: -3 and -4 never arrive, nothing was acked
    const [savedClient, savedServer] = [client.state()!, server.state()!];
    client = Connection.resume(savedClient);
    server = new Connection("server");
    const [hello] = server.receive(client.hello()).messages;
    expect(hello!.message).toEqual({ type: 12, conversationId: CONVERSATION, lastSequenceSeen: 2, features: [] });
    const [reply, ...replay] = server.accept(CONVERSATION, { state: savedServer });
    expect(replay).toEqual(frames.slice(2));
    client.receive(reply!);
    expect(replay.flatMap((frame) => messages(client.receive(frame)))).toEqual([answer(2), answer(3)]);
    expect(server.state()).toEqual({
      role: "server",
      conversationId: CONVERSATION,
      nextStanza: 5,
      lastSeen: 0,
      outbox: [
        [3, frames[2]],
        [4, frames[3]],
      ],
    });
  });

  it("replays what the server missed", () => {
    let [client, server] = openPair();
    server.receive(client.send(user(1)));
    const lost = client.send(user(2)); // never arrives
    const [savedClient, savedServer] = [client.state()!, server.state()!];
    client = Connection.resume(savedClient);
    server = new Connection("server");
    server.receive(client.hello());
    const [reply] = server.accept(CONVERSATION, { state: savedServer });
    expect(decode(reply!).message).toEqual({ type: 12, conversationId: CONVERSATION, lastSequenceSeen: 1, features: [] });
    expect(client.receive(reply!).replies).toEqual([lost]);
    expect(messages(server.receive(lost))).toEqual([user(2)]);
  });

  it("survives JSON (Python's Sequencing.to_dict form) and a restart; numbering continues", () => {
    const [client, server] = openPair();
    const first = client.send(user(1));
    server.receive(first);
    server.send(answer(1));
    const saved = server.state()!;
    const json = JSON.parse(JSON.stringify(sequencingToJSON(saved)));
    expect(Object.keys(json)).toEqual(["role", "conversationId", "nextStanza", "lastSeen", "outbox"]);
    const restored = sequencingFromJSON(json);
    expect(restored).toEqual(saved);
    const detached = Connection.resume(restored);
    expect(detached.send(answer(2))).toEqual(new Uint8Array(0)); // no client connected: kept for the replay
    const again = new Connection("server");
    again.receive(Connection.resume(client.state()!).hello());
    const [, ...replay] = again.accept(CONVERSATION, { state: detached.state() });
    expect(replay.map((frame) => decode(frame).stanzaId)).toEqual([-1, -2]);
    expect(decode(again.send(answer(3))).stanzaId).toBe(-3);
    expect(again.receive(first).messages).toEqual([]); // seen before the restart: a duplicate
  });

  it("keeps a resumed client's sends until the handshake", () => {
    const [client, server] = openPair();
    const resumed = Connection.resume(client.state()!);
    const server2 = new Connection("server");
    expect(resumed.send(user(1))).toEqual(new Uint8Array(0));
    server2.receive(resumed.hello());
    const [reply] = server2.accept(CONVERSATION, { state: server.state() });
    const [queued] = resumed.receive(reply!).replies;
    expect(decode(queued!)).toEqual({ stanzaId: 1, conversationId: CONVERSATION, message: user(1), meta: {} });
  });

  it("numbers past what a peer saw when it saw more than this end remembers", () => {
    const client = new Connection("client");
    const server = new Connection("server");
    server.receive(client.hello(CONVERSATION));
    const state: Sequencing = { role: "server", conversationId: CONVERSATION, nextStanza: 1, lastSeen: 7, outbox: [] };
    for (const frame of server.accept(CONVERSATION, { state })) client.receive(frame);
    expect(decode(client.send(user(1))).stanzaId).toBe(8);
  });

  it("replays everything to a client without state that asks to resume", () => {
    const [, server] = openPair();
    const sent = [0, 1].map((n) => server.send(answer(n)));
    const fresh = new Connection("client");
    const server2 = new Connection("server");
    server2.receive(fresh.hello(CONVERSATION));
    const [, ...replay] = server2.accept(CONVERSATION, { state: server.state() });
    expect(replay).toEqual(sent);
  });

  it("refuses a state of the other role", () => {
    const state: Sequencing = { role: "server", conversationId: "c", nextStanza: 1, lastSeen: 0, outbox: [] };
    expect(() => new Connection("client", { state })).toThrow(UsageError);
    expect(() => sequencingFromJSON({ role: "peer" })).toThrow(UsageError);
  });
});

describe("sending", () => {
  it("needs a conversation and refuses the connection's own frames", () => {
    expect(() => new Connection("client").send(user(1))).toThrow(UsageError);
    const [client] = openPair();
    expect(() => client.send({ type: MessageType.ACKNOWLEDGEMENT, acknowledgedStanzaId: 1 })).toThrow(UsageError);
    expect(() => client.send({ type: MessageType.CONFIGURATION })).toThrow(UsageError);
  });

  it("refuses a frame over the limit without taking a stanza id", () => {
    const [client] = openPair({ limits: { ...DEFAULT_LIMITS, maxFrameBytes: 200 } });
    let refused: unknown;
    try {
      client.send({ type: MessageType.USER_MESSAGE, id: "m", content: "x".repeat(300) });
    } catch (error) {
      refused = error;
    }
    expect((refused as ProtocolError).code).toBe(ErrorCode.FRAME_TOO_LARGE);
    expect(decode(client.send({ type: MessageType.CONTROL_STOP })).stanzaId).toBe(1);
  });

  it("keeps the newest frames in the outbox, up to its bound", () => {
    const [client] = openPair({ maxOutbox: 2 });
    for (const n of [0, 1, 2]) client.send(user(n));
    expect(client.state()!.outbox.map(([stanza]) => stanza)).toEqual([2, 3]);
  });
});
