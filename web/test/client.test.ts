// The client against a scripted fake server over in-memory transports: registration, every kind
// of request and its answer, the ledger, consent, streamed answers, reconnect and resume.

import { afterEach, describe, it } from "node:test";

import { type ConnectOptions, connect, type ToolwireClient } from "../src/client.js";
import { NO_HANDLER } from "../src/consent.js";
import { ConnectionClosed, ErrorCode, RegistrationError, RunFailed, ToolError, UsageError } from "../src/errors.js";
import type { ClientEvent } from "../src/events.js";
import type { ClientToolGroup, ConsentRequest, ToolUseCancel, ToolUseRequest } from "../src/messages.js";
import { type ClientState, type StateStore, webStorage } from "../src/state.js";
import { argumentProblems, ToolResponse, toWire } from "../src/tools.js";
import { backoff, hintedUrl, socketUrl } from "../src/transport.js";
import { MessageType, type WireMap } from "../src/wire.js";
import { expect } from "./expect.js";
import { FakeServer } from "./fake-server.js";
import { until } from "./support.js";

const PAGE: ClientToolGroup = {
  name: "Page",
  description: "The page the user has open",
  tools: [
    {
      name: "GetSelection",
      description: "The selected text",
      parametersSchema: { type: "object", properties: { trim: { type: "boolean" } } },
    },
    {
      name: "ShowMessage",
      parametersSchema: {
        type: "object",
        properties: { text: { type: "string" }, severity: { type: ["string", "null"] }, count: { type: "integer" } },
        required: ["text"],
        additionalProperties: false,
      },
    },
    { name: "DeleteNote", requiresPermission: true },
  ],
};

const clients: ToolwireClient[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

async function start(options: Partial<ConnectOptions> = {}, server = new FakeServer()) {
  const events: ClientEvent[] = [];
  const client = await connect("ws://test.invalid/ws", {
    token: "secret-token-0123456789",
    dial: server.dial,
    groups: [PAGE],
    handlers: { GetSelection: () => "selected text", ShowMessage: () => null },
    onEvent: (event) => events.push(event),
    ...options,
  });
  clients.push(client);
  return { server, client, events };
}

function request(id: string, toolName: string, args: WireMap = {}, extra: Partial<ToolUseRequest> = {}): ToolUseRequest {
  return { type: MessageType.TOOL_USE_REQUEST, id, toolName, arguments: args, execution: "client", ...extra };
}

function consentRequest(id: string, extra: Partial<ConsentRequest> = {}): ConsentRequest {
  return { type: MessageType.CONSENT_REQUEST, id, callId: `call_${id}`, toolName: "DeleteNote", mode: "destructive", ...extra };
}

function memoryStore(): StateStore & { saved: ClientState | undefined; saves: number } {
  return {
    saved: undefined,
    saves: 0,
    load() {
      return this.saved === undefined ? undefined : (JSON.parse(JSON.stringify(this.saved)) as ClientState);
    },
    save(state) {
      this.saves += 1;
      this.saved = JSON.parse(JSON.stringify(state)) as ClientState;
    },
  };
}

describe("connecting", () => {
  it("presents the token as a query parameter, opens a conversation and registers the groups", async () => {
    const { server, client, events } = await start({ expandedContainers: ["Page"] });
    expect(server.urls).toEqual(["ws://test.invalid/ws?token=secret-token-0123456789"]);
    expect(client.conversationId).toBe("conv_1");
    expect(client.connectionState).toBe("open");
    const [registration] = server.all(MessageType.REGISTER_TOOLS);
    expect(registration).toEqual({ type: 100, groups: [PAGE], expandedContainers: ["Page"], resetClientState: false });
    expect(events.filter((e) => e.kind === "connection")).toEqual([{ kind: "connection", state: "open" }]);
  });

  it("rejects with the server's message, group and tool when the registration is refused", async () => {
    const server = new FakeServer();
    server.autoRegister = false;
    const error = "client tool registration refused (group 'Page', tool 'Get Selection'): not a valid name";
    server.onMessage = (envelope) => {
      if (envelope.message.type === MessageType.REGISTER_TOOLS) {
        server.send({ type: MessageType.REGISTER_TOOLS_RESULT, ok: false, error, group: "Page", tool: "Get Selection" });
      }
    };
    const refused = await start({}, server).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RegistrationError);
    expect(refused).toMatchObject({ message: error, group: "Page", tool: "Get Selection" });
  });

  it("rejects with ConnectionClosed and the code when the server refuses the conversation", async () => {
    const refused = await start({ conversationId: "conv_gone" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectionClosed);
    expect(refused).toMatchObject({ code: ErrorCode.CONVERSATION_NOT_FOUND });
  });

  it("rejects with ConnectionClosed when the server cannot be reached", async () => {
    const server = new FakeServer();
    server.unreachable = 1;
    const refused = await start({}, server).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectionClosed);
    expect((refused as Error).message).toContain("connection refused");
  });

  it("gives up a dial that neither opens nor fails at the handshake's deadline, and dials again", async () => {
    const { server, client, events } = await start({ reconnect: { initialDelayMs: 1, maxDelayMs: 5 }, handshakeTimeoutMs: 50 });
    server.hanging = 1; // the next dial hangs (a proxy that holds the upgrade)
    server.drop();
    await until(() => events.filter((e) => e.kind === "connection" && e.state === "open").length === 2);
    const states = events.filter((e) => e.kind === "connection").map((e) => e.kind === "connection" && [e.state, e.attempt]);
    expect(states).toEqual([["open", undefined], ["reconnecting", 1], ["reconnecting", 2], ["open", undefined]]);
    expect(server.urls.length).toBe(3); // the first connection, the hanging dial, the one that opened
    expect(client.conversationId).toBe("conv_1");
  });

  it("resolves relative URLs against the page and keeps other query parameters", () => {
    const global = globalThis as { location?: { href: string } };
    global.location = { href: "https://app.example/chat/index.html" };
    try {
      expect(socketUrl("/ws", "t")).toBe("wss://app.example/ws?token=t");
      expect(socketUrl("ws://h:1/ws?x=1&token=old", "t&u")).toBe("ws://h:1/ws?x=1&token=t%26u");
    } finally {
      delete global.location;
    }
  });

  it("names the conversation in a reconnect's URL, replacing an older hint", () => {
    expect(hintedUrl("ws://h:1/ws?token=t", "conv_1")).toBe("ws://h:1/ws?token=t&conversation=conv_1");
    expect(hintedUrl("ws://h:1/ws?conversation=old&token=t", "conv_2")).toBe("ws://h:1/ws?conversation=conv_2&token=t");
    expect(hintedUrl("ws://h:1/ws?token=t", undefined)).toBe("ws://h:1/ws?token=t");
  });
});

