"""An MCP `tools/call` answer (or its failure) as a toolwire outcome.

| MCP | toolwire |
|---|---|
| a result, `isError` false | Success: `structuredContent`, else the text, else the content blocks as JSON |
| a result, `isError` true | Error `execution_error` with the server's text |
| a JSON-RPC error (`MCPError`) | Error `execution_error` with the server's message |
| the connection lost (the server exited, the pipe broke) | Error `execution_error`, never re-sent (see `supervisor`) |

A Success is given to the pipeline as its value, which it makes the call's result as it does any
tool's value. A toolwire deadline is not mapped here: the pipeline cancels the call (the SDK then sends
`notifications/cancelled`) and records a Timeout, as for every tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...envelopes import ToolResult

if TYPE_CHECKING:
    from mcp.types import CallToolResult

__all__ = ["call_value", "lost_connection"]


def _texts(result: CallToolResult) -> list[str] | None:
    texts: list[str] = []
    for block in result.content:
        if block.type != "text":
            return None
        texts.append(block.text)
    return texts


def call_value(result: CallToolResult, *, server: str, tool: str) -> Any:
    """What an MCP tool returns for its call's result: a Success's value, else the `ToolResult` (see the table).

    A Success is its value, not a `ToolResult`: the pipeline builds the call's result from it
    directly, where a `ToolResult` would be built twice (here, then bound to the call).
    """
    texts = _texts(result)
    if result.is_error:
        text = "\n".join(texts) if texts else "the tool reported an error without text"
        return ToolResult.failed(None, f"MCP server {server!r}, tool {tool!r}: {text}", error_type="MCPToolError")
    if result.structured_content is not None:
        return result.structured_content
    if texts is not None:
        return texts[0] if len(texts) == 1 else "\n".join(texts)
    return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]


def lost_connection(server: str, tool: str, problem: BaseException | str) -> ToolResult:
    """The Error of a call whose server cannot answer: the connection is lost, the call is not re-sent."""
    detail = problem if isinstance(problem, str) else (str(problem) or type(problem).__name__)
    return ToolResult.failed(
        None,
        f"MCP server {server!r} could not run {tool!r}: {detail}. The call was not re-sent; "
        "the next call of the server's tools connects again (restarting a stdio server).",
        error_type="MCPConnectionError",
    )
