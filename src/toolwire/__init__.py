"""toolwire: governed, reliable LLM tool calling.

Every call is validated, classified, permitted, filtered, run under a deadline and answered
exactly once with a `ToolResult`.

The names below load on first use (PEP 562), so `import toolwire` stays cheap and a program pays
only for the parts it touches: a tool script never loads the agent loop, a client never loads
pydantic's schema machinery until it defines a tool.
"""

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing `typing` alone costs a few ms
if TYPE_CHECKING:
    from .cancellation import Cancellation as Cancellation
    from .client_tools.definitions import Augmentation as Augmentation
    from .client_tools.definitions import ClientSkill as ClientSkill
    from .client_tools.definitions import ClientTool as ClientTool
    from .client_tools.definitions import ClientToolGroup as ClientToolGroup
    from .envelopes import ResultType as ResultType
    from .envelopes import ToolCall as ToolCall
    from .envelopes import ToolResult as ToolResult
    from .envelopes import is_terminal_result as is_terminal_result
    from .errors import ClientDisconnected as ClientDisconnected
    from .errors import RegistrationError as RegistrationError
    from .errors import ToolError as ToolError
    from .errors import ToolwireError as ToolwireError
    from .errors import UsageError as UsageError
    from .filters import Audit as Audit
    from .filters import Cache as Cache
    from .filters import RateLimit as RateLimit
    from .filters import Retry as Retry
    from .loop import Agent as Agent
    from .loop import RunResult as RunResult
    from .modes import ToolMode as ToolMode
    from .modes import decide_tool_mode as decide_tool_mode
    from .pipeline import Batch as Batch
    from .pipeline import InvocationContext as InvocationContext
    from .pipeline import Pipeline as Pipeline
    from .pipeline import invoke as invoke
    from .pipeline import invoke_batch as invoke_batch
    from .policy import ConsentAnswer as ConsentAnswer
    from .policy import ConsentRequest as ConsentRequest
    from .policy import PermissionPolicy as PermissionPolicy
    from .telemetry import Telemetry as Telemetry
    from .tools import Tool as Tool
    from .tools import Toolbox as Toolbox
    from .tools import ToolContext as ToolContext
    from .tools import tool as tool
    from .toolsets import Toolset as Toolset
    from .toolsets.collapsed import Collapsed as Collapsed
del TYPE_CHECKING

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Audit",
    "Augmentation",
    "Batch",
    "Cache",
    "Cancellation",
    "ClientDisconnected",
    "ClientSkill",
    "ClientTool",
    "ClientToolGroup",
    "Collapsed",
    "ConsentAnswer",
    "ConsentRequest",
    "InvocationContext",
    "PermissionPolicy",
    "Pipeline",
    "RateLimit",
    "RegistrationError",
    "ResultType",
    "Retry",
    "RunResult",
    "Telemetry",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolMode",
    "ToolResult",
    "Toolbox",
    "Toolset",
    "ToolwireError",
    "UsageError",
    "decide_tool_mode",
    "invoke",
    "invoke_batch",
    "is_terminal_result",
    "tool",
]

# Where each public name lives; keep in step with the block above (a test checks both).
_SOURCES = {
    "Agent": "loop",
    "Audit": "filters",
    "Augmentation": "client_tools.definitions",
    "Batch": "pipeline",
    "Cache": "filters",
    "Cancellation": "cancellation",
    "ClientDisconnected": "errors",
    "ClientSkill": "client_tools.definitions",
    "ClientTool": "client_tools.definitions",
    "ClientToolGroup": "client_tools.definitions",
    "Collapsed": "toolsets.collapsed",
    "ConsentAnswer": "policy",
    "ConsentRequest": "policy",
    "InvocationContext": "pipeline",
    "PermissionPolicy": "policy",
    "Pipeline": "pipeline",
    "RateLimit": "filters",
    "RegistrationError": "errors",
    "ResultType": "envelopes",
    "Retry": "filters",
    "RunResult": "loop",
    "Telemetry": "telemetry",
    "Tool": "tools",
    "ToolCall": "envelopes",
    "ToolContext": "tools",
    "ToolError": "errors",
    "ToolMode": "modes",
    "ToolResult": "envelopes",
    "Toolbox": "tools",
    "Toolset": "toolsets",
    "ToolwireError": "errors",
    "UsageError": "errors",
    "decide_tool_mode": "modes",
    "invoke": "pipeline",
    "invoke_batch": "pipeline",
    "is_terminal_result": "envelopes",
    "tool": "tools",
}


def __getattr__(name: str) -> object:
    """Import a public name's module on first access and keep the name here."""
    source = _SOURCES.get(name)
    if source is None:
        raise AttributeError(f"module 'toolwire' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"toolwire.{source}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names too, before they are loaded."""
    return sorted({*globals(), *__all__})