describe("client tool requests", () => {
  it("are always answered with the request's id: success, unknown tool, invalid parameters", async () => {
    const { server } = await start({ handlers: { GetSelection: () => "selected text", ShowMessage: () => ({ shown: true }) } });
    server.send(request("r1", "GetSelection"));
    expect(await server.result("r1")).toEqual({
      type: 7,
      id: "r1",
      success: true,
      result: { value: "selected text" },
      terminal: false,
      content: [],
    });
    server.send(request("r2", "ShowMessage", { text: "hi", severity: null, count: 2 }));
    expect(await server.result("r2")).toMatchObject({ success: true, result: { shown: true }, content: [] }); // the value, once
    server.send(request("r3", "Nope"));
    expect(await server.result("r3")).toMatchObject({ success: false, errorCode: "unknown_tool", errorMessage: "This client has no tool 'Nope'." });
    server.send(request("r4", "ShowMessage", { severity: 3, extra: 1, count: 1.5 }));
    expect(await server.result("r4")).toMatchObject({
      success: false,
      errorCode: "invalid_parameters",
      errorMessage:
        "Invalid arguments for tool 'ShowMessage': 'text' is a required property; 'severity' must be of type string or null; " +
        "'extra' is not an allowed property; 'count' must be of type integer",
    });
  });

  it("turn a thrown error into execution_error and a ToolError into its own code", async () => {
    const { server } = await start({
      handlers: {
        GetSelection: () => {
          throw new Error("no selection");
        },
        ShowMessage: async () => {
          throw new ToolError("slow down", { code: "rate_limited", terminal: true, needsFollowup: false });
        },
      },
    });
    server.send(request("r1", "GetSelection"));
    expect(await server.result("r1")).toMatchObject({ success: false, errorCode: "execution_error", errorMessage: "no selection" });
    server.send(request("r2", "ShowMessage", { text: "x" }));
    expect(await server.result("r2")).toMatchObject({
      success: false,
      errorCode: "rate_limited",
      errorMessage: "slow down",
      terminal: true,
      needsFollowup: false,
    });
  });

  it("answer timeout when the handler outlives the deadline, and abort its signal", async () => {
    let signal: AbortSignal | undefined;
    const { server } = await start({
      handlers: {
        GetSelection: (_, context) => {
          signal = context.signal;
          return new Promise(() => {});
        },
        ShowMessage: { handler: () => new Promise(() => {}), timeoutMs: 20 },
      },
    });
    server.send(request("r1", "GetSelection", {}, { timeoutMs: 30 }));
    expect(await server.result("r1")).toMatchObject({
      success: false,
      errorCode: "timeout",
      errorMessage: "Tool execution exceeded timeout of 30ms",
      result: { timeout: { durationMs: 30 } },
    });
    expect(signal?.aborted).toBe(true);
    server.send(request("r2", "ShowMessage", { text: "x" }));
    expect(await server.result("r2")).toMatchObject({ errorCode: "timeout", errorMessage: "Tool execution exceeded timeout of 20ms" });
  });

  it("carry content items, binary data and an augmentation from a ToolResponse", async () => {
    const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47]);
    const { server } = await start({
      handlers: {
        GetSelection: () =>
          new ToolResponse({
            content: [
              { type: "text", text: "two words" },
              { type: "binary", mimeType: "image/png", data: png, filename: "shot.png" },
            ],
            augmentation: { expandToolGroups: ["Page"], addContext: [{ key: "page", value: "notes" }] },
          }),
        ShowMessage: () => new ToolResponse({ success: false, errorMessage: "the page is hidden" }),
      },
    });
    server.send(request("r1", "GetSelection"));
    expect(await server.result("r1")).toMatchObject({
      success: true,
      content: [
        { type: "text", text: "two words" },
        { type: "binary", mimeType: "image/png", data: png, filename: "shot.png" },
      ],
      augmentation: { expandToolGroups: ["Page"], addContext: [{ key: "page", value: "notes" }] },
    });
    server.send(request("r2", "ShowMessage", { text: "x" }));
    expect(await server.result("r2")).toMatchObject({ success: false, errorCode: "execution_error", errorMessage: "the page is hidden" });
  });

  it("refuse values that cannot travel", async () => {
    const { server } = await start({
      handlers: { GetSelection: () => ({ big: 1n }), ShowMessage: () => "x".repeat(1024 * 1024) },
    });
    server.send(request("r1", "GetSelection"));
    expect(await server.result("r1")).toMatchObject({ errorCode: "execution_error" });
    server.send(request("r2", "ShowMessage", { text: "x" }));
    expect(await server.result("r2")).toMatchObject({ errorCode: "result_too_large" });
  });

  it("are never run twice: a re-delivered request is answered from the ledger", async () => {
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { server, client, events } = await start({
      handlers: {
        GetSelection: async () => {
          runs += 1;
          await gate;
          return "once";
        },
      },
    });
    server.send(request("r1", "GetSelection"));
    await until(() => runs === 1);
    server.send(request("r1", "GetSelection")); // while it runs: nothing more happens
    await until(() => server.states.get(server.conversationId)!.outbox.length === 0, 5_000, "the acks"); // seen
    release();
    const first = await server.result("r1");
    server.send(request("r1", "GetSelection")); // after: the same answer, nothing runs
    expect(await server.result("r1")).toEqual(first);
    expect(runs).toBe(1);
    expect(server.all(MessageType.TOOL_USE_RESULT)).toEqual([]);
    expect(client.ledger.get("r1")?.result).toMatchObject({ id: "r1", success: true, result: { value: "once" } });
    const calls = events.filter((e) => e.kind === "clientToolCall");
    expect(calls.map((e) => e.kind === "clientToolCall" && e.replayed)).toEqual([false, true]);
  });

  it("leave the server's own calls alone: shown as events, never run, never answered", async () => {
    let calls = 0;
    const handler = () => ((calls += 1), "x");
    const { server, events } = await start({ handlers: { web_search: handler } });
    server.send(request("s1", "web_search", { query: "pasta" }, { execution: "server", mode: "external" }));
    server.send({ type: MessageType.TOOL_USE_RESULT, id: "s1", success: true, result: { hits: 3 } });
    await until(() => events.some((e) => e.kind === "serverToolResult"));
    const mirrored = events.filter((e) => e.kind === "serverToolCall" || e.kind === "serverToolResult");
    expect(mirrored).toMatchObject([
      { kind: "serverToolCall", request: { id: "s1", toolName: "web_search", execution: "server" } },
      { kind: "serverToolResult", toolName: "web_search", result: { id: "s1", success: true, result: { hits: 3 } } },
    ]);
    expect(calls).toBe(0);
    expect(server.all(MessageType.TOOL_USE_RESULT)).toEqual([]);
  });
});

