/**
 * Consent prompts: the application's handler decides, and its decision becomes a ConsentAnswer.
 *
 * A handler gets the `ConsentRequest` (`toolName`, `arguments`, `mode`, `reason`, `description`,
 * `allowAlways`) and returns (or resolves to) one of:
 *
 * | returns | answer |
 * |---|---|
 * | `true` / `false` | allow / deny this call |
 * | `{allow, scope?, reason?}` | `scope` `"once"` (default) or `"thread"` (every call of this tool in the thread) |
 *
 * A denial without a reason says "the user said no"; a `"thread"` scope becomes `"once"` when the
 * request does not allow it. Without a handler every call is denied ("no consent handler in this
 * client"); a handler that throws or returns something else denies, and says why.
 *
 * @module
 */

import type { ConsentAnswer, ConsentRequest, ConsentScope } from "./messages.js";
import { MessageType } from "./wire.js";

/** A decision about one consent request. */
export interface ConsentDecision {
  allow: boolean;
  /** `"once"` (default): this call; `"thread"`: every call of this tool in the conversation. */
  scope?: ConsentScope;
  /** Why the person refused; shown to the model. */
  reason?: string;
}

/** Asks the person whether a call may run (a dialog, a prompt). */
export type ConsentHandler = (request: ConsentRequest) => boolean | ConsentDecision | Promise<boolean | ConsentDecision>;

/** The reason of the denials a client without a consent handler sends. */
export const NO_HANDLER = "no consent handler in this client";

/** Ask `handler` about `request`; never rejects. */
export async function decide(handler: ConsentHandler | undefined, request: ConsentRequest): Promise<ConsentAnswer> {
  const answer = (allow: boolean, scope: ConsentScope = "once", reason?: string): ConsentAnswer => ({
    type: MessageType.CONSENT_ANSWER,
    id: request.id,
    allow,
    scope,
    ...(reason !== undefined && { reason }),
  });
  if (handler === undefined) return answer(false, "once", NO_HANDLER);
  let value: unknown;
  try {
    value = await handler(request);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return answer(false, "once", `the consent handler failed: ${message}`);
  }
  let decision: ConsentDecision;
  if (typeof value === "boolean") {
    decision = { allow: value };
  } else if (typeof value === "object" && value !== null && typeof (value as ConsentDecision).allow === "boolean") {
    decision = value as ConsentDecision;
  } else {
    const got = value === null ? "null" : typeof value;
    return answer(false, "once", `the consent handler returned ${got}, not a boolean or {allow, scope, reason}`);
  }
  let scope: ConsentScope = decision.scope === "thread" ? "thread" : "once";
  if (decision.allow && scope === "thread" && request.allowAlways === false) scope = "once"; // not honoured
  const reason = !decision.allow && !decision.reason ? "the user said no" : decision.reason;
  return answer(decision.allow, scope, reason);
}
