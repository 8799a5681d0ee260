/**
 * The page's client tools: the "Page" group, registered on every connect and collapsed by
 * default (the model sees one "Page" container until it expands it).
 *
 * | tool | mode (from its name) | what |
 * |---|---|---|
 * | `GetSelection` | read | the text selected in the notes area |
 * | `GetUserInput` | read | asks the person a question on the page and waits for the answer |
 * | `ShowMessage` | external | a toast with a severity: info, warning, error |
 * | `SetTheme` | safe_write | light or dark; the result previews the change |
 * | `SetNotes` | safe_write | replaces the notes; the result previews the change |
 * | `DeleteNotes` | destructive | empties the notes, after the person's consent (`requiresPermission`); the result declares its undo (`SetNotes` with the old text) |
 *
 * @module
 */

import type { ClientToolGroup, ToolHandler } from "../src/index.js";
import { el, icon } from "./render.js";

export type Theme = "light" | "dark";
export type Severity = "info" | "warning" | "error";

/** What the tools act on. */
export interface PageParts {
  notes: HTMLTextAreaElement;
  toasts: HTMLElement;
  /** Where GetUserInput's questions appear. */
  questions: HTMLElement;
  theme(): Theme;
  setTheme(theme: Theme): void;
}

const NO_ARGUMENTS = { type: "object", properties: {}, additionalProperties: false };
const TEXT = { type: "string", maxLength: 20_000 };

export const PAGE_GROUP: ClientToolGroup = {
  name: "Page",
  description: "The chat page the user has open: its notes area, messages to the user, the colour theme",
  tools: [
    {
      name: "GetSelection",
      description: "The text the user selected in the page's notes area (empty when nothing is selected)",
      parametersSchema: NO_ARGUMENTS,
    },
    {
      name: "GetUserInput",
      description: "Ask the user a question on the page and wait for the typed answer",
      parametersSchema: {
        type: "object",
        properties: { question: { type: "string", maxLength: 500 } },
        required: ["question"],
        additionalProperties: false,
      },
    },
    {
      name: "ShowMessage",
      description: "Show the user a short message (a toast) with a severity",
      parametersSchema: {
        type: "object",
        properties: { text: { type: "string", maxLength: 500 }, severity: { enum: ["info", "warning", "error"] } },
        required: ["text"],
        additionalProperties: false,
      },
    },
    {
      name: "SetTheme",
      description: "Switch the page to the light or the dark colour theme",
      parametersSchema: {
        type: "object",
        properties: { theme: { enum: ["light", "dark"] } },
        required: ["theme"],
        additionalProperties: false,
      },
    },
    {
      name: "SetNotes",
      description: "Replace the text of the page's notes area",
      parametersSchema: { type: "object", properties: { text: TEXT }, required: ["text"], additionalProperties: false },
    },
    {
      name: "DeleteNotes",
      description: "Delete everything in the page's notes area (asks the user first)",
      parametersSchema: NO_ARGUMENTS,
      requiresPermission: true,
    },
  ],
};

/** The names of the page's tools. */
export const PAGE_TOOLS: ReadonlySet<string> = new Set(PAGE_GROUP.tools!.map((tool) => tool.name));

const SEVERITY_LABELS: Record<Severity, string> = { info: "Info", warning: "Warning", error: "Error" };
const TOAST_MS = 10_000;

/** Show a toast; errors are announced at once (`role="alert"`), the others politely. */
export function toast(container: HTMLElement, text: string, severity: Severity = "info"): void {
  const close = el("button", { type: "button", class: "toast-close", "aria-label": "Dismiss message" }, "×");
  const item = el(
    "div",
    { class: `toast toast-${severity}`, role: severity === "error" ? "alert" : "status" },
    icon(severity === "error" ? "error" : severity),
    el("strong", {}, `${SEVERITY_LABELS[severity]}: `),
    el("span", {}, text),
    close,
  );
  close.addEventListener("click", () => item.remove());
  container.append(item);
  setTimeout(() => item.remove(), TOAST_MS);
}

/** The handlers of the Page group, acting on `parts`. */
export function pageHandlers(parts: PageParts): Record<string, ToolHandler> {
  const { notes } = parts;
  return {
    GetSelection: () => notes.value.slice(notes.selectionStart, notes.selectionEnd),
    GetUserInput: (args, { request, signal }) => ask(parts.questions, request.id, String(args.question), signal),
    ShowMessage: (args) => {
      const severity = (["info", "warning", "error"].includes(String(args.severity)) ? args.severity : "info") as Severity;
      toast(parts.toasts, String(args.text), severity);
      return { shown: true, severity };
    },
    SetTheme: (args) => {
      const before = parts.theme();
      const after: Theme = args.theme === "dark" ? "dark" : "light";
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
        undo: { tool: "SetNotes", arguments: { text: before }, label: "restore the notes" },
      };
    },
  };
}

/** GetUserInput: a small form in `container`, until the person answers or the call is aborted. */
function ask(container: HTMLElement, id: string, question: string, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const input = el("input", { id: `answer-${id}`, name: "answer", autocomplete: "off", required: "" });
    const form = el(
      "form",
      { class: "question", "data-request": id },
      el("label", { for: `answer-${id}` }, question),
      el("div", { class: "row" }, input, el("button", { type: "submit" }, "Answer")),
    );
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      form.remove();
      resolve((input as HTMLInputElement).value);
    });
    signal.addEventListener("abort", () => {
      form.remove();
      reject(new Error("the question was withdrawn"));
    });
    container.append(form);
  });
}
