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
export declare const ErrorCode: {
	/** Not MessagePack, or outside the subset toolwire accepts (no extension types, string keys). */
	readonly MALFORMED_FRAME: 101;
	/** A message type this version does not know; the frame was skipped. */
	readonly UNKNOWN_TYPE: 102;
	/** The first message of a connection must be a Configuration. */
	readonly HANDSHAKE_REQUIRED: 103;
	/** The frame exceeds `Limits.maxFrameBytes`. */
	readonly FRAME_TOO_LARGE: 104;
	/** An envelope or body field is missing or has the wrong type or value. */
	readonly INVALID_MESSAGE: 105;
	/** A length, count or depth limit of `Limits` was exceeded. */
	readonly LIMIT_EXCEEDED: 106;
	/** A live connection stays on its conversation (or a frame named another conversation). */
	readonly CONVERSATION_SWITCH_REFUSED: 107;
	/** The server refused too many frames of this principal's connections; it closes the connection. */
	readonly TOO_MANY_REFUSALS: 108;
	/** The conversation to resume does not exist (any more). */
	readonly CONVERSATION_NOT_FOUND: 201;
	/** The conversation belongs to another principal. */
	readonly CONVERSATION_FORBIDDEN: 202;
	/** The principal has as many conversations as the server allows. */
	readonly CONVERSATION_LIMIT: 203;
	/** The named tool is not registered. */
	readonly TOOL_NOT_FOUND: 301;
	/** A ToolUseResult the server does not take: unknown, foreign, answered, or its call was settled without it. */
	readonly RESULT_REFUSED: 302;
	/** A tool did not answer within its deadline. */
	readonly TOOL_TIMEOUT: 304;
	/** No valid credentials were presented. */
	readonly UNAUTHENTICATED: 401;
	/** The credentials do not allow this operation. */
	readonly FORBIDDEN: 403;
	/** The server failed; details stay in its logs. */
	readonly INTERNAL: 501;
};
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];
/** The `severity` of an ErrorMessage. */
export declare const Severity: {
	readonly INFO: 0;
	readonly WARNING: 1;
	readonly ERROR: 2;
	readonly CRITICAL: 3;
};
export type Severity = (typeof Severity)[keyof typeof Severity];
/** Tell whether a connection survives an error of this code unless said otherwise. */
export declare function defaultRecoverable(code: number): boolean;
/** The root of every error this library throws. */
export declare class ToolwireError extends Error {
	constructor(message: string);
}
/** A programming mistake: the message says what to call instead. */
export declare class UsageError extends ToolwireError {
}
/** A frame or message was refused; a `Connection` answers it with an ErrorMessage of this code. */
export declare class ProtocolError extends ToolwireError {
	/** An `ErrorCode` (any number in the documented ranges). */
	readonly code: number;
	/** What was wrong, naming the field; sent to the peer. */
	readonly detail: string;
	/** Whether the connection continues (by default from the code). */
	recoverable: boolean;
	/** The stanza id of the refused frame, when it could be read. */
	readonly originatingId: number | string | undefined;
	constructor(code: number, detail: string, recoverable?: boolean, originatingId?: number | string);
	/** WARNING for an unknown type, ERROR for what a connection survives, CRITICAL otherwise. */
	get severity(): Severity;
}
/** The connection ended for good: the server refused it, it was closed, or reconnecting gave up. */
export declare class ConnectionClosed extends ToolwireError {
	/** The ErrorMessage code when the server gave one (201 no such conversation, ...). */
	readonly code: number | undefined;
	constructor(message: string, code?: number);
}
/** The tool groups were refused; names the group and the tool the refusal is about. */
export declare class RegistrationError extends ToolwireError {
	readonly group: string | undefined;
	readonly tool: string | undefined;
	constructor(message: string, group?: string, tool?: string);
}
/** The server refused the message (e.g. a run is in progress), or the run it started failed. */
export declare class RunFailed extends ToolwireError {
	readonly runId: string | undefined;
	/** The ErrorMessage code of a refused message: 105 (a run is in progress), 503 (the server is busy: send it again later). */
	readonly code: number | undefined;
	constructor(message: string, runId?: string, code?: number);
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
export declare class ToolError extends ToolwireError {
	readonly code: string;
	readonly terminal: boolean;
	readonly needsFollowup: boolean;
	constructor(message: string, options?: ToolErrorOptions);
}
/** The `type` of an envelope: the published protocol's numbers, and toolwire's own from 100. */
export declare const MessageType: {
	readonly ERROR: 1;
	readonly USER_MESSAGE: 2;
	readonly ASSISTANT_MESSAGE: 3;
	readonly TOOL_USE_REQUEST: 6;
	readonly TOOL_USE_RESULT: 7;
	readonly ACKNOWLEDGEMENT: 8;
	readonly CONTROL_STOP: 10;
	readonly CONFIGURATION: 12;
	readonly START_ANSWER: 13;
	readonly ASSISTANT_SENTENCE: 16;
	readonly REGISTER_TOOLS: 100;
	readonly REGISTER_TOOLS_RESULT: 101;
	readonly CONSENT_REQUEST: 102;
	readonly CONSENT_ANSWER: 103;
	readonly RUN_STATUS: 104;
	readonly TOOL_USE_CANCEL: 105;
};
export type MessageType = (typeof MessageType)[keyof typeof MessageType];
/** The name of a known message type (`"USER_MESSAGE"`), or undefined. */
export declare function messageTypeName(type: number): keyof typeof MessageType | undefined;
/** A JSON-like value as MessagePack carries it (binary as `Uint8Array`). */
export type WireValue = null | boolean | number | string | Uint8Array | WireValue[] | WireMap;
/** A MessagePack map with string keys. */
export interface WireMap {
	[key: string]: WireValue;
}
/** Name a decoded value's type the way the protocol speaks of it ("a map", "a string"). */
export declare function kind(value: unknown): string;
/** True for a plain decoded map (not an array, not binary). */
export declare function isMap(value: unknown): value is WireMap;
/** The protocol's default deadline of a ToolUseRequest. */
export declare const DEFAULT_TIMEOUT_MS = 30000;
/** Who runs a requested tool: the server, the client, or whichever can (it runs once). */
export type Execution = "server" | "client" | "either";
/** How far a consent answer reaches: this call, or every call of the tool in the thread. */
export type ConsentScope = "once" | "thread";
/** The states a `RunStatus` reports. */
export type RunState = "queued" | "started" | "finished" | "failed";
/** A JSON Schema (the protocol only carries it; the server checks it when groups are registered). */
export type JsonSchema = {
	[key: string]: unknown;
};
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
	references?: (string | {
		name: string;
	})[];
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
	addContext?: {
		key: string;
		value: string;
	}[];
}
/** One item of a client tool's result. */
export type ContentItem = {
	type: "text";
	text: string;
} | {
	type: "json";
	value: unknown;
} | {
	type: "binary";
	mimeType: string;
	data: Uint8Array;
	filename?: string;
};
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
export type Message = ErrorMessage | UserMessage | AssistantMessage | ToolUseRequest | ToolUseResult | Acknowledgement | ControlStop | Configuration | StartAnswer | AssistantSentence | RegisterTools | RegisterToolsResult | ConsentRequest | ConsentAnswer | RunStatus | ToolUseCancel;
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
export declare const CONVERSATION_IN_BODY: ReadonlySet<number>;
/** Bounds on what `decode` accepts from a peer. */
export interface Limits {
	/** Bytes in one frame (the WebSocket message); 1 MiB. */
	maxFrameBytes: number;
	/** Bytes in one string; 1 MiB. */
	maxStrLen: number;
	/** Bytes in one binary value; 1 MiB. */
	maxBinLen: number;
	/** Items in one array; 65,536. */
	maxArrayLen: number;
	/** Pairs in one map; 65,536. */
	maxMapLen: number;
	/** Maps and arrays in the whole frame; 65,536. */
	maxContainers: number;
	/** Nesting of maps and arrays, the envelope being depth 1; 32. */
	maxDepth: number;
}
/** The defaults of the protocol: 1 MiB frames, depth 32, 65,536 items and containers. */
export declare const DEFAULT_LIMITS: Readonly<Limits>;
/** A frame whose bytes and envelope were checked; the body is not read yet. */
export declare class Frame {
	/** As sent; 0 when the peer sent none. */
	readonly stanzaId: number;
	/** The envelope's conversation id ("" when absent). */
	readonly conversationId: string;
	/** The numeric message type, known or not. */
	readonly type: number;
	/** The metadata, with a dialect's top-level trace fields moved in. */
	readonly meta: WireMap;
	/** The body, unread. */
	readonly body: WireMap;
	constructor(
	/** As sent; 0 when the peer sent none. */
	stanzaId: number, 
	/** The envelope's conversation id ("" when absent). */
	conversationId: string, 
	/** The numeric message type, known or not. */
	type: number, 
	/** The metadata, with a dialect's top-level trace fields moved in. */
	meta: WireMap, 
	/** The body, unread. */
	body: WireMap);
	/**
	 * Read the body into its message.
	 *
	 * @throws ProtocolError 102 for an unknown type, 105 for a bad field; `originatingId` is the stanza id.
	 */
	open(): Envelope;
	private bodyConversation;
}
/** Return the MessagePack frame of an envelope (deterministic: the same envelope, the same bytes). */
export declare function encode(envelope: Envelope): Uint8Array;
/** Encode one value as toolwire does: maps in key order, binary as bin, no extension types. */
export declare function packValue(value: unknown): Uint8Array;
/**
 * Read one frame from a peer.
 *
 * @throws ProtocolError for every frame that is not a valid envelope; nothing else escapes.
 */
