// The client against a real `toolwire serve` on loopback (the `ws` package stands in for the
// browser's WebSocket): registration, a mirrored server tool, a client tool, consent allowed and
// denied, a dropped connection in the middle of a client call, a page reload that resumes it, a
// stopped run that withdraws a client call, and a result that crosses the withdrawal (refused).
//
// Needs the repository's Python environment: TOOLWIRE_PYTHON, else ../.venv/bin/python. Skipped,
// saying so, when neither exists.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { after, before, describe, it } from "node:test";

import WebSocket from "ws";

import { connect, type ToolwireClient } from "../src/client.js";
import { decode } from "../src/codec.js";
import { ConnectionClosed, ErrorCode, ToolError } from "../src/errors.js";
import type { ClientEvent, RunFinishedEvent } from "../src/events.js";
import type { ClientToolGroup, ConsentRequest, Message } from "../src/messages.js";
import type { ClientState, StateStore } from "../src/state.js";
import { type Dialer, type TransportEvents, type WebSocketClass, webSocketDialer } from "../src/transport.js";
import { MessageType } from "../src/wire.js";
import { expect } from "./expect.js";
import { ROOT, until, WEB } from "./support.js";

const PYTHON = process.env["TOOLWIRE_PYTHON"] ?? join(ROOT, ".venv", "bin", "python");
const AVAILABLE = existsSync(PYTHON);

const TOKEN = "live-token-0123456789abcdef";
const PAGE: ClientToolGroup = {
  name: "Page",
  description: "The page the user has open",
  tools: [
    { name: "GetSelection", description: "The selected text", parametersSchema: { type: "object", properties: {} } },
    {
      name: "DeleteNote",
      description: "Delete a note",
      parametersSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      requiresPermission: true,
    },
  ],
};

/** The `ws` WebSocket, remembering its sockets so that a test can cut one. */
const sockets: WebSocket[] = [];
class TrackedWebSocket extends WebSocket {
  constructor(url: string) {
    super(url);
    sockets.push(this);
  }
}
const dial = webSocketDialer(TrackedWebSocket as unknown as WebSocketClass);

/**
 * `dial`, able to hold back what the server sends (delivered in order on `release()`), as a slow
 * network would: a withdrawal can then reach the client only after its result left.
 */
class Held {
  private frames: { events: TransportEvents; data: Uint8Array }[] | undefined;

  readonly dial: Dialer = (target, events) =>
    dial(target, {
      frame: (data) => (this.frames === undefined ? events.frame(data) : this.frames.push({ events, data })),
      closed: (reason) => events.closed(reason),
    });

  hold(): void {
    this.frames ??= [];
  }

  /** The messages held so far. */
  get messages(): Message[] {
    return (this.frames ?? []).map(({ data }) => decode(data).message);
  }

  release(): void {
    const frames = this.frames ?? [];
    this.frames = undefined;
    for (const { events, data } of frames) events.frame(data);
  }
}

let server: ChildProcess | undefined;
let url = "";
let dataDir = "";
const clients: ToolwireClient[] = [];

before(async () => {
  if (!AVAILABLE) return;
  dataDir = mkdtempSync(join(tmpdir(), "toolwire-web-live-"));
  const args = ["-m", "toolwire.cli", "serve", "--app", "live_app:make_agent", "--port", "0", "--data-dir", dataDir, "--token", TOKEN];
  server = spawn(PYTHON, args, { cwd: join(WEB, "test", "live"), env: { ...process.env, PYTHONUNBUFFERED: "1" } });
  let output = "";
  url = await new Promise<string>((resolve, reject) => {
    server!.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      const found = /serving (ws:\/\/\S+)/.exec(output);
      if (found) resolve(found[1]!);
    });
    server!.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    server!.on("exit", (code) => reject(new Error(`toolwire serve exited (${code}):\n${output}`)));
  });
});

