"""The agent `toolwire serve --app mcp_served_app:make_agent --mcp-servers FILE` serves in the tests.

Its tools come from the MCP servers of the file (server-everything, collapsed as `everything`)
and one function tool, `get_time`. A function model reads the latest user message:

| message | calls |
|---|---|
| `echo TEXT` | `everything` (expands the container), then `echo` with TEXT |
| `add A B` | `everything`, then `get-sum` with A and B |
| `time` | `get_time` (a function tool) |

and once the call has its result it answers with it: "The MCP server answered: Echo: TEXT".
"""

from __future__ import annotations

from typing import Any

from toolwire import Agent, ToolCall, tool
from toolwire.messages import ToolResultMessage, UserMessage
from toolwire.models import ModelRequest
from toolwire.store import Store
from toolwire.testing import FunctionModel, Turn

CONTAINER = "everything"


@tool
def get_time() -> str:
    """The time here (always noon, for the tests)."""
    return "12:00"


def _plan(text: str) -> tuple[str, dict[str, Any]] | None:
    match text.split():
        case ["echo", *words]:
            return "echo", {"message": " ".join(words)}
        case ["add", a, b]:
            return "get-sum", {"a": int(a), "b": int(b)}
        case ["time"]:
            return "get_time", {}
        case _:
            return None


def script(request: ModelRequest) -> Turn:
    """Expand the container when the tool is behind it, call the tool, then answer with its result."""
    asked = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
    last = request.messages[asked[-1]]
    assert isinstance(last, UserMessage)
    done = [m for m in request.messages[asked[-1] :] if isinstance(m, ToolResultMessage)]
    plan = _plan(last.content)
    if plan is None:
        return "Say 'echo TEXT', 'add A B' or 'time'."
    name, arguments = plan
    if made := [m for m in done if m.tool_name == name]:
        result = made[-1].result
        answer = result.data if result.success else result.error
        return f"The {'function tool' if name == 'get_time' else 'MCP server'} answered: {answer}"
    offered = {t.name for t in request.tools}
    call_id = f"c{len(asked)}_{len(done)}"
    if name not in offered and CONTAINER in offered:
        return [ToolCall(id=call_id, name=CONTAINER, arguments={})]
    return [ToolCall(id=call_id, name=name, arguments=arguments)]


def make_agent(store: Store) -> Agent:
    """The agent, on the server's store; `--mcp-servers` adds the file's servers to its tools."""
    return Agent(FunctionModel(script), tools=[get_time], store=store)
