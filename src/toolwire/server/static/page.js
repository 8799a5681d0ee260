// page/main.ts
import { ConnectionClosed, ErrorCode, ToolwireClient, webStorage } from "./toolwire-client.js";

// page/timeline.ts
import { outcomeOf as readOutcome, resultTypeForCode } from "./toolwire-client.js";
var BY_TYPE = ["success", "error", "canceled", "timeout", "denied"];
var DETAIL_CHARS = 400;
function emptyTimeline() {
  return { version: 1, entries: [] };
}
function answerText(entry) {
  return entry.parts.join("");
}
function outcomeOf(result) {
  return BY_TYPE[readOutcome(result).type];
}
function outcomeOfCode(code) {
  return code === void 0 ? "error" : BY_TYPE[resultTypeForCode(code)];
}
function valueOf(result) {
  return readOutcome(result).value;
}
function jsonText(value, limit = DETAIL_CHARS) {
  const text = JSON.stringify(value, (_key, item) => {
    if (item instanceof Uint8Array) return `<${item.byteLength} bytes>`;
    if (typeof item === "bigint") return item.toString();
    return item;
  }) ?? "null";
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}
function plain(value) {
  return JSON.parse(jsonText(value, Infinity));
}
function isObject(value) {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
function asText(value) {
  return typeof value === "string" ? value : jsonText(value);
}
function previewOf(value) {
  if (!isObject(value)) return void 0;
  const preview2 = value.preview;
  if (typeof preview2 === "string") return { text: preview2 };
  if (isObject(preview2) && ("before" in preview2 || "after" in preview2)) {
    return { before: asText(preview2.before ?? ""), after: asText(preview2.after ?? "") };
  }
  return void 0;
}
function undoOf(value) {
  if (!isObject(value) || !isObject(value.undo)) return void 0;
  const { tool: tool2, arguments: args, label: label2 } = value.undo;
  if (typeof tool2 !== "string" || tool2 === "") return void 0;
  return {
    tool: tool2,
    arguments: isObject(args) ? plain(args) : {},
    ...typeof label2 === "string" && { label: label2 }
  };
}
function undoMessage(entry, undo2) {
  return `Undo the ${entry.name} call: please call ${undo2.tool} with ${JSON.stringify(undo2.arguments)}.`;
}
function apply(timeline2, event, browserTools) {
  switch (event.kind) {
    case "runQueued":
      timeline2.running = event.runId;
      timeline2.sending = false;
      timeline2.queued = event.position;
      return true;
    case "runStarted":
      timeline2.running = event.runId;
      timeline2.sending = false;
      delete timeline2.queued;
      return true;
    case "runFinished":
      timeline2.running = void 0;
      timeline2.sending = false;
      delete timeline2.queued;
      if (event.reason !== void 0 && event.reason !== "answer") {
        const why = event.reason === "canceled" ? "Stopped" : `The run ended: ${event.reason}`;
        notice(timeline2, `${why}${event.detail ? ` (${event.detail})` : ""}.`, "info");
      }
      return true;
    case "runFailed":
      if (event.runId === void 0 || event.runId === timeline2.running) {
        timeline2.running = void 0;
        delete timeline2.queued;
      }
      timeline2.sending = false;
      notice(timeline2, event.message, "error");
      return true;
    case "answerStarted":
      answer(timeline2, event.messageId, event.previousId);
      return true;
    case "answerText": {
      const entry = answer(timeline2, event.messageId);
      entry.parts[event.sequence] = event.text;
      for (let i = 0; i < entry.parts.length; i++) entry.parts[i] ??= "";
      entry.done ||= event.isFinal;
      return true;
    }
    case "assistantMessage": {
      if (timeline2.entries.some((e) => e.kind === "answer" && (e.final === event.id || e.key === event.id))) return false;
      const streamed = [...timeline2.entries].reverse().find((e) => e.kind === "answer" && e.final === void 0 && e.replyTo === event.previousId);
      const entry = streamed ?? answer(timeline2, event.id, event.previousId);
      entry.parts = [event.content];
      entry.final = event.id;
      entry.done = true;
      return true;
    }
    case "serverToolCall": {
      const { request } = event;
      const entry = tool(timeline2, request.callId ?? request.id, request.toolName, "server");
      Object.assign(entry, { mode: request.mode ?? entry.mode, args: plain(request.arguments) });
      if (entry.status !== "done") Object.assign(entry, { status: "running", startedAt: Date.now() });
      return true;
    }
    case "serverToolResult": {
      const entry = tool(timeline2, event.result.id, event.toolName || "(a server tool)", "server");
      const durationMs = entry.startedAt === void 0 ? void 0 : Date.now() - entry.startedAt;
      finish(entry, event.result, durationMs);
      return true;
    }
    case "clientToolStarted": {
      const { request } = event;
      const entry = tool(timeline2, request.callId ?? request.id, request.toolName, "browser");
      Object.assign(entry, { mode: request.mode ?? entry.mode, args: plain(request.arguments) });
      Object.assign(entry, { status: "running", outcome: void 0, detail: void 0, startedAt: Date.now() });
      return true;
    }
    case "clientToolCall": {
      const { request, result } = event;
      const entry = tool(timeline2, request.callId ?? request.id, request.toolName, "browser");
      if (event.replayed && entry.status === "done") return false;
      entry.mode = request.mode ?? entry.mode;
      entry.args = plain(request.arguments);
      finish(entry, result, event.replayed ? entry.durationMs : event.durationMs);
      return true;
    }
    case "clientToolCanceled": {
      const { request } = event;
      if (request === void 0) return false;
      const entry = tool(timeline2, request.callId ?? request.id, request.toolName, "browser");
      if (entry.withdrawn !== void 0) return false;
      entry.withdrawn = { code: event.code, ...event.reason !== void 0 && { reason: event.reason } };
      entry.outcome = outcomeOfCode(event.code);
      if (entry.status !== "done" && entry.startedAt !== void 0) entry.durationMs = Date.now() - entry.startedAt;
      entry.status = "done";
      return true;
    }
    case "resultRefused": {
      const { request } = event;
      const entry = tool(timeline2, request.callId ?? request.id, request.toolName, "browser");
      if (entry.refused !== void 0) return false;
      entry.refused = event.message;
      return true;
    }
    case "consent": {
      const { request, answer: reply } = event;
      const entry = asked(timeline2, request, browserTools);
      if (reply.allow) {
        entry.consent = reply.scope === "thread" ? "Allowed for this conversation" : "Allowed once";
        if (entry.status === "consent") entry.status = "running";
      } else {
        entry.consent = `Denied: ${reply.reason ?? "no reason given"}`;
        Object.assign(entry, { status: "done", outcome: "denied", detail: void 0 });
      }
      return true;
    }
    case "serverError":
      timeline2.sending = false;
      notice(timeline2, `The server reported an error (${event.error.code}): ${event.error.message}`, "error");
      return true;
    case "warning":
      if (event.message.includes("(302)")) return false;
      notice(timeline2, event.message, "info");
      return true;
    case "connection":
      return false;
  }
}
function asked(timeline2, request, browserTools) {
  const where = browserTools.has(request.toolName) ? "browser" : "server";
  const entry = tool(timeline2, request.callId, request.toolName, where);
  entry.mode = request.mode;
  entry.args = plain(request.arguments ?? {});
  if (entry.status === "running" && entry.outcome === void 0 && entry.consent === void 0) entry.status = "consent";
  return entry;
}
function addUser(timeline2, key, text) {
  timeline2.entries.push({ kind: "user", key, text });
  timeline2.sending = true;
}
function notice(timeline2, text, level) {
  timeline2.entries.push({ kind: "notice", key: `notice-${timeline2.entries.length}`, text, level });
}
function answer(timeline2, key, replyTo) {
  let entry = timeline2.entries.find((e) => e.kind === "answer" && e.key === key);
  if (entry === void 0) {
    entry = { kind: "answer", key, parts: [], done: false, ...replyTo !== void 0 && { replyTo } };
    timeline2.entries.push(entry);
  }
  return entry;
}
function tool(timeline2, key, name, where) {
  let entry = timeline2.entries.find((e) => e.kind === "tool" && e.key === key);
  if (entry === void 0) {
    entry = { kind: "tool", key, name, args: {}, where, status: "running" };
    timeline2.entries.push(entry);
  }
  return entry;
}
function finish(entry, result, durationMs) {
  entry.status = "done";
  entry.outcome = outcomeOf(result);
  entry.durationMs = durationMs;
  if (entry.outcome !== "success") {
    entry.detail = result.errorMessage ?? result.errorCode ?? entry.outcome;
    return;
  }
  let value = valueOf(result);
  const preview2 = entry.mode === "safe_write" ? previewOf(value) : void 0;
  const undo2 = entry.mode === "destructive" ? undoOf(value) : void 0;
  if (preview2 !== void 0) entry.preview = preview2;
  if (undo2 !== void 0) entry.undo = undo2;
  if (isObject(value) && (preview2 !== void 0 || undo2 !== void 0)) {
    const { preview: _shown, undo: _offered, ...rest } = value;
    value = rest;
  }
  entry.detail = value === void 0 ? "" : asText(value).slice(0, DETAIL_CHARS);
}

// page/consent.ts
var FOCUSABLE = "button:not([disabled]):not([hidden]), input:not([disabled]), [href], [tabindex]:not([tabindex='-1'])";
var ConsentDialog = class {
  constructor(dialog) {
    this.dialog = dialog;
    this.form = dialog.querySelector("form");
    this.reason = dialog.querySelector("#consent-reason");
    this.always = dialog.querySelector("button[value='thread']");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const choice = event.submitter?.value ?? "deny";
      this.finish(this.decision(choice));
    });
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      this.finish(this.decision("deny"));
    });
    dialog.addEventListener("keydown", (event) => this.trap(event));
    this.reason.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing) {
        event.preventDefault();
        this.finish(this.decision("deny"));
      }
    });
  }
  dialog;
  queue = [];
  current;
  form;
  reason;
  always;
  /** Ask the person about `request`; resolves with their decision. */
  ask(request) {
    return new Promise((resolve) => {
      this.queue.push({ request, resolve });
      if (this.current === void 0) this.next();
    });
  }
  /**
   * Withdraw every prompt (the conversation was switched): its client is closed and sends no
   * answer; the prompts stay in its saved state and are asked again when it resumes.
   */
  clear() {
    const pending = [this.current, ...this.queue.splice(0)];
    this.current = void 0;
    if (this.dialog.open) this.dialog.close();
    for (const item of pending) item?.resolve({ allow: false, reason: "the conversation was switched" });
  }
  decision(choice) {
    if (choice === "once" || choice === "thread") return { allow: true, scope: choice };
    const reason = this.reason.value.trim();
    return { allow: false, ...reason && { reason } };
  }
  next() {
    const pending = this.queue.shift();
    this.current = pending;
    if (pending === void 0) return;
    const { request } = pending;
    const text = (selector, value) => {
      this.dialog.querySelector(selector).textContent = value;
    };
    text("#consent-title", `Allow ${request.toolName}?`);
    text("#consent-description", request.description || "No description.");
    text("#consent-mode", request.mode);
    this.dialog.querySelector("#consent-mode").className = `badge mode mode-${request.mode}`;
    text("#consent-why", request.reason ?? "");
    text("#consent-arguments", jsonText(request.arguments ?? {}, 2e3));
    this.always.hidden = request.allowAlways === false;
    this.reason.value = "";
    this.dialog.showModal();
    this.dialog.querySelector("button[value='deny']").focus();
  }
  finish(decision) {
    const pending = this.current;
    if (pending === void 0) return;
    this.dialog.close();
    pending.resolve(decision);
    this.next();
  }
  trap(event) {
    if (event.key !== "Tab") return;
    const items = Array.from(this.dialog.querySelectorAll(FOCUSABLE));
    const first = items[0];
    const last = items[items.length - 1];
    if (first === void 0 || last === void 0) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  }
};

