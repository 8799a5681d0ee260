// The `traceExecution` hook of the core library: the server's span read from an envelope's meta,
// the hook around each execution, a hook that fails; and the core bundle holds no tracing API.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, it } from "node:test";

import { build } from "esbuild";

import { type TracedExecution, traceParent } from "../src/tracing.js";
import type { WireMap } from "../src/wire.js";
import { expect } from "./expect.js";
import { ROOT, until, WEB } from "./support.js";
import { closeClients, META, request, SPAN_ID, start, TRACE_ID } from "./trace-support.js";

afterEach(closeClients);

describe("traceParent", () => {
  it("reads the server's span from an envelope's meta", () => {
    expect(traceParent(META)).toEqual({ traceId: TRACE_ID, spanId: SPAN_ID });
  });

  it("is undefined when the meta names none, or not a valid W3C one", () => {
    const bad: WireMap[] = [
      {},
      { "messaging.trace_id": TRACE_ID },
      { "messaging.span_id": SPAN_ID },
      { ...META, "messaging.trace_id": TRACE_ID.toUpperCase() },
      { ...META, "messaging.trace_id": TRACE_ID.slice(1) },
      { ...META, "messaging.span_id": `${SPAN_ID}0` },
      { ...META, "messaging.trace_id": "0".repeat(32) },
      { ...META, "messaging.span_id": "0".repeat(16) },
      { ...META, "messaging.span_id": "00f067aa0ba902bg" },
      { ...META, "messaging.trace_id": 1 },
    ];
    for (const meta of bad) expect(traceParent(meta)).toBeUndefined();
  });
});

describe("the traceExecution hook", () => {
  it("wraps each execution, told the tool, the call and the server's span from the request's meta", async () => {
    const seen: TracedExecution[] = [];
    const order: string[] = [];
    const { server } = await start({
      handlers: { GetSelection: () => (order.push("handler"), "selected text") },
      traceExecution: async (execution, run) => {
        seen.push(execution);
        order.push("before");
        const result = await run();
        order.push(`after ${String(result.success)}`);
        return result;
      },
    });
    server.send(request("r1", "GetSelection", { callId: "call_1" }), META);
    expect(await server.result("r1")).toMatchObject({ success: true, result: { value: "selected text" } });
    server.send(request("r2", "GetSelection")); // no meta: no parent; no callId: the request's id
    await server.result("r2");
    server.send(request("r3", "GetSelection"), { ...META, "messaging.span_id": "xyz" });
    await server.result("r3");
    expect(seen).toEqual([
      { toolName: "GetSelection", callId: "call_1", requestId: "r1", traceId: TRACE_ID, spanId: SPAN_ID },
      { toolName: "GetSelection", callId: "r2", requestId: "r2" },
      { toolName: "GetSelection", callId: "r3", requestId: "r3" },
    ]);
    expect(order.slice(0, 3)).toEqual(["before", "handler", "after true"]);
  });

  it("does not wrap an answer the ledger replays", async () => {
    const seen: string[] = [];
    const { server } = await start({ traceExecution: (execution, run) => (seen.push(execution.requestId), run()) });
    server.send(request("r1", "GetSelection"), META);
    await server.result("r1");
    server.send(request("r1", "GetSelection"), META); // delivered again: answered from the ledger
    await server.result("r1");
    expect(seen).toEqual(["r1"]);
  });

  it("that throws is warned about, and the call is answered, its handler run once", async () => {
    let runs = 0;
    const handlers = { GetSelection: () => ((runs += 1), "selected text") };
    const before = await start({
      handlers,
      traceExecution: () => {
        throw new Error("no tracer");
      },
    });
    before.server.send(request("r1", "GetSelection"), META);
    expect(await before.server.result("r1")).toMatchObject({ success: true });
    const after = await start({
      handlers,
      traceExecution: async (_, run) => {
        await run();
        throw new Error("the exporter broke");
      },
    });
    after.server.send(request("r2", "GetSelection"), META);
    expect(await after.server.result("r2")).toMatchObject({ success: true });
    expect(runs).toBe(2);
    await until(() => after.events.some((e) => e.kind === "warning"));
    expect([...before.events, ...after.events].filter((e) => e.kind === "warning")).toMatchObject([
      { message: "traceExecution failed for 'GetSelection': no tracer" },
      { message: "traceExecution failed for 'GetSelection': the exporter broke" },
    ]);
  });
});

describe("the core bundle", () => {
  it("does not hold the OpenTelemetry API; the otel entry imports it, unbundled", async () => {
    const built = await build({
      absWorkingDir: WEB,
      entryPoints: ["src/index.ts"],
      bundle: true,
      format: "esm",
      platform: "browser",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
    expect(Object.keys(built.metafile.inputs).filter((path) => path.includes("opentelemetry"))).toEqual([]);
    expect(built.outputFiles[0]!.text.includes("@opentelemetry")).toBe(false);
    // The shipped files, as `npm run build` wrote them (tests/test_web_bundle.py proves them current).
    const shipped = join(ROOT, "src", "toolwire", "server", "static");
    expect(readFileSync(join(shipped, "toolwire-client.js"), "utf8").includes("@opentelemetry")).toBe(false);
    const otel = readFileSync(join(shipped, "toolwire-otel.js"), "utf8");
    expect(otel).toMatch(/^import \{[^}]*\} from "@opentelemetry\/api";$/m);
    expect(otel.includes("ProxyTracerProvider")).toBe(false); // the API's own code is not in it
  });
});
