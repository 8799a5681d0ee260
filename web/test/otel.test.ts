// `@toolwire/client/otel`: each client tool execution is an `execute_tool` span, a child of the
// server's call span named in the request's meta, recorded with the OpenTelemetry SDK in memory.

import { AsyncLocalStorage } from "node:async_hooks";
import { after, afterEach, before, describe, it } from "node:test";

import { type Context, context, type ContextManager, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";

import { ToolError } from "../src/errors.js";
import { openTelemetryTracing } from "../src/otel.js";
import { expect } from "./expect.js";
import { closeClients, META, request, SPAN_ID, start, TRACE_ID } from "./trace-support.js";

/** The context follows `await`s (what the SDK's AsyncLocalStorageContextManager does). */
class AsyncContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args));
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = provider.getTracer("toolwire");

before(() => context.setGlobalContextManager(new AsyncContextManager()));
after(() => context.disable());
afterEach(() => {
  closeClients();
  exporter.reset();
  trace.disable();
});

function spans(): ReadableSpan[] {
  return exporter.getFinishedSpans();
}

describe("openTelemetryTracing", () => {
  it("records an execution as a child of the server's span named in the meta, active while the handler runs", async () => {
    let active: string | undefined;
    const { server } = await start({
      handlers: {
        GetSelection: async () => {
          await new Promise((resolve) => setTimeout(resolve, 1));
          active = trace.getActiveSpan()?.spanContext().spanId;
          return "selected text";
        },
      },
      traceExecution: openTelemetryTracing({ tracer }),
    });
    server.send(request("r1", "GetSelection", { callId: "call_1" }), META);
    expect(await server.result("r1")).toMatchObject({ success: true });
    const [span, ...others] = spans();
    expect(others).toEqual([]);
    expect(span!.name).toBe("execute_tool GetSelection");
    expect(span!.kind).toBe(SpanKind.INTERNAL);
    expect(span!.spanContext().traceId).toBe(TRACE_ID);
    expect(span!.parentSpanContext).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, isRemote: true });
    expect(active).toBe(span!.spanContext().spanId);
    expect(span!.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "GetSelection",
      "gen_ai.tool.call.id": "call_1",
      "gen_ai.tool.type": "function",
      "toolwire.tool.runs_on": "client",
      "toolwire.outcome": "success",
    });
    expect(span!.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("starts a trace of its own when the request names no span (or a malformed one)", async () => {
    const { server } = await start({ traceExecution: openTelemetryTracing({ tracer }) });
    server.send(request("r1", "GetSelection"));
    await server.result("r1");
    server.send(request("r2", "GetSelection"), { ...META, "messaging.trace_id": "0".repeat(32) });
    await server.result("r2");
    const [first, second] = spans();
    for (const span of [first!, second!]) {
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.spanContext().traceId === TRACE_ID).toBe(false);
    }
    expect(first!.spanContext().traceId === second!.spanContext().traceId).toBe(false);
    expect(first!.attributes["gen_ai.tool.call.id"]).toBe("r1");
  });

  it("ends a failed execution with its outcome, status Error and error.type; a timeout too", async () => {
    const { server } = await start({
      handlers: {
        Fail: () => {
          throw new ToolError("no such note", { code: "not_found" });
        },
        GetSelection: { handler: () => new Promise(() => {}), timeoutMs: 5 },
      },
      traceExecution: openTelemetryTracing({ tracer }),
    });
    server.send(request("r1", "Fail"), META);
    expect(await server.result("r1")).toMatchObject({ success: false, errorCode: "not_found" });
    server.send(request("r2", "GetSelection"), META);
    expect(await server.result("r2")).toMatchObject({ success: false, errorCode: "timeout" });
    server.send(request("r3", "Nope"), META);
    expect(await server.result("r3")).toMatchObject({ success: false, errorCode: "unknown_tool" });
    const [failed, late, unknown] = spans();
    expect(failed!.attributes).toMatchObject({ "toolwire.outcome": "error", "toolwire.error.code": "not_found", "error.type": "not_found" });
    expect(late!.attributes).toMatchObject({ "toolwire.outcome": "timeout", "toolwire.error.code": "timeout", "error.type": "timeout" });
    expect(unknown!.attributes).toMatchObject({ "gen_ai.tool.name": "Nope", "toolwire.outcome": "error", "error.type": "unknown_tool" });
    for (const span of spans()) expect(span.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("uses the global provider's tracer by default; without the hook nothing is recorded", async () => {
    trace.setGlobalTracerProvider(provider);
    const traced = await start({ traceExecution: openTelemetryTracing() });
    traced.server.send(request("r1", "GetSelection"), META);
    await traced.server.result("r1");
    expect(spans().map((span) => [span.name, span.instrumentationScope.name])).toEqual([["execute_tool GetSelection", "toolwire"]]);
    exporter.reset();
    const untraced = await start();
    untraced.server.send(request("r2", "GetSelection"), META);
    await untraced.server.result("r2");
    expect(spans()).toEqual([]);
  });
});