// page/render.ts
var OUTCOME_LABELS = {
  success: "Success",
  error: "Error",
  canceled: "Canceled",
  timeout: "Timeout",
  denied: "Denied"
};
var MODE_LABELS = {
  read: "read",
  safe_write: "safe write",
  destructive: "destructive",
  local: "local",
  external: "external"
};
var ICONS = {
  success: "M3 8.5l3 3 7-7",
  error: "M4 4l8 8M12 4l-8 8",
  canceled: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM3.8 3.8l8.4 8.4",
  timeout: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 4.5V8l2.5 2",
  denied: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM4.5 8h7",
  running: "M8 2a6 6 0 1 0 6 6",
  consent: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 5v4M8 11v.5",
  info: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 7v4.5M8 4.5V5",
  warning: "M8 2l6.5 11.5h-13zM8 6.5v3.5M8 11.5v.5"
};
function el(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== void 0) element.setAttribute(name, value);
  for (const child of children) if (child !== false && child !== void 0) element.append(child);
  return element;
}
function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `icon icon-${name}`);
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}
function duration(ms) {
  if (ms < 1) return "< 1 ms";
  if (ms < 1e3) return `${Math.round(ms)} ms`;
  return `${(ms / 1e3).toFixed(ms < 1e4 ? 1 : 0)} s`;
}
var TimelineView = class {
  constructor(list) {
    this.list = list;
  }
  list;
  drawn = /* @__PURE__ */ new Map();
  /** Forget everything drawn (another conversation). */
  clear() {
    this.drawn.clear();
    this.list.replaceChildren();
  }
  draw(entries, options) {
    for (const entry of entries) {
      const signature = JSON.stringify(entry) + (entry.kind === "tool" && entry.undo ? String(options.busy) : "");
      const known2 = this.drawn.get(entry.key);
      if (known2?.signature === signature) continue;
      const element = drawEntry(entry, options);
      if (known2 === void 0) this.list.append(element);
      else known2.element.replaceWith(element);
      this.drawn.set(entry.key, { signature, element });
    }
  }
};
function drawEntry(entry, options) {
  switch (entry.kind) {
    case "user":
      return el("li", { class: "entry user" }, el("p", { class: "who" }, "You"), el("p", { class: "text" }, entry.text));
    case "answer":
      return el(
        "li",
        { class: "entry answer", "aria-busy": String(!entry.done), "data-done": String(entry.done) },
        el("p", { class: "who" }, "Assistant"),
        el("p", { class: "text" }, answerText(entry) || "…")
      );
    case "notice":
      return el("li", { class: `entry notice notice-${entry.level}` }, el("p", {}, entry.text));
    case "tool":
      return drawTool(entry, options);
  }
}
function drawTool(entry, options) {
  const mode = entry.mode ?? "unknown";
  const args = jsonText(entry.args);
  const head = el(
    "div",
    { class: "tool-head" },
    el("code", { class: "tool-name" }, entry.name),
    el("span", { class: `badge mode mode-${mode}`, title: "ToolMode" }, MODE_LABELS[mode] ?? mode),
    el(
      "span",
      { class: `where where-${entry.where}` },
      entry.where === "browser" ? "ran in this browser" : "ran on the server"
    ),
    status(entry),
    entry.durationMs !== void 0 && el("span", { class: "duration" }, duration(entry.durationMs))
  );
  const item = el(
    "li",
    {
      class: "entry tool",
      "data-tool": entry.name,
      "data-key": entry.key,
      "data-mode": mode,
      "data-where": entry.where,
      "data-status": entry.status,
      "data-outcome": entry.outcome,
      "data-withdrawn": entry.withdrawn?.code,
      "data-refused": entry.refused === void 0 ? void 0 : "true"
    },
    head,
    el("p", { class: "args" }, el("span", { class: "label" }, "Arguments "), el("code", {}, args)),
    entry.consent !== void 0 && el("p", { class: "consent-answer" }, entry.consent),
    entry.withdrawn !== void 0 && el("p", { class: "withdrawn" }, withdrawn(entry.withdrawn)),
    entry.detail ? el("p", { class: "detail" }, el("span", { class: "label" }, label(entry)), entry.detail) : void 0,
    entry.refused !== void 0 && el("p", { class: "refused" }, `The server did not take this result: ${entry.refused}`)
  );
  if (entry.preview !== void 0) item.append(preview(entry));
  if (entry.undo !== void 0) {
    const undo2 = entry.undo;
    const button = el(
      "button",
      { type: "button", class: "undo", disabled: options.busy || entry.undoSent ? "" : void 0 },
      entry.undoSent ? "Undo requested" : `Undo${undo2.label ? `: ${undo2.label}` : ""}`
    );
    button.addEventListener("click", () => options.onUndo(entry));
    item.append(el("p", { class: "undo-row" }, button));
  }
  if (mode === "external") {
    item.append(el("p", { class: "logged" }, "External call: logged in the call log"));
  }
  return item;
}
function label(entry) {
  if (entry.withdrawn !== void 0) return "This page's answer ";
  return entry.outcome === "success" ? "Result " : "Why ";
}
function withdrawn({ code, reason }) {
  return `Canceled by the server: ${code}${reason ? ` (${reason})` : ""}`;
}
function status(entry) {
  if (entry.status === "consent") {
    return el("span", { class: "outcome outcome-pending" }, icon("consent"), "Waiting for your answer");
  }
  if (entry.outcome === void 0) {
    return el("span", { class: "outcome outcome-pending" }, icon("running"), "Running…");
  }
  return el("span", { class: `outcome outcome-${entry.outcome}` }, icon(entry.outcome), OUTCOME_LABELS[entry.outcome]);
}
function preview(entry) {
  const { text, before, after } = entry.preview ?? {};
  const box = el("div", { class: "preview" }, el("p", { class: "label" }, "Preview of the change"));
  if (text !== void 0) {
    box.append(el("pre", {}, text));
  } else {
    box.append(
      el(
        "dl",
        {},
        el("dt", {}, "Before"),
        el("dd", {}, el("del", {}, before || "(empty)")),
        el("dt", {}, "After"),
        el("dd", {}, el("ins", {}, after || "(empty)"))
      )
    );
  }
  return box;
}

