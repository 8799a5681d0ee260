/**
 * Draws a `Timeline` into its `<ol role="log">`, entry by entry: an entry whose data did not
 * change keeps its element (and the focus in it), a changed one is drawn again in place.
 *
 * Each tool call shows its name, a mode badge, where it ran, its arguments, its outcome type (a
 * colour, an icon and a word: never the colour alone), its duration, and the treatment its mode
 * calls for (seed 002): a preview of the change (safe_write), an Undo button (destructive), a
 * "logged" line (external). A browser call the server withdrew says "Canceled by the server:
 * CODE"; a result the server refused says "The server did not take this result".
 *
 * @module
 */

import { answerText, type Entry, jsonText, type Outcome, type ToolEntry } from "./timeline.js";

export const OUTCOME_LABELS: Record<Outcome, string> = {
  success: "Success",
  error: "Error",
  canceled: "Canceled",
  timeout: "Timeout",
  denied: "Denied",
};

const MODE_LABELS: Record<string, string> = {
  read: "read",
  safe_write: "safe write",
  destructive: "destructive",
  local: "local",
  external: "external",
};

// 16×16 outline icons (currentColor), so that no emoji font is needed.
const ICONS: Record<Outcome | "running" | "consent" | "info" | "warning", string> = {
  success: "M3 8.5l3 3 7-7",
  error: "M4 4l8 8M12 4l-8 8",
  canceled: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM3.8 3.8l8.4 8.4",
  timeout: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 4.5V8l2.5 2",
  denied: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM4.5 8h7",
  running: "M8 2a6 6 0 1 0 6 6",
  consent: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 5v4M8 11v.5",
  info: "M8 2a6 6 0 1 0 0 12A6 6 0 0 0 8 2zM8 7v4.5M8 4.5V5",
  warning: "M8 2l6.5 11.5h-13zM8 6.5v3.5M8 11.5v.5",
};

type Children = (Node | string | false | undefined)[];

/** An element with attributes (`class`, `data-*`, `aria-*`, ...) and children. */
export function el(tag: string, attributes: Record<string, string | undefined> = {}, ...children: Children): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) if (value !== undefined) element.setAttribute(name, value);
  for (const child of children) if (child !== false && child !== undefined) element.append(child);
  return element;
}

export function icon(name: keyof typeof ICONS): SVGSVGElement {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `icon icon-${name}`);
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

export function duration(ms: number): string {
  if (ms < 1) return "< 1 ms";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
}

export interface RenderOptions {
  /** A run is in progress: Undo waits. */
  busy: boolean;
  onUndo(entry: ToolEntry): void;
}

/** Keeps `list` in step with a timeline's entries. */
export class TimelineView {
  private drawn = new Map<string, { signature: string; element: HTMLElement }>();

  constructor(private readonly list: HTMLElement) {}

  /** Forget everything drawn (another conversation). */
  clear(): void {
    this.drawn.clear();
    this.list.replaceChildren();
  }

  draw(entries: Entry[], options: RenderOptions): void {
    for (const entry of entries) {
      const signature = JSON.stringify(entry) + (entry.kind === "tool" && entry.undo ? String(options.busy) : "");
      const known = this.drawn.get(entry.key);
      if (known?.signature === signature) continue;
      const element = drawEntry(entry, options);
      if (known === undefined) this.list.append(element);
      else known.element.replaceWith(element);
      this.drawn.set(entry.key, { signature, element });
    }
  }
}

function drawEntry(entry: Entry, options: RenderOptions): HTMLElement {
  switch (entry.kind) {
    case "user":
      return el("li", { class: "entry user" }, el("p", { class: "who" }, "You"), el("p", { class: "text" }, entry.text));
    case "answer":
      return el(
        "li",
        { class: "entry answer", "aria-busy": String(!entry.done), "data-done": String(entry.done) },
        el("p", { class: "who" }, "Assistant"),
        el("p", { class: "text" }, answerText(entry) || "…"),
      );
    case "notice":
      return el("li", { class: `entry notice notice-${entry.level}` }, el("p", {}, entry.text));
    case "tool":
      return drawTool(entry, options);
  }
}

function drawTool(entry: ToolEntry, options: RenderOptions): HTMLElement {
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
      entry.where === "browser" ? "ran in this browser" : "ran on the server",
    ),
    status(entry),
    entry.durationMs !== undefined && el("span", { class: "duration" }, duration(entry.durationMs)),
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
      "data-refused": entry.refused === undefined ? undefined : "true",
    },
    head,
    el("p", { class: "args" }, el("span", { class: "label" }, "Arguments "), el("code", {}, args)),
    entry.consent !== undefined && el("p", { class: "consent-answer" }, entry.consent),
    entry.withdrawn !== undefined && el("p", { class: "withdrawn" }, withdrawn(entry.withdrawn)),
    entry.detail ? el("p", { class: "detail" }, el("span", { class: "label" }, label(entry)), entry.detail) : undefined,
    entry.refused !== undefined &&
      el("p", { class: "refused" }, `The server did not take this result: ${entry.refused}`),
  );
  if (entry.preview !== undefined) item.append(preview(entry));
  if (entry.undo !== undefined) {
    const undo = entry.undo;
    const button = el(
      "button",
      { type: "button", class: "undo", disabled: options.busy || entry.undoSent ? "" : undefined },
      entry.undoSent ? "Undo requested" : `Undo${undo.label ? `: ${undo.label}` : ""}`,
    );
    button.addEventListener("click", () => options.onUndo(entry));
    item.append(el("p", { class: "undo-row" }, button));
  }
  if (mode === "external") {
    item.append(el("p", { class: "logged" }, "External call: logged in the call log"));
  }
  return item;
}

function label(entry: ToolEntry): string {
  if (entry.withdrawn !== undefined) return "This page's answer "; // sent before the withdrawal came
  return entry.outcome === "success" ? "Result " : "Why ";
}

/** "Canceled by the server: timeout (Tool execution exceeded timeout of 30000ms)". */
function withdrawn({ code, reason }: { code: string; reason?: string }): string {
  return `Canceled by the server: ${code}${reason ? ` (${reason})` : ""}`;
}

function status(entry: ToolEntry): HTMLElement {
  if (entry.status === "consent") {
    return el("span", { class: "outcome outcome-pending" }, icon("consent"), "Waiting for your answer");
  }
  if (entry.outcome === undefined) {
    return el("span", { class: "outcome outcome-pending" }, icon("running"), "Running…");
  }
  return el("span", { class: `outcome outcome-${entry.outcome}` }, icon(entry.outcome), OUTCOME_LABELS[entry.outcome]);
}

function preview(entry: ToolEntry): HTMLElement {
  const { text, before, after } = entry.preview ?? {};
  const box = el("div", { class: "preview" }, el("p", { class: "label" }, "Preview of the change"));
  if (text !== undefined) {
    box.append(el("pre", {}, text));
  } else {
    box.append(
      el(
        "dl",
        {},
        el("dt", {}, "Before"),
        el("dd", {}, el("del", {}, before || "(empty)")),
        el("dt", {}, "After"),
        el("dd", {}, el("ins", {}, after || "(empty)")),
      ),
    );
  }
  return box;
}
