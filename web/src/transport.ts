/**
 * Transports: how frames reach the server. The client only needs a `Dialer`, a function that opens
 * a `Transport` (send a frame, close) and reports frames and the close through `TransportEvents`.
 *
 * - `webSocketDialer()`: the browser's global `WebSocket` (or any class with its interface, such
 *   as the `ws` package's in node), binary frames as `ArrayBuffer`.
 * - `memoryPair()` / `memoryDialer()`: an in-process pair for tests, with `drop()` to simulate a
 *   network failure that loses the frames in flight.
 *
 * `socketUrl()` makes the URL a client opens, `backoff()` the waits between its reconnect
 * attempts, and `refusal()` asks the server why it refused an upgrade (which a browser is not told).
 *
 * @module
 */

import { ConnectionClosed, ErrorCode, UsageError } from "./errors.js";

/** How a client reconnects after its connection drops: at once, then after growing waits (with jitter). */
export interface ReconnectOptions {
  /** Attempts before giving up with `ConnectionClosed` (8: about 10 s; `Infinity` never gives up). */
  attempts?: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  factor?: number;
}

/** The URL to open: relative URLs resolve against the page (http → ws), the token as a query parameter. */
export function socketUrl(url: string, token: string): string {
  const base = (globalThis as { location?: { href: string } }).location?.href;
  const resolved = new URL(url, base);
  if (resolved.protocol === "http:") resolved.protocol = "ws:";
  if (resolved.protocol === "https:") resolved.protocol = "wss:";
  resolved.searchParams.set("token", token);
  return resolved.toString();
}

/**
 * `url` naming `conversationId` in its `conversation` query parameter (a hint a load balancer may
 * hash on, so that a reconnect lands on the replica that holds the conversation; the server reads
 * the conversation from the handshake, not from here). Unchanged without a conversation.
 */
export function hintedUrl(url: string, conversationId: string | undefined): string {
  if (!conversationId) return url;
  const hinted = new URL(url);
  hinted.searchParams.set("conversation", conversationId);
  return hinted.toString();
}

/** Milliseconds to wait before reconnect attempt `attempt` (from 1; the first does not wait). */
export function backoff(attempt: number, options: ReconnectOptions = {}): number {
  if (attempt <= 1) return 0;
  const { initialDelayMs = 100, maxDelayMs = 5_000, factor = 2 } = options;
  return Math.min(maxDelayMs, initialDelayMs * factor ** (attempt - 2)) * (0.5 + Math.random() / 2);
}

/**
 * Why the server refused to open `url` (a socket URL with its `token`), when it says so.
 *
 * A browser learns nothing from a refused WebSocket upgrade (the close code is 1006, as for a
 * server that is down), so this asks `GET` on the socket's own path, with the token as an
 * `Authorization` header: `toolwire serve` answers 401 for a token it refuses and 403 for an
 * origin it refuses. Dialers call it when a socket closes before it opened.
 *
 * @returns a `ConnectionClosed` with code `ErrorCode.UNAUTHENTICATED` or `ErrorCode.FORBIDDEN` (a
 *   refusal that retrying cannot change); undefined when the answer tells nothing (unreachable, a
 *   server without the check, an origin that may not read the answer).
 */
export async function refusal(url: string): Promise<ConnectionClosed | undefined> {
  const fetch = (globalThis as { fetch?: typeof globalThis.fetch }).fetch;
  if (fetch === undefined) return undefined;
  const check = new URL(url);
  check.protocol = check.protocol === "wss:" ? "https:" : "http:";
  const token = check.searchParams.get("token") ?? "";
  check.searchParams.delete("token"); // in the header instead: out of the server's access log
  const where = `${check.origin}${check.pathname}`;
  let status: number;
  try {
    const answer = await fetch(check, {
      headers: { Authorization: `Bearer ${token}` },
      cache: "no-store",
      signal: AbortSignal.timeout(5_000),
    });
    status = answer.status;
  } catch {
    return undefined; // unreachable, or an origin the server gives no CORS answer to
  }
  if (status === 401) return new ConnectionClosed(`${where} refused the token (HTTP 401)`, ErrorCode.UNAUTHENTICATED);
  if (status === 403) return new ConnectionClosed(`${where} refused this origin (HTTP 403)`, ErrorCode.FORBIDDEN);
  return undefined;
}

/** What a transport reports. */
export interface TransportEvents {
  /** One frame arrived (a text frame arrives as its UTF-8 bytes, to be refused like any bad frame). */
  frame(data: Uint8Array): void;
  /** The transport closed, from either side or by failure; called once. */
  closed(reason: string): void;
}

/** An open connection to the server. */
export interface Transport {
  /** Write one binary frame. */
  send(frame: Uint8Array): void;
  /** Close; `TransportEvents.closed` follows. */
  close(): void;
}

