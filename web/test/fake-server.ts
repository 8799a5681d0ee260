// A scripted fake of `toolwire serve` over in-memory transports, built on the server end of the
// same sans-I/O `Connection`: it keeps each conversation's sequencing across connections (as the
// real server keeps it in its store), records what it receives, and sends what a test tells it to.

import { Connection } from "../src/connection.js";
import { ConnectionClosed, ErrorCode } from "../src/errors.js";
import type { Configuration, Envelope, Message } from "../src/messages.js";
import type { Sequencing } from "../src/sequencing.js";
import { type Dialer, type MemoryEnd, memoryDialer } from "../src/transport.js";
import { MessageType, type WireMap } from "../src/wire.js";
import { until } from "./support.js";

interface Live {
  end: MemoryEnd;
  connection: Connection;
}

export class FakeServer {
  /** Every message received after a handshake, in order. */
  readonly received: Envelope[] = [];
  /** The URLs clients dialed. */
  readonly urls: string[] = [];
  /** The Configuration of every handshake, in order. */
  readonly hellos: Configuration[] = [];
  /** Each conversation's sequencing, saved after every frame (the store of the real server). */
  readonly states = new Map<string, Sequencing>();
  /** Answer the next Configuration with this final error. */
  refuseNext: { code: number; message: string } | undefined;
  /** Refuse to connect at all (the dialer rejects), this many times. */
  unreachable = 0;
  /** Never answer the dial (neither open nor fail: a proxy holding the upgrade), this many times. */
  hanging = 0;
  /** Refuse the token (the dialer rejects with a final ConnectionClosed, as `refusal()` reports it). */
  refuseToken = false;
  /** Called for each message received, after it was recorded. */
  onMessage: ((envelope: Envelope) => void) | undefined;
  /** Whether RegisterTools is answered by itself (ok: true). */
  autoRegister = true;
  live: Live | undefined;
  connections = 0;
  private conversation = "";

  readonly dial: Dialer = (url, events) => {
    if (this.hanging > 0) {
      this.hanging -= 1;
      this.urls.push(url);
      return new Promise(() => {});
    }
    return this.open(url, events);
  };

  private readonly open: Dialer = memoryDialer((end, url) => {
    this.urls.push(url);
    if (this.unreachable > 0) {
      this.unreachable -= 1;
      throw new Error("connection refused");
    }
    if (this.refuseToken) throw new ConnectionClosed("the server refused the token (HTTP 401)", ErrorCode.UNAUTHENTICATED);
    this.connections += 1;
    const live: Live = { end, connection: new Connection("server") };
    end.attach({
      frame: (data) => this.frame(live, data),
      closed: () => {
        if (this.live === live) this.live = undefined;
      },
    });
  });

  /** The conversation bound by the last handshake. */
  get conversationId(): string {
    return this.conversation;
  }

  /**
   * Send a message in the conversation; while no client is connected it waits in the outbox.
   *
   * @param meta the envelope's (e.g. `messaging.trace_id` and `messaging.span_id`).
   */
  send(message: Message, meta: WireMap = {}): number {
    const live = this.live;
    if (live !== undefined) {
      const frame = live.connection.send(message, meta);
      this.save(live.connection);
      live.end.send(frame);
      return live.connection.lastStanza;
    }
    const detached = Connection.resume(this.states.get(this.conversation)!);
    detached.send(message, meta);
    this.save(detached);
    return detached.lastStanza;
  }

  /** Lose the connection and whatever is in flight (a network failure). */
  drop(): void {
    this.live?.end.drop();
    this.live = undefined;
  }

  /** The next message of `type` received that no earlier `take` returned. */
  async take<T extends Message["type"]>(type: T, ms = 5_000): Promise<Envelope<Extract<Message, { type: T }>>> {
    let found: Envelope | undefined;
    await until(
      () => {
        const index = this.received.findIndex((envelope) => envelope.message.type === type);
        if (index < 0) return false;
        found = this.received[index];
        this.received.splice(index, 1);
        return true;
      },
      ms,
      `a message of type ${type}`,
    );
    return found as Envelope<Extract<Message, { type: T }>>;
  }

  /** The next ToolUseResult answering request `id`. */
  async result(id: string, ms = 5_000): Promise<Extract<Message, { type: 7 }>> {
    let found: Envelope | undefined;
    await until(
      () => {
        const index = this.received.findIndex((e) => e.message.type === MessageType.TOOL_USE_RESULT && e.message.id === id);
        if (index < 0) return false;
        [found] = this.received.splice(index, 1);
        return true;
      },
      ms,
      `the result of ${id}`,
    );
    return found!.message as Extract<Message, { type: 7 }>;
  }

  /** The messages of `type` received so far (not consumed). */
  all<T extends Message["type"]>(type: T): Extract<Message, { type: T }>[] {
    return this.received.filter((e) => e.message.type === type).map((e) => e.message as Extract<Message, { type: T }>);
  }

  private frame(live: Live, data: Uint8Array): void {
    const received = live.connection.receive(data);
    for (const reply of received.replies) live.end.send(reply);
    for (const envelope of received.messages) {
      if (envelope.message.type === MessageType.CONFIGURATION && !live.connection.isOpen) {
        this.hellos.push(envelope.message);
        this.handshake(live, envelope.message.conversationId ?? "");
        continue;
      }
      this.received.push(envelope);
      if (envelope.message.type === MessageType.REGISTER_TOOLS && this.autoRegister) {
        this.send({ type: MessageType.REGISTER_TOOLS_RESULT, ok: true });
      }
      this.onMessage?.(envelope);
    }
    if (live.connection.isOpen) {
      this.save(live.connection);
      const ack = live.connection.ack();
      if (ack !== undefined) live.end.send(ack);
    }
    if (received.close) live.end.close();
  }

  private handshake(live: Live, requested: string): void {
    const refusal = this.refuseNext ?? (requested && !this.states.has(requested) ? { code: 201, message: `no conversation '${requested}'` } : undefined);
    if (refusal !== undefined) {
      this.refuseNext = undefined;
      live.end.send(live.connection.refuse(refusal.code, refusal.message));
      live.end.close();
      return;
    }
    const conversation = requested || `conv_${this.states.size + 1}`;
    const frames = live.connection.accept(conversation, { state: this.states.get(conversation), features: ["clientTools", "consent", "runStatus", "resume"] });
    this.conversation = conversation;
    this.live = live;
    this.save(live.connection);
    for (const frame of frames) live.end.send(frame);
  }

  private save(connection: Connection): void {
    const state = connection.state();
    if (state !== undefined) this.states.set(state.conversationId, state);
  }
}