export declare function decode(data: Uint8Array, limits?: Limits): Envelope;
/**
 * Check a frame's bytes and envelope, leaving the body unread (see `Frame.open`).
 *
 * @throws ProtocolError 104 too large, 101 not MessagePack (or an extension type, a non-string or
 *   repeated key, invalid UTF-8, trailing bytes), 106 a limit, 105 an envelope field.
 */
export declare function readFrame(data: Uint8Array, limits?: Limits): Frame;
/**
 * Read one MessagePack value under `limits` (what `check` refuses is refused first).
 *
 * @throws ProtocolError 101 or 106, like `readFrame`.
 */
export declare function unpackValue(data: Uint8Array, limits?: Limits): unknown;
/**
 * Walk one MessagePack value in `data` and refuse what toolwire does not accept, without building
 * it: a `ProtocolError` 101 (malformed, extension, key, UTF-8, trailing bytes) or 106 (a limit).
 *
 * @returns how many of msgpackr's `undefined` (`d4 00 00`) it holds.
 */
export declare function check(data: Uint8Array, limits?: Limits): number;
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
export declare const NO_HANDLER = "no consent handler in this client";
/** Ask `handler` about `request`; never rejects. */
export declare function decide(handler: ConsentHandler | undefined, request: ConsentRequest): Promise<ConsentAnswer>;
/** How a tool call concluded (seed 000). */
export declare const ResultType: {
	readonly SUCCESS: 0;
	readonly ERROR: 1;
	readonly CANCELED: 2;
	readonly TIMEOUT: 3;
	readonly DENIED: 4;
};
export type ResultType = (typeof ResultType)[keyof typeof ResultType];
/** The wire error codes and the outcome type of each; any other code is an Error. */
export declare const CODE_RESULT_TYPES: Readonly<Record<string, ResultType>>;
/** The code of each failed outcome type when a result names none of its own. */
export declare const DEFAULT_CODES: Readonly<Record<Exclude<ResultType, 0>, string>>;
/** The outcome type a wire error code stands for (a code of a tool's own is an Error). */
export declare function resultTypeForCode(code: string): ResultType;
/** A failed answer with a wire code (`unknown_tool`, `invalid_parameters`, ...). */
export declare function failure(requestId: string, code: string, message: string): ToolUseResult;
/** The answer of a handler that ran past `durationMs`: the seed's text, and the duration as a field. */
export declare function timeoutFailure(requestId: string, durationMs: number, effectUnknown?: boolean): ToolUseResult;
/** What a ToolUseResult reports, read from its structured fields, else from the seed's texts. */
export interface Outcome {
	type: ResultType;
	/** The wire code of a failure (its own, or its type's default). */
	code?: string;
	/** A failure's text. */
	message?: string;
	/** A success's value: its content items' value, else its `result` (`{"value": x}` is `x`). */
	value?: unknown;
	/** Timeout: the deadline that passed (null when unknown). */
	durationMs?: number | null;
	/** Timeout: the tool could not be stopped and may still finish its work. */
	effectUnknown?: boolean;
	/** Denied: the tool refused. */
	tool?: string;
	/** Denied, Canceled: why. */
	reason?: string;
	/** Canceled: `user`, `policy` or `system`. */
	by?: string;
}
/**
 * Read a ToolUseResult (e.g. a `serverToolResult`'s).
 *
 * @param context what the request said: its tool (a Denied names it) and its deadline (a Timeout
 *   that gives no duration lasted it).
 */
