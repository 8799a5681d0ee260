/**
 * The chat page that `toolwire serve` serves at `/`: connects with the token from `#token=…` (or
 * asks for it, also when the server refuses it later), registers the "Page" tool group, streams
 * answers, draws a timeline entry per tool call, asks for consent in a dialog, and resumes the
 * conversation after a reload. The conversation list follows the server's (`GET /conversations`:
 * also those made in other tabs or clients) and deletes on the server too.
 *
 * ```
 * boot ─► token ─► open(conversation) ─► ToolwireClient(open, register Page) ─► events ─► Timeline ─► DOM
 *                                         persist: localStorage "toolwire.client.<local>"
 * ```
 *
 * @module
 */

import { type ClientEvent, ConnectionClosed, type ConnectionState, ErrorCode, ToolwireClient, webStorage } from "../src/index.js";
import { ConsentDialog } from "./consent.js";
import { duration, el, OUTCOME_LABELS, TimelineView } from "./render.js";
import * as server from "./server_list.js";
import * as store from "./store.js";
import { addUser, apply, asked, emptyTimeline, notice, type Timeline, type ToolEntry, undoMessage } from "./timeline.js";
import { PAGE_GROUP, PAGE_TOOLS, pageHandlers, type Theme, toast } from "./tools.js";

function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element as T;
}

const ui = {
  connection: byId("connection"),
  connectionText: byId("connection-text"),
  timeline: byId<HTMLOListElement>("timeline"),
  composer: byId<HTMLFormElement>("composer"),
  message: byId<HTMLTextAreaElement>("message"),
  send: byId<HTMLButtonElement>("send"),
  stop: byId<HTMLButtonElement>("stop"),
  queued: byId<HTMLParagraphElement>("queued"),
  conversations: byId<HTMLUListElement>("conversation-list"),
  newConversation: byId<HTMLButtonElement>("new-conversation"),
  notes: byId<HTMLTextAreaElement>("notes"),
  toasts: byId("toasts"),
  questions: byId("questions"),
  callLog: byId<HTMLOListElement>("call-log"),
  pageTools: byId<HTMLUListElement>("page-tool-list"),
  tokenForm: byId<HTMLFormElement>("token-form"),
  token: byId<HTMLInputElement>("token"),
  tokenProblem: byId("token-problem"),
};

const CONNECTION_LABELS: Record<ConnectionState, string> = {
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected",
};

/** Each tool's mode, as the server decides it from the name (docs/client-tools.md). */
const PAGE_MODES: Record<string, string> = {
  GetSelection: "read",
  GetUserInput: "read",
  ShowMessage: "external",
  SetTheme: "safe_write",
  SetNotes: "safe_write",
  DeleteNotes: "destructive",
};

const view = new TimelineView(ui.timeline);
const consent = new ConsentDialog(byId<HTMLDialogElement>("consent"));
const handlers = pageHandlers({
  notes: ui.notes,
  toasts: ui.toasts,
  questions: ui.questions,
  theme: () => (document.documentElement.dataset.theme === "dark" ? "dark" : "light"),
  setTheme,
});

let token: string | undefined;
let client: ToolwireClient | undefined;
let conversation: store.ConversationInfo = store.newConversation();
let timeline: Timeline = emptyTimeline();
let generation = 0; // which open() the callbacks are about: a replaced client's are ignored
let registered = false; // the Page group is registered: a message sent now is answered with it

function setTheme(theme: Theme): void {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("toolwire.theme", theme);
}

/** The theme SetTheme chose last, else the system's. */
function initialTheme(): Theme {
  const saved = localStorage.getItem("toolwire.theme");
  if (saved === "dark" || saved === "light") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}

function busy(): boolean {
  return timeline.running !== undefined || timeline.sending === true;
}

// -- drawing ------------------------------------------------------------------------------------

function draw(): void {
  // On a wide screen the timeline scrolls by itself: follow its end unless the person scrolled up.
  const list = ui.timeline;
  const scrolls = getComputedStyle(list).overflowY === "auto";
  const following = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  view.draw(timeline.entries, { busy: busy(), onUndo: undo });
  if (scrolls && following) list.scrollTop = list.scrollHeight;
  const closed = client === undefined || client.connectionState === "closed";
  ui.send.disabled = busy() || closed || !registered;
  ui.stop.disabled = !busy() || closed;
  ui.queued.hidden = timeline.queued === undefined;
  ui.queued.textContent = timeline.queued === undefined ? "" : `The server is busy: your message waits (${ordinal(timeline.queued)} in line).`;
  ui.composer.setAttribute("aria-busy", String(busy()));
  drawCallLog();
}