/**
 * Opens a transport to `url`, reporting to `events`; rejects when it cannot be opened: with a
 * `ConnectionClosed` when retrying cannot help (the token or the origin was refused), which ends
 * the client's reconnecting, else with any other error (another attempt may succeed).
 */
export type Dialer = (url: string, events: TransportEvents) => Promise<Transport>;

/** The part of the WebSocket interface a dialer uses (the browser's, or the `ws` package's). */
export interface WebSocketLike {
  binaryType: string;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket class: `new WebSocket(url)`. */
export type WebSocketClass = new (url: string) => WebSocketLike;

const encoder = new TextEncoder();

/**
 * A dialer over WebSocket.
 *
 * @param WebSocket the class to use; the global `WebSocket` by default (in node 20, pass the `ws`
 *   package's `WebSocket`).
 */
export function webSocketDialer(WebSocket?: WebSocketClass): Dialer {
  return (url, events) =>
    new Promise((resolve, reject) => {
      const Socket = WebSocket ?? (globalThis as { WebSocket?: WebSocketClass }).WebSocket;
      if (Socket === undefined) {
        reject(new UsageError("no WebSocket in this environment: pass webSocketDialer(WebSocket), e.g. from the ws package"));
        return;
      }
      const where = url.split("?", 1)[0];
      const socket = new Socket(url);
      socket.binaryType = "arraybuffer";
      let opened = false;
      const transport: Transport = {
        send: (frame) => socket.send(frame),
        close: () => socket.close(1000),
      };
      socket.onopen = () => {
        opened = true;
        resolve(transport);
      };
      socket.onmessage = ({ data }) => {
        if (data instanceof ArrayBuffer) events.frame(new Uint8Array(data));
        else if (ArrayBuffer.isView(data)) events.frame(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
        else events.frame(encoder.encode(String(data)));
      };
      socket.onerror = () => {}; // a close event follows, with what little the browser tells
      socket.onclose = ({ code, reason }) => {
        const why = `${where} closed the connection (code ${code}${reason ? `: ${reason}` : ""})`;
        if (opened) {
          events.closed(why);
          return;
        }
        // Browsers hide why an upgrade failed (a refused token looks like a network error): ask.
        const unknown = new Error(`cannot reach ${where} (code ${code}): is the server up, are the token and the page's origin allowed?`);
        refusal(url).then(
          (refused) => reject(refused ?? unknown),
          () => reject(unknown),
        );
      };
    });
}

/** One end of an in-memory pair. */
export class MemoryEnd implements Transport {
  private events: TransportEvents | undefined;
  private peer!: MemoryEnd;
  private open = true;
  private readonly early: Uint8Array[] = [];

  /** @internal */
  static pair(): [MemoryEnd, MemoryEnd] {
    const a = new MemoryEnd();
    const b = new MemoryEnd();
    a.peer = b;
    b.peer = a;
    return [a, b];
  }

  /** Start receiving: frames sent before this are delivered now. */
  attach(events: TransportEvents): void {
    this.events = events;
    for (const frame of this.early.splice(0)) queueMicrotask(() => this.deliver(frame));
  }

  /** True until either end closes or drops the pair. */
  get isOpen(): boolean {
    return this.open;
  }

  send(frame: Uint8Array): void {
    if (!this.open) return;
    const copy = frame.slice();
    queueMicrotask(() => this.peer.deliver(copy));
  }

  /** Close after the frames already sent are delivered. */
  close(): void {
    if (!this.open) return;
    queueMicrotask(() => this.shut("closed"));
  }

  /** Close at once, losing every frame in flight (a network failure). */
  drop(): void {
    this.shut("dropped");
  }

  private shut(reason: string): void {
    if (!this.open) return;
    this.open = this.peer.open = false;
    for (const end of [this, this.peer]) {
      const events = end.events;
      if (events !== undefined) queueMicrotask(() => events.closed(reason));
    }
  }

  private deliver(frame: Uint8Array): void {
    if (!this.open) return;
    if (this.events === undefined) this.early.push(frame);
    else this.events.frame(frame);
  }
}

/** Two connected in-memory transports. */
export function memoryPair(): [MemoryEnd, MemoryEnd] {
  return MemoryEnd.pair();
}

/**
 * A dialer that connects to an in-process server: `accept` gets the server's end of each new
 * pair (and the URL), and may reject (or throw) to refuse the connection.
 */
export function memoryDialer(accept: (server: MemoryEnd, url: string) => void | Promise<void>): Dialer {
  return async (url, events) => {
    const [client, server] = memoryPair();
    await accept(server, url);
    client.attach(events);
    return client;
  };
}
