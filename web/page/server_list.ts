/**
 * The conversations the server keeps for this token's principal (`GET /conversations`, docs/protocol.md
 * "Conversations over HTTP"): the list shows those made in other tabs, browsers or clients too, a
 * conversation this browser never saw opens with its transcript, and one can be deleted.
 *
 * Relative addresses, like the WebSocket's `ws`: the page works wherever the app is mounted.
 *
 * @module
 */

import { emptyTimeline, jsonText, type Outcome, type Timeline, type ToolEntry } from "./timeline.js";

/** A conversation as `GET /conversations` lists it. */
export interface Listed {
  id: string;
  /** The first prompt, shortened; null before it. */
  title: string | null;
  /** ISO 8601, UTC. */
  createdAt: string;
  updatedAt: string;
  messageCount: number;
  run: "running" | "unfinished" | "answered" | "closed" | "empty";
  openCalls: number;
}

/** One message of a transcript (`GET /conversations/{id}`), as the server's store keeps it. */
export type StoredMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; text: string; toolCalls?: { id: string; name: string; arguments: unknown }[] }
  | {
      role: "tool";
      toolName: string;
      result: { callId: string; type: number; success: boolean; data?: unknown; error?: string; message?: string };
    };

/** What a delete came to: done (or gone already), refused while a run is in progress, or failed (why). */
export type Deleted = { done: true } | { done: false; running: boolean; problem: string };

const OUTCOMES: Outcome[] = ["success", "error", "canceled", "timeout", "denied"];

function headers(token: string): HeadersInit {
  return { Authorization: `Bearer ${token}` };
}

/** What `GET /conversations` answered: the latest conversations, and whether the server has older ones. */
export interface Listing {
  conversations: Listed[];
  more: boolean;
}

/** The principal's conversations, the latest activity first; undefined when the server did not say. */
export async function listConversations(token: string): Promise<Listing | undefined> {
  try {
    const response = await fetch("conversations", { headers: headers(token), cache: "no-store" });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { conversations?: Listed[]; more?: boolean };
    return Array.isArray(body.conversations) ? { conversations: body.conversations, more: body.more === true } : undefined;
  } catch {
    return undefined; // unreachable: the list keeps what this browser knows
  }
}

/** A conversation's transcript; undefined when the server did not give it. */
export async function transcript(token: string, id: string): Promise<StoredMessage[] | undefined> {
  try {
    const response = await fetch(`conversations/${encodeURIComponent(id)}`, { headers: headers(token), cache: "no-store" });
    if (!response.ok) return undefined;
    const body = (await response.json()) as { messages?: StoredMessage[] };
    return Array.isArray(body.messages) ? body.messages : undefined;
  } catch {
    return undefined;
  }
}

/** Delete a conversation on the server; `force` cancels its run in progress first. */
export async function deleteConversation(token: string, id: string, force: boolean): Promise<Deleted> {
  const query = force ? "?force=true" : "";
  try {
    const response = await fetch(`conversations/${encodeURIComponent(id)}${query}`, { method: "DELETE", headers: headers(token) });
    if (response.ok || response.status === 404) return { done: true }; // 404: gone already
    const body = (await response.json().catch(() => ({}))) as { error?: string; code?: string };
    return { done: false, running: body.code === "run_active", problem: body.error ?? `the server answered ${response.status}` };
  } catch (error) {
    return { done: false, running: false, problem: error instanceof Error ? error.message : String(error) };
  }
}

/** The page's timeline of a transcript: what a conversation opened in this browser for the first time shows. */
export function timelineOf(messages: readonly StoredMessage[], browserTools: ReadonlySet<string>): Timeline {
  const timeline = emptyTimeline();
  const calls = new Map<string, ToolEntry>();
  messages.forEach((message, index) => {
    const key = `stored-${index}`;
    if (message.role === "user") {
      timeline.entries.push({ kind: "user", key, text: message.content });
    } else if (message.role === "assistant") {
      if (message.text) timeline.entries.push({ kind: "answer", key, parts: [message.text], done: true });
      for (const call of message.toolCalls ?? []) {
        const where = browserTools.has(call.name) ? "browser" : "server";
        const entry: ToolEntry = { kind: "tool", key: call.id, name: call.name, args: call.arguments, where, status: "running" };
        calls.set(call.id, entry);
        timeline.entries.push(entry);
      }
    } else {
      const entry = calls.get(message.result.callId);
      if (entry === undefined) return;
      entry.status = "done";
      entry.outcome = OUTCOMES[message.result.type] ?? (message.result.success ? "success" : "error");
      const failure = message.result.error ?? message.result.message;
      entry.detail = message.result.success ? jsonText(message.result.data) : failure;
    }
  });
  return timeline;
}
