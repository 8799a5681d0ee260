/**
 * Reading and writing message bodies (docs/protocol.md, "Message types").
 *
 * `toBody()` writes a body's fields in the documented order, leaving out optional fields that are
 * not set, so that a message always encodes to the same bytes as toolwire's Python `encode()`;
 * `parseBody()` reads one, throwing `ProtocolError` 105 for a bad field, filling the defaults, and
 * accepting the spellings of the deployed dialect (`requestId`, `arguments`, a textual `code`,
 * `features` as a map, a failure's `error` text, `lastSeenStanzaId`, an empty Acknowledgement). Maps the protocol does not look into (groups, content items,
 * augmentation) are kept as received, key order included.
 *
 * @module
 */

import { ErrorCode, ProtocolError, Severity } from "./errors.js";
import {
  type Augmentation,
  type ClientToolGroup,
  type Configuration,
  type ConsentScope,
  type ContentItem,
  CONVERSATION_IN_BODY,
  DEFAULT_TIMEOUT_MS,
  type Envelope,
  type ErrorMessage,
  type Execution,
  type Message,
  type RunState,
  STANZA_MAX,
  type ToolUseRequest,
  type ToolUseResult,
} from "./messages.js";
import { Fields, isMap, MessageType, own, type WireMap, type WireValue } from "./wire.js";

const EXECUTIONS: readonly Execution[] = ["server", "client", "either"];
const SCOPES: readonly ConsentScope[] = ["once", "thread"];
const RUN_STATES: readonly RunState[] = ["queued", "started", "finished", "failed"];
const RESULT_TYPES = 5; // Success, Error, Canceled, Timeout, Denied

// -- writing ---------------------------------------------------------------------------------

function set(entries: [string, unknown][]): WireMap {
  const body: Record<string, unknown> = {};
  for (const [key, value] of entries) {
    if (value !== undefined && value !== null) body[key] = value;
  }
  return body as WireMap;
}

/** Return the wire body of a message: fields in the documented order, unset optional ones left out. */
export function toBody(message: Message): WireMap {
  switch (message.type) {
    case MessageType.ERROR:
      return set([
        ["id", message.id],
        ["code", message.code],
        ["message", message.message],
        ["severity", message.severity ?? Severity.ERROR],
        ["recoverable", message.recoverable ?? true],
        ["originatingId", message.originatingId],
      ]);
    case MessageType.USER_MESSAGE:
    case MessageType.ASSISTANT_MESSAGE:
      return set([
        ["id", message.id],
        ["content", message.content],
        ["previousId", message.previousId],
      ]);
    case MessageType.TOOL_USE_REQUEST:
      return set([
        ["id", message.id],
        ["toolName", message.toolName],
        ["parameters", message.arguments],
        ["execution", message.execution],
        ["timeoutMs", message.timeoutMs ?? DEFAULT_TIMEOUT_MS],
        ["callId", message.callId],
        ["description", message.description],
        ["mode", message.mode],
      ]);
    case MessageType.TOOL_USE_RESULT:
      return set([
        ["id", message.id],
        ["success", message.success],
        ["result", message.result],
        ["errorCode", message.errorCode],
        ["errorMessage", message.errorMessage],
        ["resultType", message.resultType],
        ["needsFollowup", message.needsFollowup],
        ["terminal", message.terminal ? true : undefined],
        ["message", message.message],
        ["content", message.content?.length ? message.content : undefined],
        ["augmentation", message.augmentation],
      ]);
    case MessageType.ACKNOWLEDGEMENT:
      return { acknowledgedStanzaId: message.acknowledgedStanzaId };
    case MessageType.CONTROL_STOP:
      return set([
        ["runId", message.runId],
        ["reason", message.reason],
      ]);
    case MessageType.CONFIGURATION:
      return set([
        ["conversationId", message.conversationId ?? ""],
        ["lastSequenceSeen", message.lastSequenceSeen ?? 0],
        ["clientVersion", message.clientVersion],
        ["device", message.device],
        ["features", message.features ?? []],
      ]);
    case MessageType.START_ANSWER:
      return set([
        ["messageId", message.messageId],
        ["previousId", message.previousId],
      ]);
    case MessageType.ASSISTANT_SENTENCE:
      return set([
        ["messageId", message.messageId],
        ["sequence", message.sequence],
        ["text", message.text],
        ["isFinal", message.isFinal ?? false],
      ]);
    case MessageType.REGISTER_TOOLS:
      return set([
        ["groups", message.groups],
        ["expandedContainers", message.expandedContainers ?? []],
        ["resetClientState", message.resetClientState ?? false],
      ]);
    case MessageType.REGISTER_TOOLS_RESULT:
      return set([
        ["ok", message.ok],
        ["error", message.error],
        ["group", message.group],
        ["tool", message.tool],
      ]);
    case MessageType.CONSENT_REQUEST:
      return set([
        ["id", message.id],
        ["callId", message.callId],
        ["toolName", message.toolName],
        ["mode", message.mode],
        ["reason", message.reason ?? ""],
        ["arguments", message.arguments ?? {}],
        ["description", message.description ?? ""],
        ["allowAlways", message.allowAlways ?? true],
      ]);
    case MessageType.CONSENT_ANSWER:
      return set([
        ["id", message.id],
        ["allow", message.allow],
        ["scope", message.scope ?? "once"],
        ["reason", message.reason],
      ]);
    case MessageType.RUN_STATUS:
      return set([
        ["runId", message.runId],
        ["status", message.status],
        ["reason", message.reason],
        ["detail", message.detail],
        ["output", message.output],
        ["messageId", message.messageId],
        ["position", message.position],
      ]);
    case MessageType.TOOL_USE_CANCEL:
      return set([
        ["id", message.id],
        ["code", message.code],
        ["reason", message.reason],
      ]);
    default:
      return unreachable(message);
  }
}