export declare function outcomeOf(result: ToolUseResult, context?: {
	toolName?: string;
	deadlineMs?: number;
}): Outcome;
/** The state of the client's connection. */
export type ConnectionState = "connecting" | "open" | "reconnecting" | "closed";
export interface ConnectionEvent {
	kind: "connection";
	state: ConnectionState;
	/** While reconnecting: the attempt about to be made, from 1. */
	attempt?: number;
	/** When closed for good: why. */
	error?: ConnectionClosed;
}
export interface RunQueuedEvent {
	kind: "runQueued";
	runId: string;
	/** The run's place in the server's queue: 1 is the next to start. */
	position: number;
	/** The UserMessage the run answers (absent for a run the server resumed by itself). */
	messageId?: string;
}
export interface RunStartedEvent {
	kind: "runStarted";
	runId: string;
	/** The UserMessage the run answers (absent for a run the server resumed by itself). */
	messageId?: string;
}
export interface RunFinishedEvent {
	kind: "runFinished";
	runId: string;
	messageId?: string;
	/** `answer`, `terminal_result`, `terminate`, `limit` or `canceled`. */
	reason?: string;
	detail?: string;
	output?: string;
}
export interface RunFailedEvent {
	kind: "runFailed";
	/** Absent when the server refused the message itself. */
	runId?: string;
	messageId?: string;
	message: string;
	/** The ErrorMessage code when the server refused the message: 105 (a run is in progress), 503 (busy: try again later). */
	code?: number;
}
export interface AnswerStartedEvent {
	kind: "answerStarted";
	messageId: string;
	previousId?: string;
}
export interface AnswerTextEvent {
	kind: "answerText";
	messageId: string;
	sequence: number;
	text: string;
	isFinal: boolean;
}
export interface AssistantMessageEvent {
	kind: "assistantMessage";
	id: string;
	content: string;
	previousId?: string;
}
export interface ServerToolCallEvent {
	kind: "serverToolCall";
	request: ToolUseRequest;
}
export interface ServerToolResultEvent {
	kind: "serverToolResult";
	result: ToolUseResult;
	/** What the result reports (`outcomeOf`): its outcome type and details (a timeout's duration, ...). */
	outcome: Outcome;
	/** "" when the call itself was not seen (e.g. sent before this client connected). */
	toolName: string;
}
export interface ClientToolStartedEvent {
	kind: "clientToolStarted";
	request: ToolUseRequest;
}
export interface ClientToolCallEvent {
	kind: "clientToolCall";
	request: ToolUseRequest;
	/** What was sent back; `result.errorCode` tells a failure's kind. */
	result: ToolUseResult;
	/** How long the handler ran (0 when nothing ran). */
	durationMs: number;
	/** The request was seen before: the stored answer was sent again, nothing ran. */
	replayed: boolean;
}
export interface ClientToolCanceledEvent {
	kind: "clientToolCanceled";
	/** The withdrawn ToolUseRequest's id. */
	requestId: string;
	/** The request, when this client has it in its ledger (it has, unless it lost its state). */
	request?: ToolUseRequest;
	/** How the server settled the call: `timeout`, `canceled` (the run stopped), `client_disconnected`, ... */
	code: string;
	reason?: string;
	/** The handler was still running (its signal was aborted). */
	running: boolean;
}
export interface ResultRefusedEvent {
	kind: "resultRefused";
	request: ToolUseRequest;
	/** The result the server did not take. */
	result: ToolUseResult;
	/** The server's message. */
	message: string;
}
export interface ConsentEvent {
	kind: "consent";
	request: ConsentRequest;
	answer: ConsentAnswer;
}
export interface ServerErrorEvent {
	kind: "serverError";
	error: ErrorMessage;
}
export interface WarningEvent {
	kind: "warning";
	message: string;
}
/** Everything `onEvent` gets, told apart by `kind`. */
export type ClientEvent = ConnectionEvent | RunQueuedEvent | RunStartedEvent | RunFinishedEvent | RunFailedEvent | AnswerStartedEvent | AnswerTextEvent | AssistantMessageEvent | ServerToolCallEvent | ServerToolResultEvent | ClientToolStartedEvent | ClientToolCallEvent | ClientToolCanceledEvent | ResultRefusedEvent | ConsentEvent | ServerErrorEvent | WarningEvent;
/** The event a streamed answer's message or a run's status stands for. */
export declare function streamEvent(message: StartAnswer | AssistantSentence | AssistantMessage | RunStatus): ClientEvent;
/**
 * The run of one `send()`: iterate it for its events (`for await (const event of run)`, ending
 * after `runFinished`), or await `finished`. Client tools and consent prompts are answered whether
 * or not anyone iterates.
 */