function drawCallLog(): void {
  const external = timeline.entries.filter((e): e is ToolEntry => e.kind === "tool" && e.mode === "external");
  ui.callLog.replaceChildren(
    ...external.map((entry) => {
      const when = entry.startedAt === undefined ? "" : new Date(entry.startedAt).toLocaleTimeString();
      const outcome = entry.outcome === undefined ? "running" : OUTCOME_LABELS[entry.outcome];
      const took = entry.durationMs === undefined ? "" : `, ${duration(entry.durationMs)}`;
      return el("li", {}, el("code", {}, entry.name), ` ${when}: ${outcome}${took}`);
    }),
  );
  if (external.length === 0) ui.callLog.append(el("li", { class: "empty" }, "No external calls yet."));
}

function drawConversations(): void {
  const focused = ui.conversations.contains(document.activeElement); // keep the focus on the list
  const list = store.conversations();
  if (!list.some((item) => item.local === conversation.local)) list.unshift(conversation);
  ui.conversations.replaceChildren(
    ...list.map((item) => {
      const current = item.local === conversation.local;
      const button = el(
        "button",
        { type: "button", class: "conversation", "aria-current": current ? "true" : undefined },
        el("span", { class: "title" }, item.title),
        el("span", { class: "when" }, new Date(item.updated).toLocaleString()),
      );
      button.addEventListener("click", () => {
        if (!current) void open(item);
      });
      if (item.conversationId === undefined) return el("li", {}, button);
      const remove = el("button", { type: "button", class: "delete-conversation", "aria-label": `Delete “${item.title}”`, title: "Delete" }, "×");
      remove.addEventListener("click", () => void deleteConversation(item));
      return el("li", {}, button, remove);
    }),
  );
  if (focused) ui.conversations.querySelector<HTMLButtonElement>("[aria-current=true]")?.focus();
}

/** Fetch the server's list of this principal's conversations and show it (the list stays as it is without one). */
async function refreshConversations(): Promise<void> {
  if (token === undefined) return;
  const listing = await server.listConversations(token);
  if (listing === undefined) return;
  store.syncConversations(listing, conversation.local);
  drawConversations();
}

/** Delete a conversation on the server (asking first; again to cancel a run in progress), then here. */
async function deleteConversation(item: store.ConversationInfo): Promise<void> {
  const id = item.conversationId;
  if (id === undefined || token === undefined) return;
  if (!confirm(`Delete “${item.title}”? The server deletes its transcript too.`)) return;
  const current = item.local === conversation.local;
  if (current) {
    generation++; // the closing connection's events are not this page's any more
    client?.close();
    client = undefined;
  }
  let outcome = await server.deleteConversation(token, id, false);
  if (!outcome.done && outcome.running && confirm("A run is in progress in this conversation. Cancel it and delete?")) {
    outcome = await server.deleteConversation(token, id, true);
  }
  if (outcome.done) {
    store.forgetConversation(item.local);
    if (current) void open(store.newConversation());
    drawConversations();
    return;
  }
  if (current) void open(item);
  if (!outcome.running) toast(ui.toasts, `Could not delete the conversation: ${outcome.problem}`, "error");
}

function drawPageTools(): void {
  ui.pageTools.replaceChildren(
    ...(PAGE_GROUP.tools ?? []).map((tool) => {
      const mode = PAGE_MODES[tool.name] ?? "external";
      return el(
        "li",
        {},
        el("code", {}, tool.name),
        " ",
        el("span", { class: `badge mode mode-${mode}` }, mode.replace("_", " ")),
        tool.requiresPermission ? el("span", { class: "asks" }, " asks you first") : undefined,
        el("br"),
        el("span", { class: "hint" }, tool.description ?? ""),
      );
    }),
  );
}

function showConnection(state: ConnectionState, detail = ""): void {
  ui.connection.dataset.state = state;
  ui.connectionText.textContent = CONNECTION_LABELS[state] + (detail ? ` ${detail}` : "");
}

// -- the conversation ---------------------------------------------------------------------------

function save(): void {
  store.saveTimeline(conversation.local, timeline);
}

function changed(): void {
  save();
  draw();
}

function onEvent(event: ClientEvent, own: number): void {
  if (own !== generation) return;
  if (event.kind === "connection") {
    showConnection(event.state, event.state === "reconnecting" ? `(attempt ${event.attempt ?? 1})` : "");
    if (event.state === "open") remember();
    if (event.state === "closed" && registered && event.error !== undefined) {
      // open()'s failures are its own; these come from reconnecting (e.g. after a server restart).
      if (!refused(event.error)) notice(timeline, `The connection closed: ${event.error.message}`, "error");
      save();
    }
    draw();
    return;
  }
  if (apply(timeline, event, PAGE_TOOLS)) changed();
}

/**
 * The server refused the token or this page's origin: retrying cannot help, so say so (and, for
 * the token, ask for the right one); false for any other failure.
 */