describe("withdrawn calls and refused results", () => {
  const cancel = (id: string, code: string, reason?: string): ToolUseCancel => ({
    type: MessageType.TOOL_USE_CANCEL,
    id,
    code,
    ...(reason !== undefined && { reason }),
  });

  it("abort the running handler on ToolUseCancel and send no result, also when the handler ends later", async () => {
    let signal: AbortSignal | undefined;
    let finish!: (value: string) => void;
    const { server, client, events } = await start({
      handlers: {
        GetSelection: (_, context) => {
          signal = context.signal;
          return new Promise<string>((resolve) => (finish = resolve));
        },
        ShowMessage: () => "shown",
      },
    });
    server.send(request("r1", "GetSelection"));
    await until(() => signal !== undefined, 5_000, "the handler");
    server.send(cancel("r1", "timeout", "Tool execution exceeded timeout of 30000ms"));
    await until(() => signal!.aborted, 5_000, "the abort");
    expect(signal!.reason).toBeInstanceOf(ToolError);
    expect(signal!.reason).toMatchObject({
      code: "timeout",
      message: "the server withdrew the call (timeout): Tool execution exceeded timeout of 30000ms",
    });
    finish("too late"); // the handler ignores its signal and ends anyway: nothing goes out
    server.send(request("r2", "ShowMessage", { text: "x" }));
    await server.result("r2"); // answered after r1's handler ended
    expect(server.all(MessageType.TOOL_USE_RESULT)).toEqual([]);
    expect(client.ledger.get("r1")).toEqual({
      request: request("r1", "GetSelection", {}, { timeoutMs: 30_000 }),
      withdrawn: { code: "timeout", reason: "Tool execution exceeded timeout of 30000ms" },
    });
    expect(events.filter((e) => e.kind === "clientToolCanceled")).toEqual([
      {
        kind: "clientToolCanceled",
        requestId: "r1",
        request: request("r1", "GetSelection", {}, { timeoutMs: 30_000 }),
        code: "timeout",
        reason: "Tool execution exceeded timeout of 30000ms",
        running: true,
      },
    ]);
    expect(events.filter((e) => e.kind === "clientToolCall").map((e) => e.kind === "clientToolCall" && e.request.id)).toEqual(["r2"]);
    server.send(cancel("r1", "timeout")); // told twice: once is enough
    server.send(cancel("r_unknown", "client_disconnected")); // a request this client never had
    await until(() => events.filter((e) => e.kind === "clientToolCanceled").length === 2);
    expect(events.filter((e) => e.kind === "clientToolCanceled").at(-1)).toEqual({
      kind: "clientToolCanceled",
      requestId: "r_unknown",
      code: "client_disconnected",
      running: false,
    });
  });

  it("are never run again: not when the request is delivered again, not after a reload", async () => {
    const store = memoryStore();
    const server = new FakeServer();
    const runs: string[] = [];
    const forever = (name: string) => () => {
      runs.push(name);
      return new Promise(() => {});
    };
    const first = await start(
      { persist: store, handlers: { GetSelection: forever("GetSelection"), DeleteNote: forever("DeleteNote") } },
      server,
    );
    server.send(request("read1", "GetSelection", {}, { mode: "read" }));
    server.send(request("del1", "DeleteNote", {}, { mode: "destructive" }));
    await until(() => runs.length === 2, 5_000, "both handlers");
    server.send(cancel("read1", "canceled", "the run was stopped"));
    server.send(cancel("del1", "canceled", "the run was stopped"));
    await until(() => first.events.filter((e) => e.kind === "clientToolCanceled").length === 2);
    server.send(request("read1", "GetSelection", {}, { mode: "read" })); // delivered again: nothing happens
    await until(() => server.states.get("conv_1")!.outbox.length === 0, 5_000, "the acks");
    expect(store.saved!.ledger.map((entry) => entry.withdrawn)).toEqual([
      { code: "canceled", reason: "the run was stopped" },
      { code: "canceled", reason: "the run was stopped" },
    ]);
    // The page reloads: a new client resumes from the store, where both calls are settled.
    server.drop();
    first.client.close();
    const second = await start(
      { persist: store, handlers: { GetSelection: forever("GetSelection again"), DeleteNote: forever("DeleteNote again") } },
      server,
    );
    expect(second.client.ledger.get("del1")?.withdrawn).toEqual({ code: "canceled", reason: "the run was stopped" });
    server.send(request("del1", "DeleteNote", {}, { mode: "destructive" }));
    server.send(request("r2", "ShowMessage", { text: "after" }));
    await server.result("r2");
    expect(runs).toEqual(["GetSelection", "DeleteNote"]);
    expect(server.all(MessageType.TOOL_USE_RESULT)).toEqual([]);
    const started = second.events.filter((e) => e.kind === "clientToolStarted").map((e) => e.kind === "clientToolStarted" && e.request.id);
    expect(started).toEqual(["r2"]);
    expect(second.events.filter((e) => e.kind === "clientToolCanceled")).toEqual([]);
  });

  it("report a result the server refused (302 naming its stanza) as resultRefused, during the run and after it", async () => {
    const { server, client, events } = await start();
    const run = client.send("go");
    await server.take(MessageType.USER_MESSAGE);
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "started" });
    server.send(request("r1", "GetSelection"));
    const answered = await server.take(MessageType.TOOL_USE_RESULT); // it crosses the withdrawal
    server.send(cancel("r1", "canceled", "the run was stopped"));
    server.send({ type: MessageType.ERROR, id: "e1", code: 302, message: "no open request 'r1'", severity: 1, originatingId: answered.stanzaId });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "finished", reason: "canceled" });
    const seen: ClientEvent[] = [];
    for await (const event of run) seen.push(event);
    expect(seen.map((e) => e.kind)).toEqual(["runStarted", "clientToolStarted", "clientToolCall", "clientToolCanceled", "resultRefused", "runFinished"]);
    expect(seen.find((e) => e.kind === "clientToolCanceled")).toMatchObject({ requestId: "r1", running: false });
    const sent = { type: 7, id: "r1", success: true, result: { value: "selected text" } };
    expect(seen.find((e) => e.kind === "resultRefused")).toEqual({
      kind: "resultRefused",
      request: request("r1", "GetSelection", {}, { timeoutMs: 30_000 }),
      result: sent,
      message: "no open request 'r1'",
    });
    expect(client.ledger.get("r1")).toMatchObject({ result: sent, stanzaId: answered.stanzaId, withdrawn: { code: "canceled" } });

    // After the run: onEvent still hears of it. An answer sent again from the ledger is another matter.
    server.send(request("r2", "GetSelection"));
    const late = await server.take(MessageType.TOOL_USE_RESULT);
    server.send(request("r2", "GetSelection")); // delivered twice: the ledger's answer goes out again
    const again = await server.take(MessageType.TOOL_USE_RESULT);
    server.send({ type: MessageType.ERROR, id: "e2", code: 302, message: "request 'r2' was answered", severity: 1, originatingId: again.stanzaId });
    server.send({ type: MessageType.ERROR, id: "e3", code: 302, message: "no open request 'r2'", severity: 1, originatingId: late.stanzaId });
    await until(() => events.filter((e) => e.kind === "resultRefused").length === 2, 5_000, "the second refusal");
    expect(events.filter((e) => e.kind === "resultRefused" || e.kind === "warning")).toMatchObject([
      { kind: "resultRefused", request: { id: "r1" } },
      { kind: "warning", message: "the server refused an answer (302): request 'r2' was answered" },
      { kind: "resultRefused", request: { id: "r2" }, result: { id: "r2", success: true }, message: "no open request 'r2'" },
    ]);
  });

  it("name each result's stanza in the saved state, so that a refusal after a reload is reported", async () => {
    const store = memoryStore();
    const server = new FakeServer();
    const first = await start({ persist: store }, server);
    server.send(request("r1", "GetSelection"));
    const answered = await server.take(MessageType.TOOL_USE_RESULT);
    expect(store.saved!.ledger[0]).toMatchObject({ stanzaId: answered.stanzaId });
    server.drop();
    first.client.close();
    server.send({ type: MessageType.ERROR, id: "e1", code: 302, message: "no open request 'r1'", severity: 1, originatingId: answered.stanzaId });
    const second = await start({ persist: store }, server);
    await until(() => second.events.some((e) => e.kind === "resultRefused"), 5_000, "the refusal");
    expect(second.events.find((e) => e.kind === "resultRefused")).toMatchObject({ request: { id: "r1" }, result: { id: "r1", success: true } });
  });
});