export declare class Run implements AsyncIterable<ClientEvent> {
	/** The stanza id of the UserMessage, which the server's refusal names. */
	readonly stanzaId: number;
	/** The UserMessage's id, which the run's RunStatus names. */
	readonly messageId: string;
	/** Resolves with the `runFinished` event; rejects with `RunFailed` or `ConnectionClosed`. */
	readonly finished: Promise<RunFinishedEvent>;
	/** The server's id for the run, once it started. */
	runId: string | undefined;
	private readonly queue;
	private wake;
	private outcome;
	private settle;
	/** @internal */
	constructor(
	/** The stanza id of the UserMessage, which the server's refusal names. */
	stanzaId: number, 
	/** The UserMessage's id, which the run's RunStatus names. */
	messageId: string);
	/** True once the run finished or failed. */
	get done(): boolean;
	/**
	 * @internal Take an event if it belongs to this run: from the `runStarted` that names its
	 * message (or names none, from an older server) to its `runFinished` or `runFailed`, or the
	 * refusal of its message. Events of an earlier run, replayed after a reload, are not its own. A
	 * `runStarted` naming no message while it is in progress is its resumption (a restarted server,
	 * another replica): its end is this run's end.
	 */
	offer(event: ClientEvent): void;
	private push;
	/** @internal End the run with an error (RunFailed, ConnectionClosed). */
	fail(error: Error): void;
	[Symbol.asyncIterator](): AsyncIterator<ClientEvent>;
	private notify;
}
/**
 * `Sequencing`: what one end of a conversation remembers across connections and page reloads.
 *
 * A `Connection` exports it with `state()` and continues from it with `Connection.resume(state)`,
 * so that a new connection goes on numbering where the last one stopped and resends what the peer
 * missed. `sequencingToJSON` gives the JSON form of toolwire's Python `Sequencing.to_dict()`
 * (frames as base64), e.g. for `localStorage`.
 *
 * @module
 */
/** Which end: client stanza ids count 1, 2, 3…, server stanza ids -1, -2, -3…. */
export type Role = "server" | "client";
/** The numbering of one end of a conversation and the frames its peer has not acknowledged. */
export interface Sequencing {
	/** The end this state belongs to; it fixes the sign of its stanza ids. */
	role: Role;
	/** The conversation (thread) id. */
	conversationId: string;
	/** The absolute value of the next stanza id this end sends. */
	nextStanza: number;
	/** The absolute value of the last stanza processed from the peer (its `lastSequenceSeen`). */
	lastSeen: number;
	/** Frames sent and not acknowledged yet, as [absolute stanza id, frame bytes], oldest first. */
	outbox: [
		number,
		Uint8Array
	][];
}
/** The JSON form of a `Sequencing`, the same as Python's `Sequencing.to_dict()`. */
export interface SequencingJSON {
	role: Role;
	conversationId: string;
	nextStanza: number;
	lastSeen: number;
	outbox: [
		number,
		string
	][];
}
/** Return the JSON-safe form of a state (frames as base64). */
export declare function sequencingToJSON(state: Sequencing): SequencingJSON;
/**
 * Read the form `sequencingToJSON()` (or Python's `to_dict()`) gives.
 *
 * @throws UsageError the data is not such a form.
 */
export declare function sequencingFromJSON(data: unknown): Sequencing;
/** Base64 of bytes (browsers and node alike). */
export declare function toBase64(bytes: Uint8Array): string;
/**
 * Bytes of base64.
 *
 * @throws UsageError not base64.
 */
export declare function fromBase64(text: string): Uint8Array;
/** What a handler gets besides the arguments. */
export interface ToolContext {
	/** The request being answered. */
	request: ToolUseRequest;
	/**
	 * Aborted when the call ends without the handler: its deadline passed (the `timeout` answer has
	 * been sent), the server withdrew it (ToolUseCancel: nothing will be sent), or the client was
	 * closed. Stop working then; `signal.reason` is a `ToolError` whose `code` says which
	 * (`timeout`; the server's code, e.g. `canceled`, `timeout`, `client_disconnected`; `canceled`).
	 */
	signal: AbortSignal;
}
/**
 * A function that runs one client tool. It gets the call's arguments and returns text, any JSON
 * value, a `ToolResponse` (content items, a failure, an augmentation), or nothing; it throws a
 * `ToolError` to fail with a code of its own.
 */
export type ToolHandler = (args: WireMap, context: ToolContext) => unknown;
/** A handler with its own deadline, when shorter than the request's `timeoutMs`. */
export interface ToolHandlerSpec {
	handler: ToolHandler;
	timeoutMs?: number;
}
/** What `ToolResponse` is made of. */
export interface ToolResponseInit {
	/** Items for the model: `{type: "text", text}`, `{type: "json", value}`, `{type: "binary", mimeType, data, filename?}`. */
	content?: ContentItem[];
	/** False to fail (with `errorCode`, default `execution_error`, and `errorMessage`). */
	success?: boolean;
	errorCode?: string;
	errorMessage?: string;
	/** Changes to the thread's client tools (docs/client-tools.md, "Augmentation"). */
	augmentation?: Augmentation;
}
/** A handler's full answer: content items, a failure, an augmentation. */
export declare class ToolResponse {
	readonly content: ContentItem[];
	readonly success: boolean;
	readonly errorCode: string | undefined;
	readonly errorMessage: string | undefined;
	readonly augmentation: Augmentation | undefined;
	constructor(init?: ToolResponseInit);
}
/**
 * The answer for a handler's return value; the value travels once. Text and any other JSON value
 * travel in `result` (seed 001): a map as it is, another value as `{"value": ...}`. A
 * `ToolResponse`'s content items travel in `content`.
 */