// page/server_list.ts
var OUTCOMES = ["success", "error", "canceled", "timeout", "denied"];
function headers(token2) {
  return { Authorization: `Bearer ${token2}` };
}
async function listConversations(token2) {
  try {
    const response = await fetch("conversations", { headers: headers(token2), cache: "no-store" });
    if (!response.ok) return void 0;
    const body = await response.json();
    return Array.isArray(body.conversations) ? { conversations: body.conversations, more: body.more === true } : void 0;
  } catch {
    return void 0;
  }
}
async function transcript(token2, id) {
  try {
    const response = await fetch(`conversations/${encodeURIComponent(id)}`, { headers: headers(token2), cache: "no-store" });
    if (!response.ok) return void 0;
    const body = await response.json();
    return Array.isArray(body.messages) ? body.messages : void 0;
  } catch {
    return void 0;
  }
}
async function deleteConversation(token2, id, force) {
  const query = force ? "?force=true" : "";
  try {
    const response = await fetch(`conversations/${encodeURIComponent(id)}${query}`, { method: "DELETE", headers: headers(token2) });
    if (response.ok || response.status === 404) return { done: true };
    const body = await response.json().catch(() => ({}));
    return { done: false, running: body.code === "run_active", problem: body.error ?? `the server answered ${response.status}` };
  } catch (error) {
    return { done: false, running: false, problem: error instanceof Error ? error.message : String(error) };
  }
}
function timelineOf(messages, browserTools) {
  const timeline2 = emptyTimeline();
  const calls = /* @__PURE__ */ new Map();
  messages.forEach((message, index) => {
    const key = `stored-${index}`;
    if (message.role === "user") {
      timeline2.entries.push({ kind: "user", key, text: message.content });
    } else if (message.role === "assistant") {
      if (message.text) timeline2.entries.push({ kind: "answer", key, parts: [message.text], done: true });
      for (const call of message.toolCalls ?? []) {
        const where = browserTools.has(call.name) ? "browser" : "server";
        const entry = { kind: "tool", key: call.id, name: call.name, args: call.arguments, where, status: "running" };
        calls.set(call.id, entry);
        timeline2.entries.push(entry);
      }
    } else {
      const entry = calls.get(message.result.callId);
      if (entry === void 0) return;
      entry.status = "done";
      entry.outcome = OUTCOMES[message.result.type] ?? (message.result.success ? "success" : "error");
      const failure = message.result.error ?? message.result.message;
      entry.detail = message.result.success ? jsonText(message.result.data) : failure;
    }
  });
  return timeline2;
}

