/**
 * toolwire's TypeScript client: talk to `toolwire serve` from a browser (or node), run the
 * application's client tools, answer consent prompts, stream answers, resume after a reload.
 *
 * ```ts
 * import { connect, webStorage } from "/static/toolwire-client.js";
 *
 * const client = await connect("/ws", {
 *   token,
 *   groups: [{ name: "Page", tools: [{ name: "GetSelection", parametersSchema: { type: "object" } }] }],
 *   handlers: { GetSelection: () => window.getSelection()?.toString() ?? "" },
 *   onConsent: (request) => confirm(`Allow ${request.toolName}?`),
 *   onEvent: (event) => console.log(event),
 *   persist: webStorage(localStorage, "toolwire"),
 * });
 * for await (const event of client.send("What did I select?")) { ... }
 * ```
 *
 * | module | what |
 * |---|---|
 * | `client` | `connect()`, `ToolwireClient`: the socket, reconnect and resume, dispatch, `send()` / `ask()` |
 * | `tools` | `Handlers` (a request → its ToolUseResult), `ExecutionLedger`, `ToolResponse` |
 * | `requests` | `Requests`: each tool call and consent prompt answered once, across reloads |
 * | `consent` | consent handlers and their answers |
 * | `tracing` | `TraceExecution` (the `traceExecution` hook), `traceParent()`: the server's span named in an envelope's `meta` |
 * | `events` | `ClientEvent` (what `onEvent` gets), `Run` |
 * | `state` | `ClientState` (JSON, for `localStorage`), `webStorage()` |
 * | `transport` | `webSocketDialer()`, `memoryPair()` / `memoryDialer()` for tests, `socketUrl()`, `backoff()`, `refusal()` |
 * | `connection` | `Connection`: handshake, stanza ids, acknowledgements, duplicates, replay (sans-I/O) |
 * | `codec` | `encode`, `decode`, `Limits` (MessagePack with limits) |
 * | `messages` | every message type, `Envelope` |
 * | `bodies` | `parseBody`, `toBody`: messages to and from their wire maps |
 *
 * @module
 */

export { CLIENT_VERSION, connect, type ConnectOptions, FEATURES, type RegisterOptions, ToolwireClient, WHOLE_ANSWERS } from "./client.js";
export { envelopeToMap, parseBody, toBody } from "./bodies.js";
export { check, decode, DEFAULT_LIMITS, encode, Frame, type Limits, packValue, readFrame, unpackValue } from "./codec.js";
export { Connection, type ConnectionOptions, newId, type Received } from "./connection.js";
export { type ConsentDecision, type ConsentHandler, decide, NO_HANDLER } from "./consent.js";
export {
  ConnectionClosed,
  defaultRecoverable,
  ErrorCode,
  ProtocolError,
  RegistrationError,
  RunFailed,
  Severity,
  ToolError,
  type ToolErrorOptions,
  ToolwireError,
  UsageError,
} from "./errors.js";
export {
  type AnswerStartedEvent,
  type AnswerTextEvent,
  type AssistantMessageEvent,
  type ClientEvent,
  type ClientToolCallEvent,
  type ClientToolCanceledEvent,
  type ClientToolStartedEvent,
  type ConnectionEvent,
  type ConnectionState,
  type ConsentEvent,
  Run,
  type RunFailedEvent,
  streamEvent,
  type RunFinishedEvent,
  type ResultRefusedEvent,
  type RunQueuedEvent,
  type RunStartedEvent,
  type ServerErrorEvent,
  type ServerToolCallEvent,
  type ServerToolResultEvent,
  type WarningEvent,
} from "./events.js";
export {
  type Acknowledgement,
  type AssistantMessage,
  type AssistantSentence,
  type Augmentation,
  type ClientSkill,
  type ClientTool,
  type ClientToolGroup,
  type Configuration,
  type ConsentAnswer,
  type ConsentRequest,
  type ConsentScope,
  type ContentItem,
  type ControlStop,
  CONVERSATION_IN_BODY,
  DEFAULT_TIMEOUT_MS,
  type Envelope,
  type ErrorMessage,
  type Execution,
  type JsonSchema,
  type Message,
  type RegisterTools,
  type RegisterToolsResult,
  type RunState,
  type RunStatus,
  type StartAnswer,
  type ToolUseCancel,
  type ToolUseRequest,
  type ToolUseResult,
  type UserMessage,
} from "./messages.js";
export {
  fromBase64,
  type Role,
  type Sequencing,
  sequencingFromJSON,
  type SequencingJSON,
  sequencingToJSON,
  toBase64,
} from "./sequencing.js";
export { Requests, type RequestsIO } from "./requests.js";
export {
  CODE_RESULT_TYPES,
  DEFAULT_CODES,
  failure,
  type Outcome,
  outcomeOf,
  ResultType,
  resultTypeForCode,
  timeoutFailure,
} from "./results.js";
export { type ClientState, type StateStore, type StorageLike, webStorage } from "./state.js";
export { SPAN_ID, type TracedExecution, type TraceExecution, TRACE_ID, type TraceParent, traceParent } from "./tracing.js";
export {
  argumentProblems,
  type Execution as LedgerEntry,
  ExecutionLedger,
  Handlers,
  success,
  type ToolContext,
  type ToolHandler,
  type ToolHandlerSpec,
  ToolResponse,
  type ToolResponseInit,
  toWire,
  type Withdrawal,
} from "./tools.js";
export {
  backoff,
  type Dialer,
  MemoryEnd,
  memoryDialer,
  memoryPair,
  type ReconnectOptions,
  refusal,
  socketUrl,
  type Transport,
  type TransportEvents,
  type WebSocketClass,
  type WebSocketLike,
  webSocketDialer,
} from "./transport.js";
export { isMap, kind, MessageType, messageTypeName, type WireMap, type WireValue } from "./wire.js";