export declare function success(requestId: string, value: unknown): ToolUseResult;
/**
 * Turn a handler's value into what MessagePack carries, with JSON's rules: `toJSON()` is called
 * (a `Date` becomes its ISO text), undefined and functions leave objects (and become null in
 * arrays), `Uint8Array` stays binary, a `Map` becomes a map of string keys.
 *
 * @throws UsageError for what cannot travel: a bigint, a cycle.
 */
export declare function toWire(value: unknown, seen?: Set<object>): unknown;
/** The problems of `args` against the parts of a `parametersSchema` this client checks ("" when none). */
export declare function argumentProblems(schema: JsonSchema | undefined, args: WireMap): string;
/** The functions that run the client's tools, and the schemas their arguments must match. */
export declare class Handlers {
	readonly limits: Limits;
	private readonly handlers;
	/** Tool name → its registered `parametersSchema`. */
	readonly schemas: Map<string, JsonSchema>;
	constructor(limits?: Limits);
	/** Run `handler` for requests of tool `name` (replacing a handler of the same name). */
	add(name: string, handler: ToolHandler | ToolHandlerSpec): void;
	/** Whether a handler runs tool `name`. */
	has(name: string): boolean;
	/** Remember the parameters schemas of the groups' tools (after the server accepted them). */
	learn(groups: readonly ClientToolGroup[]): void;
	/**
	 * Run the request's handler and return the answer; never rejects.
	 *
	 * @param cancel aborting it stops waiting for the handler (whose own signal is aborted too);
	 *   the answer is then `canceled`, or the code and message of the `ToolError` it was aborted with.
	 */
	run(request: ToolUseRequest, cancel?: AbortSignal): Promise<ToolUseResult>;
	/** Refuse values that cannot travel: not MessagePack-able, beyond the limits, larger than a frame. */
	private checked;
}
/** How the server settled a call without this client's result (a ToolUseCancel). */
export interface Withdrawal {
	/** `timeout`, `canceled`, `client_disconnected`, ... */
	code: string;
	reason?: string;
}
/** One request id in the ledger. */
interface Execution$1 {
	request: ToolUseRequest;
	/** What was answered; undefined while the handler runs, and when the call was withdrawn first. */
	result?: ToolUseResult;
	durationMs?: number;
	/** The stanza id `result` was first sent with (an ErrorMessage 302 refusing it names it). */
	stanzaId?: number;
	/** The server settled the call without this client's result: nothing (more) is sent for it. */
	withdrawn?: Withdrawal;
}
/** Request id → its one execution; at most `maxEntries` settled ones are kept, oldest dropped. */
export declare class ExecutionLedger {
	readonly maxEntries: number;
	private readonly entries;
	constructor(maxEntries?: number);
	/** The execution of `requestId`, if this client has seen it. */
	get(requestId: string): Execution$1 | undefined;
	/**
	 * Record that `request` runs now; call `get()` first, a request id starts only once.
	 *
	 * @throws UsageError the request id is already in the ledger.
	 */
	start(request: ToolUseRequest): Execution$1;
	/** Put an entry back, e.g. from persisted state. */
	restore(entry: Execution$1): void;
	/** The execution whose result was first sent with stanza id `stanzaId` (an ErrorMessage 302 names it). */
	sentWith(stanzaId: number): Execution$1 | undefined;
	/** Every execution, oldest first. */
	list(): Execution$1[];
	get size(): number;
	private trim;
}
/** The JSON a client persists; see the module docs. */
export interface ClientState {
	version: 1;
	/** The protocol's state; null before the first handshake bound a conversation. */
	sequencing: SequencingJSON | null;
	/**
	 * Client tool requests (base64 MessagePack bodies), with the answer once sent and its stanza id,
	 * or how the server withdrew the call (ToolUseCancel: nothing is sent for it, it never runs again).
	 */
	ledger: {
		request: string;
		result?: string;
		stanzaId?: number;
		withdrawn?: Withdrawal;
	}[];
	/** Consent requests, with the answer once given. */
	consents: {
		request: string;
		answer?: string;
	}[];
}
/** Where a client keeps its state: read once when it connects, written after every change. */
export interface StateStore {
	load(): ClientState | undefined;
	save(state: ClientState): void;
}
/** The part of the Web Storage interface `webStorage` uses (`localStorage`, `sessionStorage`). */
export interface StorageLike {
	getItem(key: string): string | null;
	setItem(key: string, value: string): void;
}
/**
 * Keep a client's state under `key` of a `Storage` (`localStorage` survives reloads and restarts,
 * `sessionStorage` only reloads of one tab).
 */
export declare function webStorage(storage: StorageLike, key: string): StateStore;
/** A `ClientState`'s ledger and consents, read back. */
export interface RestoredState {
	ledger: Execution$1[];
	consents: {
		request: ConsentRequest;
		answer?: ConsentAnswer;
	}[];
}
/** The envelope's `meta` field naming the trace of the span that sent it. */
export declare const TRACE_ID = "messaging.trace_id";
/** The envelope's `meta` field naming the span that sent it. */
export declare const SPAN_ID = "messaging.span_id";
/** A W3C parent: the server's span, as the envelope's `meta` named it. */
export interface TraceParent {
	/** 32 lowercase hex digits, not all zero. */
	traceId: string;
	/** 16 lowercase hex digits, not all zero. */
	spanId: string;
}
/** One execution of a client tool, as `traceExecution` is told of it. */
export interface TracedExecution {
	toolName: string;
	/** The model's call id (the request's `callId`, else its id): the `gen_ai.tool.call.id`. */
	callId: string;
	/** The ToolUseRequest's id. */
	requestId: string;
	/** The server's call span, when the request's envelope named a valid one (else absent). */
	traceId?: string;
	spanId?: string;
}
/**
 * Wraps each execution of a client tool handler, e.g. in a span (`@toolwire/client/otel`).
 *
 * Call `run()` once and return its answer (it never rejects: a handler's failure is a failed
 * ToolUseResult). Should the hook throw, the client warns (a `warning` event) and answers anyway,
 * running the handler if the hook had not.
 */