/** Return the wire map `{stanzaId, conversationId, type, meta?, body}` of an envelope. */
export function envelopeToMap(envelope: Envelope): WireMap {
  let body = toBody(envelope.message);
  if (CONVERSATION_IN_BODY.has(envelope.message.type)) {
    const [first, ...rest] = Object.entries(body);
    body = Object.fromEntries([
      ...(first ? [first] : []),
      ["conversationId", envelope.conversationId],
      ...rest,
    ]) as WireMap;
  }
  const wire: Record<string, WireValue> = {
    stanzaId: envelope.stanzaId,
    conversationId: envelope.conversationId,
    type: envelope.message.type,
  };
  if (Object.keys(envelope.meta).length > 0) wire["meta"] = envelope.meta;
  wire["body"] = body;
  return wire;
}

// -- reading ---------------------------------------------------------------------------------

/**
 * Read the body of a message of numeric type `type`.
 *
 * @throws ProtocolError 102 for a type this version does not know, 105 for a bad field.
 */
export function parseBody(type: number, body: WireMap): Message {
  switch (type) {
    case MessageType.ERROR:
      return errorMessage(body);
    case MessageType.USER_MESSAGE:
    case MessageType.ASSISTANT_MESSAGE: {
      const fields = new Fields(body, type === MessageType.USER_MESSAGE ? "UserMessage" : "AssistantMessage");
      return optional({
        type,
        id: fields.text("id", true),
        content: fields.text("content"),
        previousId: fields.optionalText("previousId"),
      });
    }
    case MessageType.TOOL_USE_REQUEST:
      return toolUseRequest(body);
    case MessageType.TOOL_USE_RESULT:
      return toolUseResult(body);
    case MessageType.ACKNOWLEDGEMENT: {
      const fields = new Fields(body, "Acknowledgement");
      const bounds = { low: -STANZA_MAX, high: STANZA_MAX };
      // A dialect says `lastSeenStanzaId`; a body naming no stanza acknowledges nothing (0).
      const key = fields.has("lastSeenStanzaId") && !fields.has("acknowledgedStanzaId") ? "lastSeenStanzaId" : "acknowledgedStanzaId";
      return { type, acknowledgedStanzaId: fields.integer(key, 0, bounds) };
    }
    case MessageType.CONTROL_STOP: {
      const fields = new Fields(body, "ControlStop");
      return optional({ type, runId: fields.optionalText("runId"), reason: fields.optionalText("reason") });
    }
    case MessageType.CONFIGURATION:
      return configuration(body);
    case MessageType.START_ANSWER: {
      const fields = new Fields(body, "StartAnswer");
      return optional({ type, messageId: fields.text("messageId", true), previousId: fields.optionalText("previousId") });
    }
    case MessageType.ASSISTANT_SENTENCE: {
      const fields = new Fields(body, "AssistantSentence");
      return {
        type,
        messageId: fields.text("messageId", true),
        sequence: fields.integer("sequence", undefined, { low: 0 }),
        text: fields.text("text"),
        isFinal: fields.flag("isFinal", false),
      };
    }
    case MessageType.REGISTER_TOOLS: {
      const fields = new Fields(body, "RegisterTools");
      return {
        type,
        groups: fields.mappings("groups") as unknown as ClientToolGroup[],
        expandedContainers: fields.texts("expandedContainers"),
        resetClientState: fields.flag("resetClientState", false),
      };
    }
    case MessageType.REGISTER_TOOLS_RESULT: {
      const fields = new Fields(body, "RegisterToolsResult");
      return optional({
        type,
        ok: fields.flag("ok"),
        error: fields.optionalText("error"),
        group: fields.optionalText("group"),
        tool: fields.optionalText("tool"),
      });
    }
    case MessageType.CONSENT_REQUEST: {
      const fields = new Fields(body, "ConsentRequest");
      return {
        type,
        id: fields.text("id", true),
        callId: fields.text("callId", true),
        toolName: fields.text("toolName", true),
        mode: fields.text("mode"),
        reason: fields.textOr("reason", ""),
        arguments: fields.mapping("arguments", {}),
        description: fields.textOr("description", ""),
        allowAlways: fields.flag("allowAlways", true),
      };
    }
    case MessageType.CONSENT_ANSWER: {
      const fields = new Fields(body, "ConsentAnswer");
      return optional({
        type,
        id: fields.text("id", true),
        allow: fields.flag("allow"),
        scope: fields.choice("scope", SCOPES, "once"),
        reason: fields.optionalText("reason"),
      });
    }
    case MessageType.RUN_STATUS: {
      const fields = new Fields(body, "RunStatus");
      return optional({
        type,
        runId: fields.text("runId", true),
        status: fields.choice("status", RUN_STATES),
        reason: fields.optionalText("reason"),
        detail: fields.optionalText("detail"),
        output: fields.optionalText("output"),
        messageId: fields.optionalText("messageId"),
        position: fields.optionalInteger("position", { low: 1 }),
      });
    }
    case MessageType.TOOL_USE_CANCEL: {
      const fields = new Fields(body, "ToolUseCancel");
      return optional({
        type,
        id: fields.text("id", true),
        code: fields.text("code"),
        reason: fields.optionalText("reason"),
      });
    }
    default:
      throw new ProtocolError(ErrorCode.UNKNOWN_TYPE, `unknown message type ${type}; the message was skipped`);
  }
}