// page/store.ts
var LIST = "toolwire.conversations";
var UNTITLED = "Untitled conversation";
var MAX_CONVERSATIONS = 50;
var clientKey = (local) => `toolwire.client.${local}`;
var timelineKey = (local) => `toolwire.timeline.${local}`;
function read(storage, key) {
  try {
    const text = storage.getItem(key);
    return text === null ? void 0 : JSON.parse(text);
  } catch {
    return void 0;
  }
}
function conversations() {
  const list = read(localStorage, LIST);
  return Array.isArray(list) ? list.filter((item) => typeof item?.local === "string") : [];
}
function saveConversation(info) {
  keep([info, ...conversations().filter((item) => item.local !== info.local)]);
}
function keep(list) {
  for (const dropped of list.splice(MAX_CONVERSATIONS)) forgetState(dropped.local);
  localStorage.setItem(LIST, JSON.stringify(list));
}
function forgetState(local) {
  localStorage.removeItem(clientKey(local));
  localStorage.removeItem(timelineKey(local));
}
function forgetConversation(local) {
  forgetState(local);
  localStorage.setItem(LIST, JSON.stringify(conversations().filter((item) => item.local !== local)));
}
function syncConversations(listing, current) {
  const listed = listing.conversations;
  const there = new Map(listed.map((item) => [item.id, item]));
  const list = [];
  for (const item of conversations()) {
    const known2 = item.conversationId === void 0 ? void 0 : there.get(item.conversationId);
    if (known2 !== void 0) {
      list.push({ ...item, title: known2.title ?? item.title, updated: Math.max(item.updated, Date.parse(known2.updatedAt) || 0) });
    } else if (item.conversationId === void 0 || item.local === current || listing.more) {
      list.push(item);
    } else {
      forgetState(item.local);
    }
  }
  const have = new Set(list.map((item) => item.conversationId));
  for (const item of listed) {
    if (have.has(item.id) || item.messageCount === 0) continue;
    list.push({ ...newConversation(), conversationId: item.id, title: item.title ?? UNTITLED, updated: Date.parse(item.updatedAt) || 0 });
  }
  keep(list.sort((a, b) => b.updated - a.updated));
}
function newConversation() {
  const local = Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join("");
  return { local, title: UNTITLED, updated: Date.now() };
}
function loadTimeline(local) {
  const timeline2 = read(localStorage, timelineKey(local));
  return timeline2?.version === 1 && Array.isArray(timeline2.entries) ? timeline2 : void 0;
}
function saveTimeline(local, timeline2) {
  localStorage.setItem(timelineKey(local), JSON.stringify(timeline2));
}
function takeToken() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) {
    sessionStorage.setItem("toolwire.token", fromHash);
    history.replaceState(null, "", location.pathname + location.search);
    return fromHash;
  }
  return sessionStorage.getItem("toolwire.token") ?? void 0;
}
function rememberToken(token2) {
  sessionStorage.setItem("toolwire.token", token2);
}
function forgetToken() {
  sessionStorage.removeItem("toolwire.token");
}
function activeConversation() {
  return sessionStorage.getItem("toolwire.active") ?? void 0;
}
function setActiveConversation(local) {
  sessionStorage.setItem("toolwire.active", local);
}