export type TraceExecution = (execution: TracedExecution, run: () => Promise<ToolUseResult>) => Promise<ToolUseResult>;
/** The parent an envelope's `meta` names; undefined when absent or malformed (not lowercase hex of the right length, or all zeros). */
export declare function traceParent(meta: WireMap): TraceParent | undefined;
/** How a client reconnects after its connection drops: at once, then after growing waits (with jitter). */
export interface ReconnectOptions {
	/** Attempts before giving up with `ConnectionClosed` (8: about 10 s; `Infinity` never gives up). */
	attempts?: number;
	initialDelayMs?: number;
	maxDelayMs?: number;
	factor?: number;
}
/** The URL to open: relative URLs resolve against the page (http → ws), the token as a query parameter. */
export declare function socketUrl(url: string, token: string): string;
/** Milliseconds to wait before reconnect attempt `attempt` (from 1; the first does not wait). */
export declare function backoff(attempt: number, options?: ReconnectOptions): number;
/**
 * Why the server refused to open `url` (a socket URL with its `token`), when it says so.
 *
 * A browser learns nothing from a refused WebSocket upgrade (the close code is 1006, as for a
 * server that is down), so this asks `GET` on the socket's own path, with the token as an
 * `Authorization` header: `toolwire serve` answers 401 for a token it refuses and 403 for an
 * origin it refuses. Dialers call it when a socket closes before it opened.
 *
 * @returns a `ConnectionClosed` with code `ErrorCode.UNAUTHENTICATED` or `ErrorCode.FORBIDDEN` (a
 *   refusal that retrying cannot change); undefined when the answer tells nothing (unreachable, a
 *   server without the check, an origin that may not read the answer).
 */
export declare function refusal(url: string): Promise<ConnectionClosed | undefined>;
/** What a transport reports. */
export interface TransportEvents {
	/** One frame arrived (a text frame arrives as its UTF-8 bytes, to be refused like any bad frame). */
	frame(data: Uint8Array): void;
	/** The transport closed, from either side or by failure; called once. */
	closed(reason: string): void;
}
/** An open connection to the server. */
export interface Transport {
	/** Write one binary frame. */
	send(frame: Uint8Array): void;
	/** Close; `TransportEvents.closed` follows. */
	close(): void;
}
/**
 * Opens a transport to `url`, reporting to `events`; rejects when it cannot be opened: with a
 * `ConnectionClosed` when retrying cannot help (the token or the origin was refused), which ends
 * the client's reconnecting, else with any other error (another attempt may succeed).
 */
export type Dialer = (url: string, events: TransportEvents) => Promise<Transport>;
/** The part of the WebSocket interface a dialer uses (the browser's, or the `ws` package's). */
export interface WebSocketLike {
	binaryType: string;
	onopen: ((event: unknown) => void) | null;
	onmessage: ((event: {
		data: unknown;
	}) => void) | null;
	onerror: ((event: unknown) => void) | null;
	onclose: ((event: {
		code: number;
		reason: string;
	}) => void) | null;
	send(data: Uint8Array): void;
	close(code?: number, reason?: string): void;
}
/** A WebSocket class: `new WebSocket(url)`. */
export type WebSocketClass = new (url: string) => WebSocketLike;
/**
 * A dialer over WebSocket.
 *
 * @param WebSocket the class to use; the global `WebSocket` by default (in node 20, pass the `ws`
 *   package's `WebSocket`).
 */
export declare function webSocketDialer(WebSocket?: WebSocketClass): Dialer;
/** One end of an in-memory pair. */
export declare class MemoryEnd implements Transport {
	private events;
	private peer;
	private open;
	private readonly early;
	/** @internal */
	static pair(): [
		MemoryEnd,
		MemoryEnd
	];
	/** Start receiving: frames sent before this are delivered now. */
	attach(events: TransportEvents): void;
	/** True until either end closes or drops the pair. */
	get isOpen(): boolean;
	send(frame: Uint8Array): void;
	/** Close after the frames already sent are delivered. */
	close(): void;
	/** Close at once, losing every frame in flight (a network failure). */
	drop(): void;
	private shut;
	private deliver;
}
/** Two connected in-memory transports. */
export declare function memoryPair(): [
	MemoryEnd,
	MemoryEnd
];
/**
 * A dialer that connects to an in-process server: `accept` gets the server's end of each new
 * pair (and the URL), and may reject (or throw) to refuse the connection.
 */