function errorMessage(body: WireMap): ErrorMessage {
  const fields = new Fields(body, "ErrorMessage");
  let message = fields.textOr("message", "");
  let code = fields.get("code");
  if (typeof code === "string") {
    // Another dialect's textual code: keep its text in the message, as its number is unknown.
    if (/^[0-9]{1,5}$/.test(code)) {
      code = Number(code);
    } else {
      message = `${code}: ${message}`;
      code = 0;
    }
  }
  const origin = fields.get("originatingId");
  if (origin !== undefined && typeof origin !== "string" && !(typeof origin === "number" && Number.isInteger(origin))) {
    throw fields.refuse("originatingId", "an integer or a string", origin);
  }
  return optional({
    type: MessageType.ERROR,
    id: fields.textOr("id", ""),
    code: new Fields({ code }, "ErrorMessage").integer("code", undefined, { low: 0, high: 65535 }),
    message,
    severity: fields.integer("severity", Severity.ERROR, { low: 0, high: 3 }),
    recoverable: fields.flag("recoverable", true),
    originatingId: origin as number | string | undefined,
  });
}

function toolUseRequest(body: WireMap): ToolUseRequest {
  const fields = new Fields(body, "ToolUseRequest");
  // A dialect names the arguments `arguments` (and adds a `messageId`, ignored).
  const key = fields.has("parameters") || !fields.has("arguments") ? "parameters" : "arguments";
  return optional({
    type: MessageType.TOOL_USE_REQUEST,
    id: fields.text("id", true),
    toolName: fields.text("toolName", true),
    arguments: fields.mapping(key),
    execution: fields.choice("execution", EXECUTIONS),
    timeoutMs: fields.integer("timeoutMs", DEFAULT_TIMEOUT_MS, { low: 1, high: STANZA_MAX }),
    callId: fields.optionalText("callId"),
    description: fields.optionalText("description"),
    mode: fields.optionalText("mode"),
  });
}

