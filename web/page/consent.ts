/**
 * The consent dialog: a modal `<dialog>` asking whether one call may run. Allow once, always for
 * this conversation (when the server honours it), or deny with a reason. Keyboard: the focus
 * starts on Deny and stays in the dialog (Tab and Shift+Tab wrap); Escape, and Enter in the
 * reason field, deny.
 *
 * Prompts that arrive while one is open wait their turn.
 *
 * @module
 */

import type { ConsentDecision, ConsentRequest } from "../src/index.js";
import { jsonText } from "./timeline.js";

interface Pending {
  request: ConsentRequest;
  resolve(decision: ConsentDecision): void;
}

const FOCUSABLE = "button:not([disabled]):not([hidden]), input:not([disabled]), [href], [tabindex]:not([tabindex='-1'])";

export class ConsentDialog {
  private readonly queue: Pending[] = [];
  private current: Pending | undefined;
  private readonly form: HTMLFormElement;
  private readonly reason: HTMLInputElement;
  private readonly always: HTMLButtonElement;

  constructor(private readonly dialog: HTMLDialogElement) {
    this.form = dialog.querySelector("form")!;
    this.reason = dialog.querySelector<HTMLInputElement>("#consent-reason")!;
    this.always = dialog.querySelector<HTMLButtonElement>("button[value='thread']")!;
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      const choice = (event.submitter as HTMLButtonElement | null)?.value ?? "deny";
      this.finish(this.decision(choice));
    });
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault(); // Escape: deny, through the same path as the Deny button
      this.finish(this.decision("deny"));
    });
    dialog.addEventListener("keydown", (event) => this.trap(event));
    this.reason.addEventListener("keydown", (event) => {
      // Enter in the reason field denies (a form's implicit submission would press Allow once).
      if (event.key === "Enter" && !event.isComposing) {
        event.preventDefault();
        this.finish(this.decision("deny"));
      }
    });
  }

  /** Ask the person about `request`; resolves with their decision. */
  ask(request: ConsentRequest): Promise<ConsentDecision> {
    return new Promise((resolve) => {
      this.queue.push({ request, resolve });
      if (this.current === undefined) this.next();
    });
  }

  /**
   * Withdraw every prompt (the conversation was switched): its client is closed and sends no
   * answer; the prompts stay in its saved state and are asked again when it resumes.
   */
  clear(): void {
    const pending = [this.current, ...this.queue.splice(0)];
    this.current = undefined;
    if (this.dialog.open) this.dialog.close();
    for (const item of pending) item?.resolve({ allow: false, reason: "the conversation was switched" });
  }

  private decision(choice: string): ConsentDecision {
    if (choice === "once" || choice === "thread") return { allow: true, scope: choice };
    const reason = this.reason.value.trim();
    return { allow: false, ...(reason && { reason }) };
  }

  private next(): void {
    const pending = this.queue.shift();
    this.current = pending;
    if (pending === undefined) return;
    const { request } = pending;
    const text = (selector: string, value: string) => {
      this.dialog.querySelector(selector)!.textContent = value;
    };
    text("#consent-title", `Allow ${request.toolName}?`);
    text("#consent-description", request.description || "No description.");
    text("#consent-mode", request.mode);
    this.dialog.querySelector("#consent-mode")!.className = `badge mode mode-${request.mode}`;
    text("#consent-why", request.reason ?? "");
    text("#consent-arguments", jsonText(request.arguments ?? {}, 2000));
    this.always.hidden = request.allowAlways === false;
    this.reason.value = "";
    this.dialog.showModal();
    this.dialog.querySelector<HTMLButtonElement>("button[value='deny']")!.focus();
  }

  private finish(decision: ConsentDecision): void {
    const pending = this.current;
    if (pending === undefined) return;
    this.dialog.close();
    pending.resolve(decision);
    this.next();
  }

  private trap(event: KeyboardEvent): void {
    if (event.key !== "Tab") return;
    const items = Array.from(this.dialog.querySelectorAll<HTMLElement>(FOCUSABLE));
    const first = items[0];
    const last = items[items.length - 1];
    if (first === undefined || last === undefined) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  }
}
