"""`Telemetry`: a run's OpenTelemetry spans and metrics, named by the GenAI semantic conventions.

```
invoke_agent {agent}             one per run (INTERNAL), a child of the caller's current span
├── chat {model}                 one per model request (CLIENT)
├── execute_tool {tool}          one per tool call (INTERNAL): validation, policy, filters, the tool
│   └── toolwire.consent {tool}  the policy's Ask: the wait for a person's answer
└── ...
```

Tool spans are siblings of the chat spans under the run's span, as the conventions draw an agent.
The chat and tool spans are the current span while they last, so what a model adapter or a tool
does (an instrumented HTTP client, an MCP session) nests under them.

Only the API (`opentelemetry-api`, the `otel` extra) is used: the application configures the SDK
and its exporters, or passes providers to `Telemetry`. Without a provider the cost is nil: a run
asks once whether anything is configured (not a call), and when nothing is, the loop and the
pipeline take the paths they take without this module. The API is not even imported unless the
application imported it first (no one can have configured a provider then).

Message contents (prompts, answers, tool arguments and results) are recorded only when the
application opts in: `Telemetry(record_content=True)` or the conventions' environment variable
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
"""

from .attributes import CAPTURE_CONTENT, SPAN_ID, TRACE_ID
from .propagation import client_execution, remote_parent, trace_meta
from .providers import Telemetry

# `run` (`RunTrace`: the spans of a run) is loaded by the first run that records something: it
# needs the model and message types, which a client (`toolwire.client`) does not load.
__all__ = [
    "CAPTURE_CONTENT",
    "SPAN_ID",
    "TRACE_ID",
    "Telemetry",
    "client_execution",
    "remote_parent",
    "trace_meta",
]
