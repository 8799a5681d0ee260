/**
 * Every message of the protocol as a typed object, and the `Envelope` it travels in
 * (docs/protocol.md, "Message types").
 *
 * Messages are plain objects told apart by their numeric `type` (a discriminated union):
 * `switch (message.type) { case MessageType.TOOL_USE_REQUEST: ... }`. Fields have their wire
 * names; `bodies` reads and writes them.
 *
 * @module
 */

import { MessageType, type WireMap } from "./wire.js";

/** Stanza ids are int32 on the wire. */
export const STANZA_MAX = 2 ** 31 - 1;
/** The protocol's default deadline of a ToolUseRequest. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** Who runs a requested tool: the server, the client, or whichever can (it runs once). */
export type Execution = "server" | "client" | "either";
/** How far a consent answer reaches: this call, or every call of the tool in the thread. */
export type ConsentScope = "once" | "thread";
/** The states a `RunStatus` reports. */
export type RunState = "queued" | "started" | "finished" | "failed";

// -- what client tools are made of (docs/client-tools.md) ----------------------------------------

/** A JSON Schema (the protocol only carries it; the server checks it when groups are registered). */
export type JsonSchema = { [key: string]: unknown };

/** A tool the client executes; the model calls it like any other tool. */
export interface ClientTool {
  name: string;
  description?: string;
  /** JSON Schema of the arguments, root `"type": "object"`. */
  parametersSchema?: JsonSchema;
  /** Every call asks the user for consent first. */
  requiresPermission?: boolean;
}

/** A workflow over tools of its group, offered to the model as one container. */
export interface ClientSkill {
  name: string;
  description?: string;
  functionResult?: string | null;
  systemPrompt?: string | null;
  /** Names of tools of the same group (or `{name}` objects). */
  references?: (string | { name: string })[];
}

/** A named set of client tools and skills, collapsed behind one container by default. */
export interface ClientToolGroup {
  name: string;
  description?: string;
  tools?: ClientTool[];
  skills?: ClientSkill[];
  functionResult?: string | null;
  systemPrompt?: string | null;
  /** Offer the group as one container until the model expands it (default true). */
  startCollapsed?: boolean;
}

/** Changes a tool response makes to the thread's client tools. */
export interface Augmentation {
  injectToolGroups?: ClientToolGroup[];
  removeToolGroups?: string[];
  expandToolGroups?: string[];
  collapseToolGroups?: string[];
  hideTools?: string[];
  showTools?: string[];
  addContext?: { key: string; value: string }[];
}

/** One item of a client tool's result. */
export type ContentItem =
  | { type: "text"; text: string }
  | { type: "json"; value: unknown }
  | { type: "binary"; mimeType: string; data: Uint8Array; filename?: string };

// -- the messages ----------------------------------------------------------------------------

/** A protocol or system failure (type 1). Tool failures are ToolUseResults, never this. */
export interface ErrorMessage {
  type: typeof MessageType.ERROR;
  id: string;
  code: number;
  message: string;
  /** 0 info, 1 warning, 2 error (default), 3 critical. */
  severity?: number;
  /** False when the sender closes the connection after this message (default true). */
  recoverable?: boolean;
  originatingId?: number | string;
}

/** What the user said (type 2, client → server). */
export interface UserMessage {
  type: typeof MessageType.USER_MESSAGE;
  id: string;
  content: string;
  previousId?: string;
}

/** A complete, non-streamed answer (type 3, server → client). */
export interface AssistantMessage {
  type: typeof MessageType.ASSISTANT_MESSAGE;
  id: string;
  content: string;
  previousId?: string;
}

/** The server asks for one tool call (type 6, server → client). */
export interface ToolUseRequest {
  type: typeof MessageType.TOOL_USE_REQUEST;
  /** The request id; the result's `id` repeats it. */
  id: string;
  toolName: string;
  /** The call's arguments: the wire's `parameters`. */
  arguments: WireMap;
  /** `"client"`: run it and answer; `"server"`: shown for transparency, never answered. */
  execution: Execution;
  /** Default 30000. */
  timeoutMs?: number;
  callId?: string;
  description?: string;
  /** The call's ToolMode: `read`, `safe_write`, `external`, `destructive`, `local`. */
  mode?: string;
}

/** The outcome of one ToolUseRequest (type 7, both ways). */
export interface ToolUseResult {
  type: typeof MessageType.TOOL_USE_RESULT;
  /** The id of the ToolUseRequest this answers. */
  id: string;
  success: boolean;
  /** On success; a value that is not a map travels as `{"value": ...}`. */
  result?: WireMap;
  errorCode?: string;
  errorMessage?: string;
  /** The outcome type 0–4, only when `errorCode` does not imply it. */
  resultType?: number;
  /** Only when it differs from the default (false on success, true on failure). */
  needsFollowup?: boolean;
  terminal?: boolean;
  message?: string;
  content?: ContentItem[];
  augmentation?: Augmentation;
}