describe("consent prompts", () => {
  it("are answered by onConsent: once, for the thread, or denied with a reason", async () => {
    const decisions = [true, { allow: true, scope: "thread" as const }, { allow: false, reason: "keep my notes" }, false];
    const asked: string[] = [];
    const { server, events } = await start({
      onConsent: (req) => {
        asked.push(req.id);
        return decisions.shift()!;
      },
    });
    for (const id of ["c1", "c2", "c3", "c4"]) server.send(consentRequest(id));
    await until(() => server.all(MessageType.CONSENT_ANSWER).length === 4);
    expect(server.all(MessageType.CONSENT_ANSWER)).toEqual([
      { type: 103, id: "c1", allow: true, scope: "once" },
      { type: 103, id: "c2", allow: true, scope: "thread" },
      { type: 103, id: "c3", allow: false, scope: "once", reason: "keep my notes" },
      { type: 103, id: "c4", allow: false, scope: "once", reason: "the user said no" },
    ]);
    expect(asked).toEqual(["c1", "c2", "c3", "c4"]);
    expect(events.filter((e) => e.kind === "consent")).toHaveLength(4);
    server.send(consentRequest("c3")); // asked again: the same answer, nobody is asked
    await until(() => server.all(MessageType.CONSENT_ANSWER).length === 5);
    expect(server.all(MessageType.CONSENT_ANSWER)[4]).toMatchObject({ id: "c3", allow: false });
    expect(asked).toHaveLength(4);
  });

  it("deny without a handler, when the handler fails, and never grant a thread scope that is not allowed", async () => {
    const { server } = await start();
    server.send(consentRequest("c1"));
    expect((await server.take(MessageType.CONSENT_ANSWER)).message).toEqual({ type: 103, id: "c1", allow: false, scope: "once", reason: NO_HANDLER });
    const other = await start({
      onConsent: async (req) => {
        if (req.id === "c2") throw new Error("dialog crashed");
        return { allow: true, scope: "thread" };
      },
    });
    other.server.send(consentRequest("c2"));
    other.server.send(consentRequest("c3", { allowAlways: false }));
    await until(() => other.server.all(MessageType.CONSENT_ANSWER).length === 2);
    expect(other.server.all(MessageType.CONSENT_ANSWER)).toEqual([
      { type: 103, id: "c2", allow: false, scope: "once", reason: "the consent handler failed: dialog crashed" },
      { type: 103, id: "c3", allow: true, scope: "once" },
    ]);
  });
});

