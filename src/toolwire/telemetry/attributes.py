"""The names telemetry records: the GenAI semantic conventions' attributes and toolwire's own."""

from __future__ import annotations

from typing import Final

CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' environment variable: `true` records message contents (see `Telemetry`)."""
TRACE_ID: Final = "messaging.trace_id"
"""An envelope's `meta` field: the trace of the span that sent it, 32 lowercase hex digits (W3C)."""
SPAN_ID: Final = "messaging.span_id"
"""An envelope's `meta` field: the span that sent it, 16 lowercase hex digits (W3C)."""
SCOPE: Final = "toolwire"
"""The instrumentation scope of the tracer and the meter."""

OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
CONVERSATION: Final = "gen_ai.conversation.id"
AGENT_NAME: Final = "gen_ai.agent.name"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
ERROR_TYPE: Final = "error.type"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
OUTCOME: Final = "toolwire.outcome"
MODE: Final = "toolwire.tool.mode"
RUNS_ON: Final = "toolwire.tool.runs_on"