// page/tools.ts
var NO_ARGUMENTS = { type: "object", properties: {}, additionalProperties: false };
var TEXT = { type: "string", maxLength: 2e4 };
var PAGE_GROUP = {
  name: "Page",
  description: "The chat page the user has open: its notes area, messages to the user, the colour theme",
  tools: [
    {
      name: "GetSelection",
      description: "The text the user selected in the page's notes area (empty when nothing is selected)",
      parametersSchema: NO_ARGUMENTS
    },
    {
      name: "GetUserInput",
      description: "Ask the user a question on the page and wait for the typed answer",
      parametersSchema: {
        type: "object",
        properties: { question: { type: "string", maxLength: 500 } },
        required: ["question"],
        additionalProperties: false
      }
    },
    {
      name: "ShowMessage",
      description: "Show the user a short message (a toast) with a severity",
      parametersSchema: {
        type: "object",
        properties: { text: { type: "string", maxLength: 500 }, severity: { enum: ["info", "warning", "error"] } },
        required: ["text"],
        additionalProperties: false
      }
    },
    {
      name: "SetTheme",
      description: "Switch the page to the light or the dark colour theme",
      parametersSchema: {
        type: "object",
        properties: { theme: { enum: ["light", "dark"] } },
        required: ["theme"],
        additionalProperties: false
      }
    },
    {
      name: "SetNotes",
      description: "Replace the text of the page's notes area",
      parametersSchema: { type: "object", properties: { text: TEXT }, required: ["text"], additionalProperties: false }
    },
    {
      name: "DeleteNotes",
      description: "Delete everything in the page's notes area (asks the user first)",
      parametersSchema: NO_ARGUMENTS,
      requiresPermission: true
    }
  ]
};
var PAGE_TOOLS = new Set(PAGE_GROUP.tools.map((tool2) => tool2.name));
var SEVERITY_LABELS = { info: "Info", warning: "Warning", error: "Error" };
var TOAST_MS = 1e4;
function toast(container, text, severity = "info") {
  const close = el("button", { type: "button", class: "toast-close", "aria-label": "Dismiss message" }, "×");
  const item = el(
    "div",
    { class: `toast toast-${severity}`, role: severity === "error" ? "alert" : "status" },
    icon(severity === "error" ? "error" : severity),
    el("strong", {}, `${SEVERITY_LABELS[severity]}: `),
    el("span", {}, text),
    close
  );
  close.addEventListener("click", () => item.remove());
  container.append(item);
  setTimeout(() => item.remove(), TOAST_MS);
}
function pageHandlers(parts) {
  const { notes } = parts;
  return {
    GetSelection: () => notes.value.slice(notes.selectionStart, notes.selectionEnd),
    GetUserInput: (args, { request, signal }) => ask(parts.questions, request.id, String(args.question), signal),
    ShowMessage: (args) => {
      const severity = ["info", "warning", "error"].includes(String(args.severity)) ? args.severity : "info";
      toast(parts.toasts, String(args.text), severity);
      return { shown: true, severity };
    },
    SetTheme: (args) => {
      const before = parts.theme();
      const after = args.theme === "dark" ? "dark" : "light";
      parts.setTheme(after);
      return { theme: after, preview: { before, after } };
    },
    SetNotes: (args) => {
      const before = notes.value;
      notes.value = String(args.text);
      return { length: notes.value.length, preview: { before, after: notes.value } };
    },
    DeleteNotes: () => {
      const before = notes.value;
      notes.value = "";
      if (before === "") return { deleted: 0 };
      return {
        deleted: before.length,
        undo: { tool: "SetNotes", arguments: { text: before }, label: "restore the notes" }
      };
    }
  };
}
function ask(container, id, question, signal) {
  return new Promise((resolve, reject) => {
    const input = el("input", { id: `answer-${id}`, name: "answer", autocomplete: "off", required: "" });
    const form = el(
      "form",
      { class: "question", "data-request": id },
      el("label", { for: `answer-${id}` }, question),
      el("div", { class: "row" }, input, el("button", { type: "submit" }, "Answer"))
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      form.remove();
      resolve(input.value);
    });
    signal.addEventListener("abort", () => {
      form.remove();
      reject(new Error("the question was withdrawn"));
    });
    container.append(form);
  });
}