export declare function memoryDialer(accept: (server: MemoryEnd, url: string) => void | Promise<void>): Dialer;
/** The version this client announces. */
export declare const CLIENT_VERSION = "toolwire-web/0.1.0";
/** The optional features this client supports. */
export declare const FEATURES: string[];
/** The feature that asks for an answer's AssistantMessage also after it was streamed (`wholeAnswers` option). */
export declare const WHOLE_ANSWERS = "wholeAnswers";
/** Options of `connect()`. */
export interface ConnectOptions {
	/** Sent as the `token` query parameter (browsers cannot set headers on a WebSocket). */
	token: string;
	/** The conversation to continue; defaults to the persisted state's, else a new one. */
	conversationId?: string;
	/** Tool groups registered before `connect()` resolves. */
	groups?: ClientToolGroup[];
	/** Groups or skills to offer expanded from the start. */
	expandedContainers?: string[];
	/** Tool name → the function that runs it (or `{handler, timeoutMs}`). */
	handlers?: Record<string, ToolHandler | ToolHandlerSpec>;
	/** Answers the server's consent prompts; without it every call needing consent is denied. */
	onConsent?: ConsentHandler;
	/** Everything that happens (see `ClientEvent`). */
	onEvent?: (event: ClientEvent) => void;
	/** State to resume from (see `ToolwireClient.exportState()`); `persist`'s when absent. */
	state?: ClientState;
	/** Where the state is read from and saved to after every change (e.g. `webStorage(localStorage, key)`). */
	persist?: StateStore;
	/** Reconnect and resume when the connection drops (`false`: don't). */
	reconnect?: ReconnectOptions | false;
	/** What a frame from the server may contain. */
	limits?: Limits;
	/** How to reach the server; the global WebSocket by default. */
	dial?: Dialer;
	clientVersion?: string;
	device?: string;
	/** Milliseconds to wait for the server's Configuration (10,000). */
	handshakeTimeoutMs?: number;
	/** Finished executions kept in the ledger (1,000). */
	ledgerSize?: number;
	/**
	 * Also receive a streamed answer whole, as an `assistantMessage` event after its `answerText`
	 * events (the `wholeAnswers` feature); by default a streamed answer arrives once, streamed,
	 * and only an answer that was not streamed arrives as an `assistantMessage`.
	 */
	wholeAnswers?: boolean;
	/**
	 * Wraps each execution of a client tool handler, told the tool, the call and the server's call
	 * span when the request's envelope named it (`messaging.trace_id` / `messaging.span_id` in its
	 * `meta`): record the execution as that span's child. `openTelemetryTracing()` from
	 * `@toolwire/client/otel` makes one with OpenTelemetry; without it nothing is traced.
	 */
	traceExecution?: TraceExecution;
}
/** Options of `register()`. */
export interface RegisterOptions {
	expandedContainers?: string[];
	/** Forget the thread's client state (expansion, hidden tools, context) first. */
	resetClientState?: boolean;
}
/**
 * Connect to a toolwire server, open (or resume) a conversation and register tool groups.
 *
 * ```ts
 * const client = await connect("ws://127.0.0.1:8765/ws", { token, groups: [page], handlers: { GetSelection } });
 * const answer = await client.ask("What did I select?");
 * ```
 *
 * @throws ConnectionClosed the server cannot be reached or refused (token, unknown conversation).
 * @throws RegistrationError the groups were refused.
 */
export declare function connect(url: string, options: ConnectOptions): Promise<ToolwireClient>;
/** A conversation with a toolwire server; get one from `connect()`. */
export declare class ToolwireClient {
	/** The functions that run this client's tools (`handlers.add(name, fn)` adds more). */
	readonly handlers: Handlers;
	/** Every client tool request answered, by request id. */
	readonly ledger: ExecutionLedger;
	private readonly options;
	private readonly url;
	private readonly limits;
	private readonly dial;
	private connection;
	private requested;
	private transport;
	private socket;
	private handshake;
	private current;
	private failure;
	private closing;
	private readonly closed;
	private readonly registrations;
	private readonly requests;
	private readonly mirrored;
	private run;
	private runId;
	constructor(url: string, options: ConnectOptions);
	/** The conversation's id ("" before the first handshake); pass it as `conversationId` to continue it later. */
	get conversationId(): string;
	/** The connection's state, for a UI indicator (also reported as `connection` events). */
	get connectionState(): ConnectionState;
	/**
	 * Connect and complete the handshake; `connect()` calls it.
	 *
	 * @throws ConnectionClosed the server cannot be reached or refused the connection.
	 */
	open(): Promise<void>;
	/**
	 * Close the connection for good. Handlers still running are canceled (their signal aborts) and
	 * nothing more is sent or saved; what was unsent stays in the saved state for a later resume.
	 */
	close(): void;
	/** The state to persist; `connect({state})` resumes from it (see `ClientState`). */
	exportState(): ClientState;
	/**
	 * Register tool groups for the conversation and wait until the server applied them; they
	 * replace same-named groups and survive reconnects.
	 *
	 * @throws RegistrationError the server refused them (its message, group and tool).
	 * @throws ConnectionClosed the connection ended for good first.
	 */
	register(groups: ClientToolGroup[], options?: RegisterOptions): Promise<void>;
	/**
	 * Send a user message; its `Run` streams the events until the run ends.
	 *
	 * @throws UsageError the previous run has not ended yet.
	 * @throws ConnectionClosed the connection ended for good.
	 */
	send(text: string): Run;
	/**
	 * Send a user message and return the final answer ("" when the run ended without one).
	 *
	 * @throws RunFailed the server refused the message or the run failed.
	 * @throws ConnectionClosed the connection ended for good.
	 */
	ask(text: string): Promise<string>;
	/** Ask the server to stop the run in progress (ControlStop); it then finishes as `canceled`. */
	stop(reason?: string): void;
	private attempt;
	private received;
	private answered;
	private dropped;
	private reconnect;
	/** The handshake completed: say so, and finish what a reload or a drop interrupted. */
	private opened;
	private write;
	/**
	 * Number and send a message; it stays in the outbox (and the saved state) until acknowledged.
	 *
	 * @param numbered told the stanza id before the state is saved.
	 * @returns the message's stanza id.
	 */
	private post;
	private fail;
	private setState;
	private act;
	private emit;
	private warn;
	private persist;
	private restore;
}
/** Return the wire body of a message: fields in the documented order, unset optional ones left out. */
export declare function toBody(message: Message): WireMap;
/** Return the wire map `{stanzaId, conversationId, type, meta?, body}` of an envelope. */
export declare function envelopeToMap(envelope: Envelope): WireMap;
/**
 * Read the body of a message of numeric type `type`.
 *
 * @throws ProtocolError 102 for a type this version does not know, 105 for a bad field.
 */
