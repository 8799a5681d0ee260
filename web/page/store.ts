/**
 * What the page keeps in the browser: the token (sessionStorage: this tab only), the list of
 * conversations and, per conversation, the client's protocol state and the page's own timeline
 * (localStorage: a reload or a new tab resumes them).
 *
 * | key | storage | what |
 * |---|---|---|
 * | `toolwire.token` | session | the server's token, taken from `#token=` or asked for |
 * | `toolwire.active` | session | the local id of the conversation this tab shows |
 * | `toolwire.conversations` | local | `ConversationInfo[]`, newest first |
 * | `toolwire.client.<local>` | local | the client library's `ClientState` (resume, ledger, consents) |
 * | `toolwire.timeline.<local>` | local | the page's `Timeline` of that conversation |
 * | `toolwire.theme` | local | `light` or `dark` (SetTheme) |
 *
 * A conversation gets a local id when it is created, before the server names it (its
 * `conversationId` arrives with the first handshake). The list follows the server's
 * (`syncConversations`, with `GET /conversations`): a conversation made elsewhere is added, one
 * deleted elsewhere is forgotten.
 *
 * @module
 */

import type { Listing } from "./server_list.js";
import type { Timeline } from "./timeline.js";

/** One conversation of the list. */
export interface ConversationInfo {
  /** The page's own id: the key of its client state and timeline. */
  local: string;
  /** The server's id, once the first handshake named it. */
  conversationId?: string;
  /** The first message sent, shortened; `UNTITLED` until then. */
  title: string;
  /** Milliseconds since the epoch of the last change. */
  updated: number;
}

const LIST = "toolwire.conversations";
export const UNTITLED = "Untitled conversation";
const MAX_CONVERSATIONS = 50;

export const clientKey = (local: string): string => `toolwire.client.${local}`;
const timelineKey = (local: string): string => `toolwire.timeline.${local}`;

function read<T>(storage: Storage, key: string): T | undefined {
  try {
    const text = storage.getItem(key);
    return text === null ? undefined : (JSON.parse(text) as T);
  } catch {
    return undefined; // unreadable: start afresh rather than fail
  }
}

/** The conversations, newest first. */
export function conversations(): ConversationInfo[] {
  const list = read<ConversationInfo[]>(localStorage, LIST);
  return Array.isArray(list) ? list.filter((item) => typeof item?.local === "string") : [];
}

/** Add or update a conversation and move it to the top; the oldest beyond 50 are forgotten. */
export function saveConversation(info: ConversationInfo): void {
  keep([info, ...conversations().filter((item) => item.local !== info.local)]);
}

function keep(list: ConversationInfo[]): void {
  for (const dropped of list.splice(MAX_CONVERSATIONS)) forgetState(dropped.local);
  localStorage.setItem(LIST, JSON.stringify(list));
}

function forgetState(local: string): void {
  localStorage.removeItem(clientKey(local));
  localStorage.removeItem(timelineKey(local));
}

/** Forget a conversation (deleted): its entry, client state and timeline. */
export function forgetConversation(local: string): void {
  forgetState(local);
  localStorage.setItem(LIST, JSON.stringify(conversations().filter((item) => item.local !== local)));
}

/**
 * Bring the list in line with the server's (`GET /conversations`): add the conversations this
 * browser does not know, take the server's titles and times, and forget those the server no longer
 * has (deleted elsewhere), except `current` (the one on screen: its connection says what became of it),
 * and unless the server listed only its latest (`more`): an older one is not missing from it.
 */
export function syncConversations(listing: Listing, current: string): void {
  const listed = listing.conversations;
  const there = new Map(listed.map((item) => [item.id, item]));
  const list: ConversationInfo[] = [];
  for (const item of conversations()) {
    const known = item.conversationId === undefined ? undefined : there.get(item.conversationId);
    if (known !== undefined) {
      list.push({ ...item, title: known.title ?? item.title, updated: Math.max(item.updated, Date.parse(known.updatedAt) || 0) });
    } else if (item.conversationId === undefined || item.local === current || listing.more) {
      list.push(item);
    } else {
      forgetState(item.local);
    }
  }
  const have = new Set(list.map((item) => item.conversationId));
  for (const item of listed) {
    if (have.has(item.id) || item.messageCount === 0) continue; // (another tab's empty one is nothing to open)
    list.push({ ...newConversation(), conversationId: item.id, title: item.title ?? UNTITLED, updated: Date.parse(item.updatedAt) || 0 });
  }
  keep(list.sort((a, b) => b.updated - a.updated));
}

/** A new conversation's entry (not saved until something happens in it). */
export function newConversation(): ConversationInfo {
  // Not crypto.randomUUID(): it exists only in secure contexts, and the page may be served over plain http.
  const local = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
  return { local, title: UNTITLED, updated: Date.now() };
}

export function loadTimeline(local: string): Timeline | undefined {
  const timeline = read<Timeline>(localStorage, timelineKey(local));
  return timeline?.version === 1 && Array.isArray(timeline.entries) ? timeline : undefined;
}

export function saveTimeline(local: string, timeline: Timeline): void {
  localStorage.setItem(timelineKey(local), JSON.stringify(timeline));
}

/** The token: from the address's `#token=` (then removed from the address bar), else this tab's. */
export function takeToken(): string | undefined {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("toolwire.token", fromHash);
    history.replaceState(null, "", location.pathname + location.search); // out of history and bookmarks
    return fromHash;
  }
  return sessionStorage.getItem("toolwire.token") ?? undefined;
}

export function rememberToken(token: string): void {
  sessionStorage.setItem("toolwire.token", token);
}

/** The server refused the token: forget it, so that a reload asks for another. */
export function forgetToken(): void {
  sessionStorage.removeItem("toolwire.token");
}

export function activeConversation(): string | undefined {
  return sessionStorage.getItem("toolwire.active") ?? undefined;
}

export function setActiveConversation(local: string): void {
  sessionStorage.setItem("toolwire.active", local);
}