function refused(error: Error): boolean {
  if (!(error instanceof ConnectionClosed)) return false;
  if (error.code === ErrorCode.UNAUTHENTICATED) {
    token = undefined;
    store.forgetToken(); // a reload asks at once instead of trying it again
    showConnection("closed", "(token refused)");
    askToken("The server refused the token. Enter the one toolwire serve printed (a restarted server may have another).");
    return true;
  }
  if (error.code === ErrorCode.FORBIDDEN) {
    showConnection("closed", "(origin refused)");
    notice(timeline, `The server refuses pages from ${location.origin}: start it with --allow-origin ${location.origin}.`, "error");
    return true;
  }
  return false;
}

/** The server named the conversation: list it. */
function remember(): void {
  const id = client?.conversationId;
  if (!id || conversation.conversationId === id) return;
  conversation = { ...conversation, conversationId: id, updated: Date.now() };
  store.saveConversation(conversation);
  drawConversations();
  void refreshConversations();
}

async function open(info: store.ConversationInfo): Promise<void> {
  const own = ++generation;
  client?.close();
  consent.clear();
  client = undefined;
  registered = false;
  conversation = info;
  const saved = store.loadTimeline(info.local);
  timeline = saved ?? emptyTimeline();
  store.setActiveConversation(info.local);
  view.clear();
  draw();
  drawConversations();
  if (token === undefined) return askToken();
  if (saved === undefined && info.conversationId !== undefined) {
    // Made in another browser or client: show what the server kept of it.
    const messages = await server.transcript(token, info.conversationId);
    if (own !== generation) return;
    if (messages !== undefined) {
      timeline = server.timelineOf(messages, PAGE_TOOLS);
      changed();
    }
  }
  showConnection("connecting");
  const next = new ToolwireClient("ws", {
    token,
    ...(info.conversationId !== undefined && { conversationId: info.conversationId }),
    handlers,
    onConsent: (request) => {
      if (own === generation) {
        asked(timeline, request, PAGE_TOOLS);
        changed();
      }
      return consent.ask(request);
    },
    onEvent: (event) => onEvent(event, own),
    persist: webStorage(localStorage, store.clientKey(info.local)),
    reconnect: { attempts: Infinity },
    // The timeline shows the final answer in place of what was streamed (timeline.ts).
    wholeAnswers: true,
  });
  client = next;
  try {
    await next.open();
    await next.register([PAGE_GROUP]);
    if (own !== generation) return;
    registered = true;
    draw();
    void refreshConversations();
  } catch (error) {
    if (own !== generation) return;
    const message = error instanceof Error ? error.message : String(error);
    showConnection("closed");
    if (error instanceof Error && refused(error)) {
      save();
    } else if (error instanceof ConnectionClosed && error.code === undefined) {
      // Unreachable, or a server that does not say why it refused: the token may be the reason.
      askToken(`Could not connect: ${message}`);
    } else {
      notice(timeline, `Could not open this conversation: ${message}`, "error");
      changed();
    }
    draw();
  }
}

/** Send a message; false when it could not be sent (the toast says why). */
function send(text: string): boolean {
  if (client === undefined || text.trim() === "") return false;
  let key: string;
  try {
    key = client.send(text).messageId;
  } catch (error) {
    toast(ui.toasts, error instanceof Error ? error.message : String(error), "error");
    return false;
  }
  addUser(timeline, key, text);
  if (conversation.title === store.UNTITLED) {
    conversation = { ...conversation, title: text.length > 60 ? `${text.slice(0, 59)}…` : text };
  }
  conversation = { ...conversation, updated: Date.now() };
  store.saveConversation(conversation);
  drawConversations();
  changed();
  return true;
}

function undo(entry: ToolEntry): void {
  if (entry.undo === undefined || busy()) return;
  entry.undoSent = send(undoMessage(entry, entry.undo));
  changed();
}

// -- the token ----------------------------------------------------------------------------------

function askToken(problem = ""): void {
  ui.tokenProblem.textContent = problem;
  ui.token.value = "";
  ui.tokenForm.hidden = false;
  ui.token.focus();
}

ui.tokenForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const value = ui.token.value.trim();
  if (!value) return;
  token = value;
  store.rememberToken(value);
  ui.tokenForm.hidden = true;
  void open(conversation);
});

// -- the composer -------------------------------------------------------------------------------

ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  if (ui.send.disabled) return;
  const text = ui.message.value;
  ui.message.value = "";
  if (!send(text)) ui.message.value = text; // not sent: keep it
});

ui.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});

// Another tab or client may have made or deleted conversations meanwhile.
window.addEventListener("focus", () => void refreshConversations());

ui.stop.addEventListener("click", () => client?.stop("stopped from the chat page"));
ui.newConversation.addEventListener("click", () => {
  if (conversation.title === store.UNTITLED && timeline.entries.length === 0) {
    ui.message.focus(); // this one is new already
    return;
  }
  void open(store.newConversation());
  ui.message.focus();
});

// -- boot ---------------------------------------------------------------------------------------

document.documentElement.dataset.theme = initialTheme();
drawPageTools();
token = store.takeToken();
const known = store.conversations();
const active = store.activeConversation();
void open(known.find((item) => item.local === active) ?? known[0] ?? store.newConversation());