after(async () => {
  for (const client of clients) client.close();
  if (server !== undefined && server.exitCode === null) {
    const exited = new Promise((resolve) => server!.on("exit", resolve));
    server.kill("SIGINT");
    const timer = setTimeout(() => server!.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function open(options: Partial<Parameters<typeof connect>[1]> = {}) {
  const events: ClientEvent[] = [];
  const client = await connect(url, {
    token: TOKEN,
    dial,
    groups: [PAGE],
    onEvent: (event) => events.push(event),
    reconnect: { initialDelayMs: 50, maxDelayMs: 200, attempts: 20 },
    ...options,
  });
  clients.push(client);
  return { client, events };
}

describe("against toolwire serve", { skip: AVAILABLE ? false : `no Python at ${PYTHON} (set TOOLWIRE_PYTHON)`, timeout: 60_000 }, () => {
  it("registers, runs its tools, answers consent (allowed, then denied) and streams the answers", async () => {
    const consents: ConsentRequest[] = [];
    let deleted = 0;
    const { client, events } = await open({
      handlers: {
        GetSelection: () => "two words",
        DeleteNote: (args) => {
          deleted += 1;
          return { deleted: args["id"] };
        },
      },
      onConsent: (request) => {
        consents.push(request);
        return consents.length === 1 ? true : { allow: false, reason: "keep my notes" };
      },
    });
    expect(client.conversationId).toMatch(/^conv_/);
    const first: ClientEvent[] = [];
    for await (const event of client.send("first")) first.push(event);
    const finished = first.at(-1) as RunFinishedEvent;
    expect(finished).toMatchObject({ kind: "runFinished", reason: "answer" });
    expect(finished.output).toContain("GetSelection=SUCCESS:two words");
    expect(finished.output).toContain("DeleteNote=SUCCESS:{'deleted': 'n1'}");
    expect(first.filter((e) => e.kind === "answerText").map((e) => e.kind === "answerText" && e.text).join("")).toBe(finished.output);
    expect(first.find((e) => e.kind === "serverToolCall")).toMatchObject({ request: { toolName: "get_weather", execution: "server" } });
    expect(first.find((e) => e.kind === "serverToolResult")).toMatchObject({
      toolName: "get_weather",
      result: { success: true, result: { city: "Paris", celsius: 21 } },
    });
    expect(first.filter((e) => e.kind === "clientToolCall")).toMatchObject([
      { request: { toolName: "GetSelection", mode: "read" }, result: { success: true }, replayed: false },
      { request: { toolName: "DeleteNote", mode: "destructive", arguments: { id: "n1" } }, result: { success: true } },
    ]);
    expect(consents[0]).toMatchObject({ toolName: "DeleteNote", mode: "destructive", arguments: { id: "n1" } });

    const output = await client.ask("second");
    expect(output).toContain("DeleteNote=DENIED");
    expect(output).toContain("keep my notes");
    expect(deleted).toBe(1);
    expect(events.filter((e) => e.kind === "serverError")).toEqual([]);
  });

  it("resumes after the connection drops in the middle of a client call; the tool runs once", async () => {
    let runs = 0;
    const { client, events } = await open({
      handlers: {
        GetSelection: async () => {
          runs += 1;
          sockets.at(-1)!.terminate(); // the network fails while the tool runs
          await new Promise((resolve) => setTimeout(resolve, 300));
          return "after the drop";
        },
        DeleteNote: () => "deleted",
      },
      onConsent: () => true,
    });
    const output = await client.ask("go");
    expect(output).toContain("GetSelection=SUCCESS:after the drop");
    expect(runs).toBe(1);
    const states = events.filter((e) => e.kind === "connection").map((e) => e.kind === "connection" && e.state);
    expect(states).toContain("reconnecting");
    expect(states.at(-1)).toBe("open");
  });

  it("learns that the server refused the token (which a WebSocket does not tell) and gives up", async () => {
    const refused = connect(url, { token: "wrong-token-0123456789abcdef", dial, reconnect: { attempts: Infinity } });
    await expect(refused).rejects.toThrow(ConnectionClosed);
    await expect(refused).rejects.toThrow("refused the token (HTTP 401)");
    const error = await refused.catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: ErrorCode.UNAUTHENTICATED });
  });

  it("withdraws a client call when the run is stopped: the handler's signal aborts, no result is sent", async () => {
    let calls = 0;
    let aborted: unknown;
    let client!: ToolwireClient;
    const opened = await open({
      handlers: {
        GetSelection: (_, { signal }) => {
          calls += 1;
          if (calls > 1) return "the second time";
          signal.addEventListener("abort", () => (aborted = signal.reason));
          client.stop("the user pressed stop");
          return new Promise(() => {}); // runs until withdrawn, and never ends
        },
        DeleteNote: () => "deleted",
      },
      onConsent: () => true,
    });
    client = opened.client;
    const seen: ClientEvent[] = [];
    for await (const event of client.send("go")) seen.push(event);
    expect(seen.at(-1)).toMatchObject({ kind: "runFinished", reason: "canceled" });
    await until(() => opened.events.some((e) => e.kind === "clientToolCanceled"), 10_000, "the withdrawal");
    const withdrawn = opened.events.find((e) => e.kind === "clientToolCanceled");
    expect(withdrawn).toMatchObject({ code: "canceled", running: true, request: { toolName: "GetSelection" } });
    expect(aborted).toBeInstanceOf(ToolError);
    expect(aborted).toMatchObject({ code: "canceled" });
    expect(seen.filter((e) => e.kind === "clientToolCall")).toEqual([]);
    const requestId = withdrawn?.kind === "clientToolCanceled" ? withdrawn.requestId : "";
    expect(client.ledger.get(requestId)).toMatchObject({ withdrawn: { code: "canceled" } });
    expect(client.ledger.get(requestId)?.result).toBeUndefined();
    // The conversation goes on; had a result gone out for the withdrawn call, the server would have refused it.
    const output = await client.ask("again");
    expect(output).toContain("GetSelection=SUCCESS:the second time");
    expect(opened.events.filter((e) => e.kind === "warning" || e.kind === "serverError" || e.kind === "resultRefused")).toEqual([]);
  });

  it("reports a result that crossed the withdrawal of its call: the server refused it (302)", async () => {
    const held = new Held();
    let finish!: (value: string) => void;
    const { client, events } = await open({
      dial: held.dial,
      handlers: {
        GetSelection: () => {
          held.hold(); // the server's withdrawal will wait until the result left
          client.stop("the user pressed stop");
          return new Promise<string>((resolve) => (finish = resolve));
        },
      },
    });
    const run = client.send("go");
    await until(() => held.messages.some((m) => m.type === MessageType.TOOL_USE_CANCEL), 10_000, "the withdrawal");
    finish("done, but late"); // its result goes out, crossing the withdrawal
    await until(() => held.messages.some((m) => m.type === MessageType.ERROR), 10_000, "the refusal");
    held.release();
    expect(await run.finished).toMatchObject({ reason: "canceled" });
    await until(() => events.some((e) => e.kind === "resultRefused"), 10_000, "resultRefused");
    const call = events.find((e) => e.kind === "clientToolCall");
    const withdrawn = events.find((e) => e.kind === "clientToolCanceled");
    const refused = events.find((e) => e.kind === "resultRefused");
    expect(call).toMatchObject({ result: { success: true, result: { value: "done, but late" } } });
    expect(withdrawn).toMatchObject({ code: "canceled", running: false }); // it had finished: nothing to stop
    expect(refused).toMatchObject({ result: { success: true, result: { value: "done, but late" } } });
    const ids = [call, withdrawn, refused].map((e) =>
      e?.kind === "clientToolCanceled" ? e.requestId : e?.kind === "clientToolCall" || e?.kind === "resultRefused" ? e.request.id : "",
    );
    expect(ids[0]).toMatch(/^\S+$/);
    expect(ids).toEqual([ids[0], ids[0], ids[0]]);
    expect(events.filter((e) => e.kind === "warning")).toEqual([]);
  });

  it("lets a reloaded page resume the conversation and complete the client call it interrupted", async () => {
    const store: StateStore & { saved?: ClientState } = {
      load() {
        return this.saved;
      },
      save(state) {
        this.saved = JSON.parse(JSON.stringify(state)) as ClientState;
      },
    };
    const first = await open({ persist: store, handlers: { GetSelection: () => new Promise(() => {}) } });
    const run = first.client.send("go");
    await until(() => first.events.some((e) => e.kind === "clientToolStarted"), 10_000, "the client call");
    sockets.at(-1)!.terminate(); // the page goes away: its socket drops, its handler never finishes
    first.client.close();
    await expect(run.finished).rejects.toThrow("the client was closed");

    const second = await open({ persist: store, handlers: { GetSelection: () => "after the reload", DeleteNote: () => "ok" }, onConsent: () => true });
    expect(second.client.conversationId).toBe(first.client.conversationId);
    await until(() => second.events.some((e) => e.kind === "runFinished"), 15_000, "the run to finish");
    const finished = second.events.find((e) => e.kind === "runFinished") as RunFinishedEvent;
    expect(finished.output).toContain("GetSelection=SUCCESS:after the reload");
    expect(finished.output).toContain("DeleteNote=SUCCESS:ok");
  });
});