describe("chatting", () => {
  it("asks for streamed answers once by default, and also whole with the wholeAnswers option", async () => {
    const { server } = await start();
    expect(server.hellos[0]!.features).toEqual(["clientTools", "consent", "runStatus", "resume", "runQueue"]);
    const whole = await start({ wholeAnswers: true });
    expect(whole.server.hellos[0]!.features).toContain("wholeAnswers");
  });

  it("streams a run's events to the Run and to onEvent", async () => {
    const { server, client, events } = await start();
    const run = client.send("What did I select?");
    const message = (await server.take(MessageType.USER_MESSAGE)).message;
    expect(message).toMatchObject({ type: 2, content: "What did I select?" });
    expect(message.id).toMatch(/^msg_[0-9a-f]{32}$/);
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "started" });
    server.send({ type: MessageType.START_ANSWER, messageId: "a1", previousId: message.id });
    server.send({ type: MessageType.ASSISTANT_SENTENCE, messageId: "a1", sequence: 0, text: "You selected " });
    server.send({ type: MessageType.ASSISTANT_SENTENCE, messageId: "a1", sequence: 1, text: "two words." });
    server.send({ type: MessageType.ASSISTANT_SENTENCE, messageId: "a1", sequence: 2, text: "", isFinal: true });
    server.send({ type: MessageType.ASSISTANT_MESSAGE, id: "a1m", content: "You selected two words." });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "finished", reason: "answer", output: "You selected two words." });
    const seen: ClientEvent[] = [];
    for await (const event of run) seen.push(event);
    expect(seen).toEqual([
      { kind: "runStarted", runId: "run_1" },
      { kind: "answerStarted", messageId: "a1", previousId: message.id },
      { kind: "answerText", messageId: "a1", sequence: 0, text: "You selected ", isFinal: false },
      { kind: "answerText", messageId: "a1", sequence: 1, text: "two words.", isFinal: false },
      { kind: "answerText", messageId: "a1", sequence: 2, text: "", isFinal: true },
      { kind: "assistantMessage", id: "a1m", content: "You selected two words." },
      { kind: "runFinished", runId: "run_1", reason: "answer", output: "You selected two words." },
    ]);
    expect(await run.finished).toEqual(seen.at(-1));
    expect(events.slice(-seen.length)).toEqual(seen);
  });

  it("answers ask() with the output; refuses a second send while a run is in progress", async () => {
    const { server, client } = await start();
    server.onMessage = (envelope) => {
      if (envelope.message.type !== MessageType.USER_MESSAGE) return;
      server.send({ type: MessageType.RUN_STATUS, runId: "run_9", status: "started" });
      server.send({ type: MessageType.RUN_STATUS, runId: "run_9", status: "finished", reason: "answer", output: "Done." });
    };
    const answer = client.ask("go");
    expect(() => client.send("again")).toThrow(UsageError);
    expect(await answer).toBe("Done.");
  });

  it("fails the run when the server refuses the message or the run fails", async () => {
    const { server, client } = await start();
    const refused = client.send("now");
    const stanza = (await server.take(MessageType.USER_MESSAGE)).stanzaId;
    server.send({ type: MessageType.ERROR, id: "e1", code: 105, message: "a run is in progress", severity: 1, originatingId: stanza });
    await expect(refused.finished).rejects.toThrow(RunFailed);
    await expect(refused.finished).rejects.toThrow("the server refused the message: a run is in progress");
    const failed = client.send("again");
    await server.take(MessageType.USER_MESSAGE);
    server.send({ type: MessageType.RUN_STATUS, runId: "run_2", status: "started" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_2", status: "failed", detail: "the model is unreachable" });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const event of failed) seen.push(event.kind);
      })(),
    ).rejects.toMatchObject({ message: "the run failed: the model is unreachable", runId: "run_2" });
    expect(seen).toEqual(["runStarted", "runFailed"]);
  });

  it("waits in the server's queue: runQueued with its place as it moves, then runStarted; a busy server's refusal carries 503", async () => {
    const { server, client } = await start();
    const run = client.send("hi");
    const mine = (await server.take(MessageType.USER_MESSAGE)).message.id;
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "queued", position: 2, messageId: mine });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "queued", position: 1, messageId: mine });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "started", messageId: mine });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "finished", reason: "answer", output: "done", messageId: mine });
    const seen: ClientEvent[] = [];
    for await (const event of run) seen.push(event);
    expect(seen.map((e) => (e.kind === "runQueued" ? `queued ${e.position}` : e.kind))).toEqual(["queued 2", "queued 1", "runStarted", "runFinished"]);
    const busy = client.send("again");
    const stanza = (await server.take(MessageType.USER_MESSAGE)).stanzaId;
    server.send({ type: MessageType.ERROR, id: "e2", code: 503, message: "server busy: send the message again later", severity: 1, originatingId: stanza });
    await expect(busy.finished).rejects.toMatchObject({ code: 503 });
  });

  it("follows the run that names its message, not an earlier one replayed after a reload", async () => {
    const { server, client } = await start();
    const run = client.send("hi");
    const mine = (await server.take(MessageType.USER_MESSAGE)).message.id;
    server.send({ type: MessageType.ASSISTANT_SENTENCE, messageId: "a0", sequence: 0, text: "old answer" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_old", status: "started", messageId: "msg_earlier" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_old", status: "finished", reason: "answer", messageId: "msg_earlier" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_new", status: "started", messageId: mine });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_old", status: "failed", detail: "late news" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_new", status: "finished", reason: "answer", output: "new", messageId: mine });
    const seen: ClientEvent[] = [];
    for await (const event of run) seen.push(event);
    expect(seen).toEqual([
      { kind: "runStarted", runId: "run_new", messageId: mine },
      { kind: "runFinished", runId: "run_new", messageId: mine, reason: "answer", output: "new" },
    ]);
  });

  it("follows its run when the server resumes it under a new run id (a restart, another replica)", async () => {
    const { server, client } = await start();
    const run = client.send("hi");
    const mine = (await server.take(MessageType.USER_MESSAGE)).message.id;
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "started", messageId: mine });
    // The replica running it died; the one that took the conversation over resumes it.
    server.send({ type: MessageType.RUN_STATUS, runId: "run_2", status: "started" });
    server.send({ type: MessageType.RUN_STATUS, runId: "run_2", status: "finished", reason: "answer", output: "done" });
    expect(await run.finished).toMatchObject({ runId: "run_2", output: "done" });
    expect(run.runId).toBe("run_2");
  });

  it("stops the run in progress with ControlStop", async () => {
    const { server, client, events } = await start();
    client.send("long task");
    await server.take(MessageType.USER_MESSAGE);
    server.send({ type: MessageType.RUN_STATUS, runId: "run_3", status: "started" });
    await until(() => events.some((e) => e.kind === "runStarted"));
    client.stop("user pressed stop");
    expect((await server.take(MessageType.CONTROL_STOP)).message).toEqual({ type: 10, runId: "run_3", reason: "user pressed stop" });
  });

  it("reports the server's recoverable errors as events; a refused answer after a resume as a warning", async () => {
    const { server, events } = await start();
    server.send({ type: MessageType.ERROR, id: "e1", code: 105, message: "a client does not send StartAnswer", severity: 1 });
    server.send({ type: MessageType.ERROR, id: "e2", code: 302, message: "no open request 'r9'", severity: 1 });
    await until(() => events.some((e) => e.kind === "warning"));
    expect(events.filter((e) => e.kind === "serverError" || e.kind === "warning")).toMatchObject([
      { kind: "serverError", error: { code: 105 } },
      { kind: "warning", message: "the server refused an answer (302): no open request 'r9'" },
    ]);
  });
});