function toolUseResult(body: WireMap): ToolUseResult {
  const fields = new Fields(body, "ToolUseResult");
  const success = fields.flag("success");
  const resultType = fields.optionalInteger("resultType", { low: 0, high: RESULT_TYPES - 1 });
  if (resultType !== undefined && (resultType === 0) !== success) {
    const message = `ToolUseResult.resultType ${resultType} contradicts success=${success}`;
    throw new ProtocolError(ErrorCode.INVALID_MESSAGE, message);
  }
  const content = fields.mappings("content");
  content.forEach((item, index) => checkItem(new Fields(item, `ToolUseResult.content[${index}]`), item));
  return optional({
    type: MessageType.TOOL_USE_RESULT,
    // A dialect names the request `requestId`; it wins when present.
    id: fields.text(fields.has("requestId") ? "requestId" : "id", true),
    success,
    result: fields.optionalMapping("result"),
    errorCode: fields.optionalText("errorCode"),
    errorMessage: errorText(fields, success),
    resultType,
    needsFollowup: fields.optionalFlag("needsFollowup"),
    terminal: fields.flag("terminal", false),
    message: fields.optionalText("message"),
    content: content as unknown as ContentItem[],
    augmentation: fields.optionalMapping("augmentation") as Augmentation | undefined,
  });
}

/** `errorMessage`, or on a failure without one the `error` text a dialect sends instead. */
function errorText(fields: Fields, success: boolean): string | undefined {
  const message = fields.optionalText("errorMessage");
  const error = fields.get("error");
  return message === undefined && !success && typeof error === "string" ? error : message;
}

function checkItem(fields: Fields, item: WireMap): void {
  switch (fields.choice("type", ["text", "json", "binary"] as const)) {
    case "text":
      fields.text("text");
      return;
    case "json":
      if (!Object.prototype.hasOwnProperty.call(item, "value")) throw fields.refuse("value", "present (any value)", undefined);
      return;
    case "binary": {
      fields.text("mimeType", true);
      const data = fields.get("data");
      if (!(data instanceof Uint8Array)) throw fields.refuse("data", "binary (MessagePack bin)", data);
      fields.optionalText("filename");
      return;
    }
  }
}

function configuration(body: WireMap): Configuration {
  const fields = new Fields(body, "Configuration");
  const features = fields.get("features");
  let chosen: string[];
  if (isMap(features)) {
    // A map of feature name → true is accepted too.
    chosen = Object.keys(features).filter((name) => own(features, name) === true);
  } else {
    chosen = fields.texts("features");
  }
  return optional({
    type: MessageType.CONFIGURATION,
    conversationId: fields.textOr("conversationId", ""),
    lastSequenceSeen: fields.integer("lastSequenceSeen", 0, { low: 0, high: STANZA_MAX }),
    clientVersion: fields.optionalText("clientVersion"),
    device: fields.optionalText("device"),
    features: chosen,
  });
}

/** Drop the keys whose value is undefined, so that decoded messages hold only what was set. */
function optional<T extends object>(message: T): T {
  for (const key of Object.keys(message) as (keyof T)[]) {
    if (message[key] === undefined) delete message[key];
  }
  return message;
}

function unreachable(value: never): never {
  throw new Error(`unexpected message ${JSON.stringify(value)}`);
}
