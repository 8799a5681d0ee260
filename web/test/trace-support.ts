// Helpers of the tracing tests: a client of a fake server, and a request whose meta names a span.

import { type ConnectOptions, connect, type ToolwireClient } from "../src/client.js";
import type { ClientEvent } from "../src/events.js";
import type { ToolUseRequest } from "../src/messages.js";
import { MessageType } from "../src/wire.js";
import { FakeServer } from "./fake-server.js";

/** The W3C example ids: the server's call span. */
export const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
export const SPAN_ID = "00f067aa0ba902b7";
export const META = { "messaging.trace_id": TRACE_ID, "messaging.span_id": SPAN_ID };

const clients: ToolwireClient[] = [];

/** Close the clients `start()` opened (after each test). */
export function closeClients(): void {
  for (const client of clients.splice(0)) client.close();
}

/** A client of a fake server, with one client tool `GetSelection` (and whatever `options` add). */
export async function start(options: Partial<ConnectOptions> = {}, server = new FakeServer()) {
  const events: ClientEvent[] = [];
  const client = await connect("ws://test.invalid/ws", {
    token: "secret-token-0123456789",
    dial: server.dial,
    groups: [{ name: "Page", tools: [{ name: "GetSelection" }, { name: "Fail" }] }],
    handlers: { GetSelection: () => "selected text" },
    onEvent: (event) => events.push(event),
    reconnect: false,
    ...options,
  });
  clients.push(client);
  return { server, client, events };
}

export function request(id: string, toolName: string, extra: Partial<ToolUseRequest> = {}): ToolUseRequest {
  return { type: MessageType.TOOL_USE_REQUEST, id, toolName, arguments: {}, execution: "client", ...extra };
}
