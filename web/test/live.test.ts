// The client against a real `toolwire serve` on loopback (the `ws` package stands in for the
// browser's WebSocket): registration, a mirrored server tool, a client tool, consent allowed and
// denied, a dropped connection in the middle of a client call, and a page reload that resumes it.
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
import { ConnectionClosed, ErrorCode } from "../src/errors.js";
import type { ClientEvent, RunFinishedEvent } from "../src/events.js";
import type { ClientToolGroup, ConsentRequest } from "../src/messages.js";
import type { ClientState, StateStore } from "../src/state.js";
import { type WebSocketClass, webSocketDialer } from "../src/transport.js";
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
      { request: { toolName: "DeleteNote", mode: "destructive", parameters: { id: "n1" } }, result: { success: true } },
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