// page/main.ts
function byId(id) {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
}
var ui = {
  connection: byId("connection"),
  connectionText: byId("connection-text"),
  timeline: byId("timeline"),
  composer: byId("composer"),
  message: byId("message"),
  send: byId("send"),
  stop: byId("stop"),
  queued: byId("queued"),
  conversations: byId("conversation-list"),
  newConversation: byId("new-conversation"),
  notes: byId("notes"),
  toasts: byId("toasts"),
  questions: byId("questions"),
  callLog: byId("call-log"),
  pageTools: byId("page-tool-list"),
  tokenForm: byId("token-form"),
  token: byId("token"),
  tokenProblem: byId("token-problem")
};
var CONNECTION_LABELS = {
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected"
};
var PAGE_MODES = {
  GetSelection: "read",
  GetUserInput: "read",
  ShowMessage: "external",
  SetTheme: "safe_write",
  SetNotes: "safe_write",
  DeleteNotes: "destructive"
};
var view = new TimelineView(ui.timeline);
var consent = new ConsentDialog(byId("consent"));
var handlers = pageHandlers({
  notes: ui.notes,
  toasts: ui.toasts,
  questions: ui.questions,
  theme: () => document.documentElement.dataset.theme === "dark" ? "dark" : "light",
  setTheme
});
var token;
var client;
var conversation = newConversation();
var timeline = emptyTimeline();
var generation = 0;
var registered = false;
function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem("toolwire.theme", theme);
}
function initialTheme() {
  const saved = localStorage.getItem("toolwire.theme");
  if (saved === "dark" || saved === "light") return saved;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}
