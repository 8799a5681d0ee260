"""toolwire: governed, reliable LLM tool calling.

Every call is validated, classified, permitted, filtered, run under a deadline and answered
exactly once with a `ToolResult`.
"""

from .envelopes import ResultType as ResultType
from .envelopes import ToolCall as ToolCall
from .envelopes import ToolResult as ToolResult
from .envelopes import is_terminal_result as is_terminal_result
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
from .tools import Cancellation as Cancellation
from .tools import Tool as Tool
from .tools import Toolbox as Toolbox
from .tools import ToolContext as ToolContext
from .tools import tool as tool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Audit",
    "Batch",
    "Cache",
    "Cancellation",
    "ConsentAnswer",
    "ConsentRequest",
    "InvocationContext",
    "PermissionPolicy",
    "Pipeline",
    "RateLimit",
    "ResultType",
    "Retry",
    "RunResult",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolMode",
    "ToolResult",
    "Toolbox",
    "ToolwireError",
    "UsageError",
    "decide_tool_mode",
    "invoke",
    "invoke_batch",
    "is_terminal_result",
    "tool",
]