describe("reconnecting", () => {
  it("resumes the same conversation after a drop; both sides replay what the other missed", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { server, client, events } = await start({
      reconnect: { initialDelayMs: 1, maxDelayMs: 5 },
      handlers: { GetSelection: () => gate.then(() => "late answer") },
    });
    const run = client.send("hi");
    const sent = await server.take(MessageType.USER_MESSAGE);
    server.send(request("r1", "GetSelection"));
    await until(() => client.ledger.get("r1") !== undefined);
    server.unreachable = 2; // the first two attempts fail
    server.drop();
    const started = server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "started" }); // nobody listens
    release(); // the answer is ready while disconnected
    await until(() => client.ledger.get("r1")?.result !== undefined);
    server.send({ type: MessageType.RUN_STATUS, runId: "run_1", status: "finished", reason: "answer", output: "ok" });
    expect(await run.finished).toMatchObject({ runId: "run_1", output: "ok" });
    const result = await server.result("r1");
    expect(result).toMatchObject({ success: true, result: { value: "late answer" } });
    expect(server.connections).toBe(2);
    // Each reconnect names its conversation: the hint a load balancer hashes on (docs/deployment.md).
    const again = "ws://test.invalid/ws?token=secret-token-0123456789&conversation=conv_1";
    expect(server.urls.slice(1)).toEqual([again, again, again]);
    expect(client.conversationId).toBe("conv_1");
    expect(started).toBe(3); // after RegisterToolsResult (-1) and the request (-2), replayed with its id
    const states = events.filter((e) => e.kind === "connection").map((e) => e.kind === "connection" && [e.state, e.attempt]);
    expect(states).toEqual([["open", undefined], ["reconnecting", 1], ["reconnecting", 2], ["reconnecting", 3], ["open", undefined]]);
    expect(server.all(MessageType.USER_MESSAGE)).toEqual([]); // the message was not sent twice
    expect(sent.stanzaId).toBe(2);
  });

  it("gives up after its attempts: pending work fails with ConnectionClosed", async () => {
    const { server, client, events } = await start({ reconnect: { attempts: 2, initialDelayMs: 1 } });
    const run = client.send("hi");
    await server.take(MessageType.USER_MESSAGE);
    server.unreachable = 5;
    server.drop();
    await expect(run.finished).rejects.toThrow(ConnectionClosed);
    await expect(run.finished).rejects.toThrow("gave up reconnecting after 2 attempts");
    expect(client.connectionState).toBe("closed");
    expect(events.at(-1)).toMatchObject({ kind: "connection", state: "closed", error: { message: /gave up/ } });
    expect(() => client.send("more")).toThrow(ConnectionClosed);
  });

  it("stops at once, without retrying, when the server refuses the token", async () => {
    const { server, client, events } = await start({ reconnect: { attempts: Infinity, initialDelayMs: 1, maxDelayMs: 5 } });
    const run = client.send("hi");
    await server.take(MessageType.USER_MESSAGE);
    server.unreachable = 2; // down for a while (a restart), then up with another token
    server.refuseToken = true;
    server.drop();
    await expect(run.finished).rejects.toThrow("refused the token");
    expect(client.connectionState).toBe("closed");
    expect(server.urls.length).toBe(4); // the first connection, two unreachable attempts, one refused
    const closed = events.at(-1);
    expect(closed).toMatchObject({ kind: "connection", state: "closed", error: { code: ErrorCode.UNAUTHENTICATED } });
  });

  it("does not reconnect when told not to, nor after close()", async () => {
    const { server, client } = await start({ reconnect: false });
    server.drop();
    await until(() => client.connectionState === "closed");
    const other = await start();
    other.client.close();
    await expect(other.client.register([PAGE])).rejects.toThrow("the client was closed");
    expect(other.server.connections).toBe(1);
  });

  it("closes for good on the server's final error", async () => {
    const { server, client } = await start();
    server.send({ type: MessageType.ERROR, id: "e", code: 501, message: "shutting down", recoverable: false, severity: 3 });
    await until(() => client.connectionState === "closed");
    expect(() => client.send("x")).toThrow("the server closed the conversation: shutting down");
  });

  it("waits between attempts: growing delays with jitter, the first at once", () => {
    expect(backoff(1)).toBe(0);
    for (let attempt = 2; attempt < 12; attempt++) {
      const delay = backoff(attempt, { initialDelayMs: 100, maxDelayMs: 5_000, factor: 2 });
      const full = Math.min(5_000, 100 * 2 ** (attempt - 2));
      expect(delay).toBeGreaterThanOrEqual(full / 2);
      expect(delay).toBeLessThanOrEqual(full);
    }
  });
});

