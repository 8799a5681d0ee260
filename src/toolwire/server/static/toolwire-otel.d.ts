import { Tracer } from '@opentelemetry/api';

declare const MessageType: {
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
type MessageType = (typeof MessageType)[keyof typeof MessageType];
type WireValue = null | boolean | number | string | Uint8Array | WireValue[] | WireMap;
interface WireMap {
	[key: string]: WireValue;
}
type JsonSchema = {
	[key: string]: unknown;
};
interface ClientTool {
	name: string;
	description?: string;
	/** JSON Schema of the arguments, root `"type": "object"`. */
	parametersSchema?: JsonSchema;
	/** Every call asks the user for consent first. */
	requiresPermission?: boolean;
}
interface ClientSkill {
	name: string;
	description?: string;
	functionResult?: string | null;
	systemPrompt?: string | null;
	/** Names of tools of the same group (or `{name}` objects). */
	references?: (string | {
		name: string;
	})[];
}
interface ClientToolGroup {
	name: string;
	description?: string;
	tools?: ClientTool[];
	skills?: ClientSkill[];
	functionResult?: string | null;
	systemPrompt?: string | null;
	/** Offer the group as one container until the model expands it (default true). */
	startCollapsed?: boolean;
}
interface Augmentation {
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
type ContentItem = {
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
interface ToolUseResult {
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
interface TracedExecution {
	toolName: string;
	/** The model's call id (the request's `callId`, else its id): the `gen_ai.tool.call.id`. */
	callId: string;
	/** The ToolUseRequest's id. */
	requestId: string;
	/** The server's call span, when the request's envelope named a valid one (else absent). */
	traceId?: string;
	spanId?: string;
}
type TraceExecution = (execution: TracedExecution, run: () => Promise<ToolUseResult>) => Promise<ToolUseResult>;
/** The instrumentation scope of the default tracer (the Python package's too). */
export declare const SCOPE = "toolwire";
/** Options of `openTelemetryTracing()`. */
export interface OpenTelemetryTracingOptions {
	/** The tracer of the spans; by default the global provider's `toolwire` tracer, looked up at each execution. */
	tracer?: Tracer;
}
/**
 * The `traceExecution` hook of `connect()` that records each client tool execution as a span.
 *
 * The server's span (the parent) counts as sampled, as in the Python client: its sampling
 * decision does not cross the wire, the local sampler decides. Without it, the span is a child of
 * the active span, if any. The span is active while the handler runs, so what the handler does
 * with instrumented libraries nests under it; across `await`s that needs a context manager (the
 * SDK's `AsyncLocalStorageContextManager` in node, `ZoneContextManager` in a browser).
 */
export declare function openTelemetryTracing(options?: OpenTelemetryTracingOptions): TraceExecution;

export {};