/** The receiver processed every stanza of its peer up to this one (type 8, both ways). */
export interface Acknowledgement {
  type: typeof MessageType.ACKNOWLEDGEMENT;
  /** The peer's stanza id, signed as sent; cumulative. 0 acknowledges nothing. */
  acknowledgedStanzaId: number;
}

/** Stop the current answer or operation (type 10, client → server). */
export interface ControlStop {
  type: typeof MessageType.CONTROL_STOP;
  runId?: string;
  reason?: string;
}

/** The handshake (type 12): the client's opens a connection, the server's answers it. */
export interface Configuration {
  type: typeof MessageType.CONFIGURATION;
  /** Client: the conversation to resume, "" for a new one. Server: the conversation bound. */
  conversationId?: string;
  /** The absolute value of the last stanza the sender processed from its peer. */
  lastSequenceSeen?: number;
  clientVersion?: string;
  device?: string;
  features?: string[];
}

/** A streamed answer begins (type 13, server → client). */
export interface StartAnswer {
  type: typeof MessageType.START_ANSWER;
  messageId: string;
  previousId?: string;
}

/** One streamed piece of an answer (type 16, server → client). */
export interface AssistantSentence {
  type: typeof MessageType.ASSISTANT_SENTENCE;
  messageId: string;
  /** Position in the answer, from 0. */
  sequence: number;
  text: string;
  isFinal?: boolean;
}

/** Register the client's tool groups for the conversation (type 100, client → server). */
export interface RegisterTools {
  type: typeof MessageType.REGISTER_TOOLS;
  groups: ClientToolGroup[];
  expandedContainers?: string[];
  resetClientState?: boolean;
}

/** Whether a RegisterTools was applied (type 101, server → client); all or nothing. */
export interface RegisterToolsResult {
  type: typeof MessageType.REGISTER_TOOLS_RESULT;
  ok: boolean;
  error?: string;
  group?: string;
  tool?: string;
}

/** May this call run? (type 102, server → client); answered by a ConsentAnswer with the same `id`. */
export interface ConsentRequest {
  type: typeof MessageType.CONSENT_REQUEST;
  id: string;
  callId: string;
  toolName: string;
  mode: string;
  reason?: string;
  arguments?: WireMap;
  description?: string;
  /** Whether a `"thread"` answer is honoured (default true). */
  allowAlways?: boolean;
}

/** The person's answer to a ConsentRequest (type 103, client → server). */
export interface ConsentAnswer {
  type: typeof MessageType.CONSENT_ANSWER;
  id: string;
  allow: boolean;
  /** Default `"once"`. */
  scope?: ConsentScope;
  reason?: string;
}

/** An agent run started or ended (type 104, server → client). */
export interface RunStatus {
  type: typeof MessageType.RUN_STATUS;
  runId: string;
  status: RunState;
  /** How a finished run ended: `answer`, `terminal_result`, `terminate`, `limit`, `canceled`. */
  reason?: string;
  detail?: string;
  output?: string;
  /**
   * The `id` of the UserMessage the run answers (absent for a run resumed after a restart); the
   * run's StartAnswer and AssistantMessage name it as `previousId` too.
   */
  messageId?: string;
  /** A `queued` run's place in the server's queue: 1 is the next to start. */
  position?: number;
}

/**
 * The server settled a client call without the client's result (type 105, server → client): its
 * deadline passed (`timeout`), the run was stopped (`canceled`), the client was gone past the
 * reconnect grace period (`client_disconnected`). Stop the work and send no result: one sent
 * anyway is refused (302).
 */
export interface ToolUseCancel {
  type: typeof MessageType.TOOL_USE_CANCEL;
  /** The ToolUseRequest's `id`. */
  id: string;
  /** How the server settled the call: a wire code (`timeout`, `canceled`, `client_disconnected`, ...). */
  code: string;
  /** Why, in words. */
  reason?: string;
}

/** Any message body; tell them apart by `message.type`. */
export type Message =
  | ErrorMessage
  | UserMessage
  | AssistantMessage
  | ToolUseRequest
  | ToolUseResult
  | Acknowledgement
  | ControlStop
  | Configuration
  | StartAnswer
  | AssistantSentence
  | RegisterTools
  | RegisterToolsResult
  | ConsentRequest
  | ConsentAnswer
  | RunStatus
  | ToolUseCancel;

/** One message on the wire, with its place in the conversation. */
export interface Envelope<M extends Message = Message> {
  /** Client messages count 1, 2, 3…, server messages -1, -2, -3…; 0 for unnumbered frames. */
  stanzaId: number;
  conversationId: string;
  message: M;
  /** Free metadata: `timestamp`, `clientVersion`, `messaging.trace_id`, `messaging.span_id`. */
  meta: WireMap;
}

/** The types whose body repeats the envelope's `conversationId` as its second key. */
export const CONVERSATION_IN_BODY: ReadonlySet<number> = new Set([
  MessageType.ERROR,
  MessageType.USER_MESSAGE,
  MessageType.ASSISTANT_MESSAGE,
  MessageType.ACKNOWLEDGEMENT,
  MessageType.START_ANSWER,
]);