export declare function parseBody(type: number, body: WireMap): Message;
/** What one `receive()` produced. */
export interface Received {
	/** New messages from the peer to act on, in order (duplicates and acknowledgements removed). */
	messages: Envelope[];
	/** Frames to write back now, in order: ErrorMessages, an Acknowledgement, or the client's replay. */
	replies: Uint8Array[];
	/** Close the connection after writing `replies` (a non-recoverable error, either side's). */
	close: boolean;
	/** The refusals the ErrorMessages in `replies` describe, for logs. */
	errors: ProtocolError[];
}
/** Options of a `Connection`. */
export interface ConnectionOptions {
	/** Sequencing to continue from (see `Connection.resume`). */
	state?: Sequencing | undefined;
	/** What `receive()` accepts. */
	limits?: Limits;
	/** Acknowledge by itself once this many stanzas wait for an acknowledgement (32). */
	ackEvery?: number;
	/** Unacknowledged frames kept for replay; the oldest go first beyond it (10,000). */
	maxOutbox?: number;
	/** Makes the ids of the ErrorMessages this connection writes. */
	newId?: () => string;
}
/** A random id: `prefix_` and 128 bits as hex. */
export declare function newId(prefix: string): string;
/** One end of a conversation on one connection; see the module docs for the rules. */
export declare class Connection {
	readonly role: Role;
	readonly limits: Limits;
	readonly ackEvery: number;
	readonly maxOutbox: number;
	private readonly newId;
	private readonly sign;
	private phase;
	private seq;
	private requested;
	private helloReceived;
	constructor(role: Role, options?: ConnectionOptions);
	/**
	 * Continue a conversation from exported state, e.g. after a reconnect or a page reload.
	 *
	 * `send()` on a resumed connection keeps frames in the outbox (and returns empty bytes) until a
	 * handshake replays them.
	 */
	static resume(state: Sequencing, options?: Omit<ConnectionOptions, "state">): Connection;
	/** The conversation this end is bound to, once known. */
	get conversationId(): string | undefined;
	/** True between a completed handshake and a close. */
	get isOpen(): boolean;
	/** True after a non-recoverable error; `receive()` then ignores everything. */
	get closed(): boolean;
	/** The absolute id of the last numbered stanza this end sent (0 before any). */
	get lastStanza(): number;
	/** Export the sequencing state to persist (undefined before a conversation is bound). */
	state(): Sequencing | undefined;
	/**
	 * Client: return the Configuration that opens the connection; write it first.
	 *
	 * @param conversationId The conversation to resume; defaults to the resumed state's, else new.
	 */
	hello(conversationId?: string, options?: {
		clientVersion?: string;
		device?: string;
		features?: string[];
	}): Uint8Array;
	/**
	 * Server: bind the conversation the client's Configuration asked for, or a new one.
	 *
	 * @returns the frames to write: the server's Configuration, then the frames the client missed.
	 */
	accept(conversationId: string, options?: {
		state?: Sequencing | undefined;
		features?: string[];
	}): Uint8Array[];
	/** Server: return a non-recoverable ErrorMessage (e.g. 201, 202, 401) and close this connection. */
	refuse(code: number, message: string): Uint8Array;
	/**
	 * Number a message, keep it until acknowledged, and return the frame to write.
	 *
	 * @returns the frame; empty while the connection is not open (the frame then waits in the
	 *   outbox and goes out with the next handshake's replay).
	 * @throws UsageError no conversation is bound yet, or the message is one the connection writes itself.
	 * @throws ProtocolError 104 when the frame exceeds `limits.maxFrameBytes`; nothing was sent.
	 */
	send(message: Message, meta?: WireMap): Uint8Array;
	/** How many stanzas were seen since the last Acknowledgement this end wrote. */
	get unacknowledged(): number;
	/**
	 * Return a cumulative Acknowledgement of every stanza seen, or undefined if nothing is new.
	 *
	 * @param upto acknowledge only up to this stanza (absolute value), e.g. the last one whose
	 *   effects are persisted; every stanza seen by default.
	 */
	ack(upto?: number): Uint8Array | undefined;
	/** Take one frame from the peer; never throws for anything the peer sends. */
	receive(data: Uint8Array): Received;
	private opened;
	private handshake;
	/** Client: the server bound a conversation; resend what it has not seen. */
	private answered;
	private require;
	private errorFrame;
}
/** What `Requests` needs from its client. */
export interface RequestsIO {
	/**
	 * Number, save and send a message (it waits in the outbox while disconnected); `numbered` is
	 * told its stanza id before the state is saved.
	 */
	post(message: Message, numbered?: (stanzaId: number) => void): void;
	emit(event: ClientEvent): void;
	onConsent: ConsentHandler | undefined;
	/** Aborted when the client closes: handlers are canceled and nothing more is answered. */
	signal: AbortSignal;
	/** Wraps each handler's execution (`ConnectOptions.traceExecution`). */
	traceExecution?: TraceExecution | undefined;
}
export declare class Requests {
	private readonly handlers;
	private readonly ledger;
	private readonly io;
	private readonly consents;
	private readonly asking;
	/** Request id → the controller of its running handler (a withdrawal aborts it). */
	private readonly running;
	constructor(handlers: Handlers, ledger: ExecutionLedger, io: RequestsIO);
	/**
	 * A ToolUseRequest to run here (`execution` "client" or "either").
	 *
	 * @param meta its envelope's, which may name the server's call span (`traceParent`).
	 */
	tool(request: ToolUseRequest, meta?: WireMap): void;
	/** A ToolUseCancel: the server settled the call without this client's result. */
	withdraw(cancel: ToolUseCancel): void;
	/**
	 * An ErrorMessage 302 named stanza `stanzaId`: report the result it refused.
	 *
	 * @returns false when no result was first sent with that stanza id (e.g. an answer sent again
	 *   from the ledger after a resume, which the server had taken already).
	 */
	refused(stanzaId: number, message: string): boolean;
	/** A ConsentRequest. */
	consent(request: ConsentRequest): void;
	/** The conversation (re)opened: finish the calls and prompts a reload interrupted. */
	resume(): void;
	/** The ledger and consent prompts, for `ClientState`. */
	export(): Pick<ClientState, "ledger" | "consents">;
	/** Take back what `export()` saved. */
	restore(state: RestoredState): void;
	private interrupted;
	private execute;
	/** `run()` inside the client's `traceExecution`, if any; a hook that throws is warned about and bypassed. */
	private traced;
	private answer;
	private ask;
	private forgetOldConsents;
}

export {
	Execution$1 as LedgerEntry,
};

export {};