describe("state", () => {
  it("is saved after every change and lets a reloaded page resume: interrupted calls and prompts are finished", async () => {
    const store = memoryStore();
    const server = new FakeServer();
    const first = await start(
      {
        persist: store,
        handlers: { GetSelection: () => new Promise(() => {}), DeleteNote: () => new Promise(() => {}) },
        onConsent: () => new Promise(() => {}),
      },
      server,
    );
    server.send(request("read1", "GetSelection", {}, { mode: "read" }));
    server.send(request("del1", "DeleteNote", {}, { mode: "destructive" }));
    server.send(consentRequest("c1"));
    await until(() => first.client.ledger.size === 2 && store.saved?.consents.length === 1);
    await until(() => server.states.get("conv_1")!.outbox.length === 0, 5_000, "the acks"); // acked: no replay
    expect(store.saved).toMatchObject({ version: 1, sequencing: { role: "client", conversationId: "conv_1", lastSeen: 4 } });
    // The page reloads: the old client is gone (its handlers never finish), a new one starts from the store.
    server.drop();
    first.client.close();
    server.send({ type: MessageType.ASSISTANT_SENTENCE, messageId: "a1", sequence: 0, text: "sent while reloading" });
    const second = await start(
      { persist: store, handlers: { GetSelection: () => "read again" }, onConsent: () => ({ allow: false, reason: "changed my mind" }) },
      server,
    );
    expect(second.client.conversationId).toBe("conv_1");
    expect(await server.result("read1")).toMatchObject({ success: true, result: { value: "read again" } });
    expect(await server.result("del1")).toMatchObject({
      success: false,
      errorCode: "execution_error",
      errorMessage: "the client was reloaded while 'DeleteNote' ran; whether it took effect is unknown",
    });
    expect((await server.take(MessageType.CONSENT_ANSWER)).message).toMatchObject({ id: "c1", allow: false, reason: "changed my mind" });
    await until(() => second.events.some((e) => e.kind === "answerText"));
    expect(second.events.find((e) => e.kind === "answerText")).toMatchObject({ text: "sent while reloading" });
    expect(store.saves).toBeGreaterThan(5);
    // The same request delivered again after the reload is answered from the restored ledger.
    server.send(request("del1", "DeleteNote", {}, { mode: "destructive" }));
    expect(await server.result("del1")).toMatchObject({ errorCode: "execution_error" });
  });

  it("round-trips through JSON with binary content, and is ignored for another conversation", async () => {
    const png = Uint8Array.from([1, 2, 3]);
    const { server, client } = await start({
      handlers: { GetSelection: () => new ToolResponse({ content: [{ type: "binary", mimeType: "image/png", data: png }] }) },
    });
    server.send(request("r1", "GetSelection"));
    await server.result("r1");
    const state = JSON.parse(JSON.stringify(client.exportState())) as ClientState;
    const second = await start({ state }, server);
    expect(second.client.conversationId).toBe("conv_1");
    expect(second.client.ledger.get("r1")?.result?.content).toEqual([{ type: "binary", mimeType: "image/png", data: png }]);
    const fresh = await start({ state, conversationId: undefined }, server);
    expect(fresh.client.conversationId).toBe("conv_1");
    const another = new FakeServer();
    another.states.set("conv_other", { role: "server", conversationId: "conv_other", nextStanza: 1, lastSeen: 0, outbox: [] });
    const elsewhere = await start({ state, conversationId: "conv_other" }, another);
    expect([elsewhere.client.conversationId, elsewhere.client.ledger.size]).toEqual(["conv_other", 0]);
  });

  it("lives in a Storage with webStorage(); an unreadable one starts afresh", () => {
    const items = new Map<string, string>();
    const storage = { getItem: (k: string) => items.get(k) ?? null, setItem: (k: string, v: string) => void items.set(k, v) };
    const store = webStorage(storage, "toolwire");
    expect(store.load()).toBeUndefined();
    const state: ClientState = { version: 1, sequencing: null, ledger: [], consents: [] };
    store.save(state);
    expect(store.load()).toEqual(state);
    items.set("toolwire", "{not json");
    expect(store.load()).toBeUndefined();
  });
});

describe("helpers", () => {
  it("check arguments against the basic parts of a schema", () => {
    const schema = { type: "object", properties: { n: { type: "number" }, o: { type: "object" }, a: { type: "array" } }, required: ["n"] };
    expect(argumentProblems(schema, { n: 1.5, o: {}, a: [] })).toBe("");
    expect(argumentProblems(schema, { n: "1", o: [], a: {} })).toBe(
      "'n' must be of type number; 'o' must be of type object; 'a' must be of type array",
    );
    expect(argumentProblems(undefined, { anything: 1 })).toBe("");
  });

  it("turn values into what MessagePack carries, as JSON would", () => {
    const date = new Date("2026-05-15T12:00:00Z");
    expect(toWire({ when: date, gone: undefined, f: () => 1, list: [undefined, 1], map: new Map([[1, "a"]]) })).toEqual({
      when: "2026-05-15T12:00:00.000Z",
      list: [null, 1],
      map: { "1": "a" },
    });
    const cycle: Record<string, unknown> = {};
    cycle["self"] = cycle;
    expect(() => toWire(cycle)).toThrow(UsageError);
  });
});