function ordinal(n) {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ["th", "st", "nd", "rd"][n % 10] ?? "th";
  return `${n}${suffix}`;
}
function busy() {
  return timeline.running !== void 0 || timeline.sending === true;
}
function draw() {
  const list = ui.timeline;
  const scrolls = getComputedStyle(list).overflowY === "auto";
  const following = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
  view.draw(timeline.entries, { busy: busy(), onUndo: undo });
  if (scrolls && following) list.scrollTop = list.scrollHeight;
  const closed = client === void 0 || client.connectionState === "closed";
  ui.send.disabled = busy() || closed || !registered;
  ui.stop.disabled = !busy() || closed;
  ui.queued.hidden = timeline.queued === void 0;
  ui.queued.textContent = timeline.queued === void 0 ? "" : `The server is busy: your message waits (${ordinal(timeline.queued)} in line).`;
  ui.composer.setAttribute("aria-busy", String(busy()));
  drawCallLog();
}
function drawCallLog() {
  const external = timeline.entries.filter((e) => e.kind === "tool" && e.mode === "external");
  ui.callLog.replaceChildren(
    ...external.map((entry) => {
      const when = entry.startedAt === void 0 ? "" : new Date(entry.startedAt).toLocaleTimeString();
      const outcome = entry.outcome === void 0 ? "running" : OUTCOME_LABELS[entry.outcome];
      const took = entry.durationMs === void 0 ? "" : `, ${duration(entry.durationMs)}`;
      return el("li", {}, el("code", {}, entry.name), ` ${when}: ${outcome}${took}`);
    })
  );
  if (external.length === 0) ui.callLog.append(el("li", { class: "empty" }, "No external calls yet."));
}
function drawConversations() {
  const focused = ui.conversations.contains(document.activeElement);
  const list = conversations();
  if (!list.some((item) => item.local === conversation.local)) list.unshift(conversation);
  ui.conversations.replaceChildren(
    ...list.map((item) => {
      const current = item.local === conversation.local;
      const button = el(
        "button",
        { type: "button", class: "conversation", "aria-current": current ? "true" : void 0 },
        el("span", { class: "title" }, item.title),
        el("span", { class: "when" }, new Date(item.updated).toLocaleString())
      );
      button.addEventListener("click", () => {
        if (!current) void open(item);
      });
      if (item.conversationId === void 0) return el("li", {}, button);
      const remove = el("button", { type: "button", class: "delete-conversation", "aria-label": `Delete “${item.title}”`, title: "Delete" }, "×");
      remove.addEventListener("click", () => void deleteConversation2(item));
      return el("li", {}, button, remove);
    })
  );
  if (focused) ui.conversations.querySelector("[aria-current=true]")?.focus();
}
async function refreshConversations() {
  if (token === void 0) return;
  const listing = await listConversations(token);
  if (listing === void 0) return;
  syncConversations(listing, conversation.local);
  drawConversations();
}
async function deleteConversation2(item) {
  const id = item.conversationId;
  if (id === void 0 || token === void 0) return;
  if (!confirm(`Delete “${item.title}”? The server deletes its transcript too.`)) return;
  const current = item.local === conversation.local;
  if (current) {
    generation++;
    client?.close();
    client = void 0;
  }
  let outcome = await deleteConversation(token, id, false);
  if (!outcome.done && outcome.running && confirm("A run is in progress in this conversation. Cancel it and delete?")) {
    outcome = await deleteConversation(token, id, true);
  }
  if (outcome.done) {
    forgetConversation(item.local);
    if (current) void open(newConversation());
    drawConversations();
    return;
  }
  if (current) void open(item);
  if (!outcome.running) toast(ui.toasts, `Could not delete the conversation: ${outcome.problem}`, "error");
}
function drawPageTools() {
  ui.pageTools.replaceChildren(
    ...(PAGE_GROUP.tools ?? []).map((tool2) => {
      const mode = PAGE_MODES[tool2.name] ?? "external";
      return el(
        "li",
        {},
        el("code", {}, tool2.name),
        " ",
        el("span", { class: `badge mode mode-${mode}` }, mode.replace("_", " ")),
        tool2.requiresPermission ? el("span", { class: "asks" }, " asks you first") : void 0,
        el("br"),
        el("span", { class: "hint" }, tool2.description ?? "")
      );
    })
  );
}
function showConnection(state, detail = "") {
  ui.connection.dataset.state = state;
  ui.connectionText.textContent = CONNECTION_LABELS[state] + (detail ? ` ${detail}` : "");
}
function save() {
  saveTimeline(conversation.local, timeline);
}
function changed() {
  save();
  draw();
}
function onEvent(event, own) {
  if (own !== generation) return;
  if (event.kind === "connection") {
    showConnection(event.state, event.state === "reconnecting" ? `(attempt ${event.attempt ?? 1})` : "");
    if (event.state === "open") remember();
    if (event.state === "closed" && registered && event.error !== void 0) {
      if (!refused(event.error)) notice(timeline, `The connection closed: ${event.error.message}`, "error");
      save();
    }
    draw();
    return;
  }
  if (apply(timeline, event, PAGE_TOOLS)) changed();
}
function refused(error) {
  if (!(error instanceof ConnectionClosed)) return false;
  if (error.code === ErrorCode.UNAUTHENTICATED) {
    token = void 0;
    forgetToken();
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
function remember() {
  const id = client?.conversationId;
  if (!id || conversation.conversationId === id) return;
  conversation = { ...conversation, conversationId: id, updated: Date.now() };
  saveConversation(conversation);
  drawConversations();
  void refreshConversations();
}
async function open(info) {
  const own = ++generation;
  client?.close();
  consent.clear();
  client = void 0;
  registered = false;
  conversation = info;
  const saved = loadTimeline(info.local);
  timeline = saved ?? emptyTimeline();
  setActiveConversation(info.local);
  view.clear();
  draw();
  drawConversations();
  if (token === void 0) return askToken();
  if (saved === void 0 && info.conversationId !== void 0) {
    const messages = await transcript(token, info.conversationId);
    if (own !== generation) return;
    if (messages !== void 0) {
      timeline = timelineOf(messages, PAGE_TOOLS);
      changed();
    }
  }
  showConnection("connecting");
  const next = new ToolwireClient("ws", {
    token,
    ...info.conversationId !== void 0 && { conversationId: info.conversationId },
    handlers,
    onConsent: (request) => {
      if (own === generation) {
        asked(timeline, request, PAGE_TOOLS);
        changed();
      }
      return consent.ask(request);
    },
    onEvent: (event) => onEvent(event, own),
    persist: webStorage(localStorage, clientKey(info.local)),
    reconnect: { attempts: Infinity },
    // The timeline shows the final answer in place of what was streamed (timeline.ts).
    wholeAnswers: true
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
    } else if (error instanceof ConnectionClosed && error.code === void 0) {
      askToken(`Could not connect: ${message}`);
    } else {
      notice(timeline, `Could not open this conversation: ${message}`, "error");
      changed();
    }
    draw();
  }
}
function send(text) {
  if (client === void 0 || text.trim() === "") return false;
  let key;
  try {
    key = client.send(text).messageId;
  } catch (error) {
    toast(ui.toasts, error instanceof Error ? error.message : String(error), "error");
    return false;
  }
  addUser(timeline, key, text);
  if (conversation.title === UNTITLED) {
    conversation = { ...conversation, title: text.length > 60 ? `${text.slice(0, 59)}…` : text };
  }
  conversation = { ...conversation, updated: Date.now() };
  saveConversation(conversation);
  drawConversations();
  changed();
  return true;
}
function undo(entry) {
  if (entry.undo === void 0 || busy()) return;
  entry.undoSent = send(undoMessage(entry, entry.undo));
  changed();
}
function askToken(problem = "") {
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
  rememberToken(value);
  ui.tokenForm.hidden = true;
  void open(conversation);
});
ui.composer.addEventListener("submit", (event) => {
  event.preventDefault();
  if (ui.send.disabled) return;
  const text = ui.message.value;
  ui.message.value = "";
  if (!send(text)) ui.message.value = text;
});
ui.message.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    ui.composer.requestSubmit();
  }
});
window.addEventListener("focus", () => void refreshConversations());
ui.stop.addEventListener("click", () => client?.stop("stopped from the chat page"));
ui.newConversation.addEventListener("click", () => {
  if (conversation.title === UNTITLED && timeline.entries.length === 0) {
    ui.message.focus();
    return;
  }
  void open(newConversation());
  ui.message.focus();
});
document.documentElement.dataset.theme = initialTheme();
drawPageTools();
token = takeToken();
var known = conversations();
var active = activeConversation();
void open(known.find((item) => item.local === active) ?? known[0] ?? newConversation());
//# sourceMappingURL=page.js.map
