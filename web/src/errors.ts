/**
 * Errors, and the ErrorMessage codes of the protocol (docs/protocol.md, "ErrorMessage codes").
 *
 * ```
 * ToolwireError
 * ├── UsageError          a programming mistake: wrong role, sending before a conversation, ...
 * ├── ProtocolError       a frame or message was refused; carries the ErrorMessage code
 * ├── ConnectionClosed    the connection ended for good: refused, closed, or reconnecting gave up
 * ├── RegistrationError   the server (or this client) refused the tool groups
 * ├── RunFailed           the server refused the message, or the run it started failed
 * └── ToolError           thrown by a tool handler: a failure with its own code
 * ```
 *
 * @module
 */

/** The `code` of an ErrorMessage (type 1), as `toolwire.protocol.ErrorCode` numbers them. */
export const ErrorCode = {
  /** Not MessagePack, or outside the subset toolwire accepts (no extension types, string keys). */
  MALFORMED_FRAME: 101,
  /** A message type this version does not know; the frame was skipped. */
  UNKNOWN_TYPE: 102,
  /** The first message of a connection must be a Configuration. */
  HANDSHAKE_REQUIRED: 103,
  /** The frame exceeds `Limits.maxFrameBytes`. */
  FRAME_TOO_LARGE: 104,
  /** An envelope or body field is missing or has the wrong type or value. */
  INVALID_MESSAGE: 105,
  /** A length, count or depth limit of `Limits` was exceeded. */
  LIMIT_EXCEEDED: 106,
  /** A live connection stays on its conversation (or a frame named another conversation). */
  CONVERSATION_SWITCH_REFUSED: 107,
  /** The server refused too many frames of this principal's connections; it closes the connection. */
  TOO_MANY_REFUSALS: 108,
  /** The conversation to resume does not exist (any more). */
  CONVERSATION_NOT_FOUND: 201,
  /** The conversation belongs to another principal. */
  CONVERSATION_FORBIDDEN: 202,
  /** The principal has as many conversations as the server allows. */
  CONVERSATION_LIMIT: 203,
  /** The named tool is not registered. */
  TOOL_NOT_FOUND: 301,
  /** A ToolUseResult the server does not take: unknown, foreign, answered, or its call was settled without it. */
  RESULT_REFUSED: 302,
  /** A tool did not answer within its deadline. */
  TOOL_TIMEOUT: 304,
  /** No valid credentials were presented. */
  UNAUTHENTICATED: 401,
  /** The credentials do not allow this operation. */
  FORBIDDEN: 403,
  /** The server failed; details stay in its logs. */
  INTERNAL: 501,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** The `severity` of an ErrorMessage. */
export const Severity = { INFO: 0, WARNING: 1, ERROR: 2, CRITICAL: 3 } as const;
export type Severity = (typeof Severity)[keyof typeof Severity];

const NOT_RECOVERABLE: ReadonlySet<number> = new Set([
  ErrorCode.HANDSHAKE_REQUIRED,
  ErrorCode.CONVERSATION_NOT_FOUND,
  ErrorCode.CONVERSATION_FORBIDDEN,
  ErrorCode.UNAUTHENTICATED,
  ErrorCode.FORBIDDEN,
]);

/** Tell whether a connection survives an error of this code unless said otherwise. */
export function defaultRecoverable(code: number): boolean {
  return !NOT_RECOVERABLE.has(code);
}

/** The root of every error this library throws. */
export class ToolwireError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** A programming mistake: the message says what to call instead. */
export class UsageError extends ToolwireError {}

/** A frame or message was refused; a `Connection` answers it with an ErrorMessage of this code. */
export class ProtocolError extends ToolwireError {
  /** An `ErrorCode` (any number in the documented ranges). */
  readonly code: number;
  /** What was wrong, naming the field; sent to the peer. */
  readonly detail: string;
  /** Whether the connection continues (by default from the code). */
  recoverable: boolean;
  /** The stanza id of the refused frame, when it could be read. */
  readonly originatingId: number | string | undefined;

  constructor(code: number, detail: string, recoverable?: boolean, originatingId?: number | string) {
    super(`[${code}] ${detail}`);
    this.code = code;
    this.detail = detail;
    this.recoverable = recoverable ?? defaultRecoverable(code);
    this.originatingId = originatingId;
  }

  /** WARNING for an unknown type, ERROR for what a connection survives, CRITICAL otherwise. */
  get severity(): Severity {
    if (this.code === ErrorCode.UNKNOWN_TYPE) return Severity.WARNING;
    return this.recoverable ? Severity.ERROR : Severity.CRITICAL;
  }
}

/** The connection ended for good: the server refused it, it was closed, or reconnecting gave up. */
export class ConnectionClosed extends ToolwireError {
  /** The ErrorMessage code when the server gave one (201 no such conversation, ...). */
  readonly code: number | undefined;

  constructor(message: string, code?: number) {
    super(message);
    this.code = code;
  }
}

/** The tool groups were refused; names the group and the tool the refusal is about. */
export class RegistrationError extends ToolwireError {
  readonly group: string | undefined;
  readonly tool: string | undefined;

  constructor(message: string, group?: string, tool?: string) {
    super(message);
    this.group = group;
    this.tool = tool;
  }
}

/** The server refused the message (e.g. a run is in progress), or the run it started failed. */
export class RunFailed extends ToolwireError {
  readonly runId: string | undefined;
  /** The ErrorMessage code of a refused message: 105 (a run is in progress), 503 (the server is busy: send it again later). */
  readonly code: number | undefined;

  constructor(message: string, runId?: string, code?: number) {
    super(message);
    this.runId = runId;
    this.code = code;
  }
}

/** Options of a `ToolError`. */
export interface ToolErrorOptions {
  /** The wire `errorCode`: `execution_error` by default, or a tool's own (`not_found`, `rate_limited`). */
  code?: string;
  /** The run ends after this call's batch. */
  terminal?: boolean;
  /** False: the failure ends the run instead of letting the model react (default true). */
  needsFollowup?: boolean;
}

/** Thrown by a tool handler to fail with a code of its own; any other exception is `execution_error`. */
export class ToolError extends ToolwireError {
  readonly code: string;
  readonly terminal: boolean;
  readonly needsFollowup: boolean;

  constructor(message: string, options: ToolErrorOptions = {}) {
    super(message);
    this.code = options.code ?? "execution_error";
    this.terminal = options.terminal ?? false;
    this.needsFollowup = options.needsFollowup ?? true;
  }
}
