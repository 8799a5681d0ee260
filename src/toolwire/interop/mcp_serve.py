"""toolwire's tools served over MCP: the same pipeline (validation, policy, filters, deadline) behind `tools/call`.

```
toolwire mcp serve --app myapp:make_agent          # stdio; an MCP client starts it as a subprocess
toolwire mcp serve --app myapp:make_agent --http   # Streamable HTTP on 127.0.0.1 (`mcp_http`)
```

Each tool is listed with its JSON Schema and all four annotations, always explicit, from its
`ToolMode` (`idempotentHint` from `Tool.idempotent`, except read tools, which always are):

| mode          | readOnlyHint | destructiveHint | idempotentHint    | openWorldHint |
|---------------|--------------|-----------------|-------------------|---------------|
| `read`        | true         | false           | true              | false         |
| `safe_write`  | false        | false           | `Tool.idempotent` | false         |
| `external`    | false        | false           | `Tool.idempotent` | true          |
| `destructive` | false        | true            | `Tool.idempotent` | false         |
| `local`       | false        | true            | `Tool.idempotent` | false         |

A call's `ToolResult` becomes the `CallToolResult`: Success is content (a string as text, any
other value as its JSON text, an object also as `structuredContent`); every other outcome sets
`isError` with the error text, and `_meta` carries the outcome under toolwire's prefix
(`dev.toolwire/outcome`: `error`, `canceled`, `timeout` or `denied`; `dev.toolwire/code`: the wire
code, e.g. `invalid_parameters`; `dev.toolwire/payload`: the payload the model would see).

An Ask is put to the person at the MCP client when the client declared the `elicitation`
capability (`mcp_consent`): with an elicitation request on the handshake generation (up to
2025-11-25), with an `input_required` result and a sealed `requestState` on 2026-07-28. A yes
approves that one call, once. The application's own consent handler, when its policy has one,
decides first (`PermissionPolicy.check`). With no way to ask, the call is Denied. One MCP
connection is one toolwire thread: the process's, on stdio; a session's, over
Streamable HTTP. Grants and remembered denials last as long as it.

When the client's `tools/call` carries a `progressToken` (`_meta.progressToken`), what the tool
reports with `ToolContext.report_progress(progress, total, message)` reaches the client as
`notifications/progress` for that request, in order and before the result (on both
generations: on 2026-07-28 they ride the call's response stream). Without a token nothing is
sent.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import secrets
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar, cast

import anyio

from .._apps import find_app
from .._extras import import_extra
from ..envelopes import ResultType, ToolCall, ToolResult
from ..errors import UsageError
from ..invocation import CallEvent, Observer, ToolProgress
from ..loop import Agent
from ..modes import ToolMode
from ..pipeline import Pipeline
from ..tools import Tool, Toolbox

import_extra("mcp", "mcp")  # a missing SDK fails here, naming the extra to install

import mcp.types as types  # noqa: E402
from mcp.server import Server, ServerRequestContext  # noqa: E402
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER  # noqa: E402
from mcp.types.version import MODERN_PROTOCOL_VERSIONS  # noqa: E402
from starlette.requests import Request  # noqa: E402

from .mcp_consent import InputRequired, elicitation, request_state_security  # noqa: E402

__all__ = [
    "META_PREFIX",
    "annotations_for",
    "build_server",
    "load_pipeline",
    "reporting",
    "serve_stdio",
    "to_call_result",
]

_T = TypeVar("_T")

META_PREFIX: Final = "dev.toolwire/"
"""The prefix of toolwire's `_meta` keys (the spec reserves `modelcontextprotocol` and `mcp` prefixes)."""
_OUTCOMES: Final = {
    ResultType.ERROR: "error",
    ResultType.CANCELED: "canceled",
    ResultType.TIMEOUT: "timeout",
    ResultType.DENIED: "denied",
}


def annotations_for(tool: Tool[..., Any]) -> types.ToolAnnotations:
    """The four MCP hints of a tool, all explicit, from its `ToolMode` (see the module's table)."""
    mode = tool.mode
    read = mode is ToolMode.READ
    return types.ToolAnnotations(
        read_only_hint=read,
        destructive_hint=mode in (ToolMode.DESTRUCTIVE, ToolMode.LOCAL),
        idempotent_hint=read or tool.idempotent,
        open_world_hint=mode is ToolMode.EXTERNAL,
    )


def build_server(
    pipeline: Pipeline,
    *,
    name: str = "toolwire",
    thread_id: str | None = None,
    request_state: RequestStateSecurity | None = None,
) -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) whose tools are the pipeline's toolbox.

    Run it on a transport next, e.g. `serve_stdio`. Calls run through `pipeline`: its policy,
    filters and limits apply, and an Ask is put to the MCP client (see the module docstring).

    Args:
        pipeline: The tools with their policy and filters.
        name: The server's name in the MCP handshake.
        thread_id: The toolwire thread of the calls that come without an HTTP session (stdio:
            one process, one connection); approvals, grants and remembered denials are per
            thread. A fresh one when None. A Streamable HTTP session gets a thread of its own.
        request_state: How the 2026-07-28 generation's `requestState` is sealed; None:
            `request_state_security()` (the keys of `TOOLWIRE_MCP_STATE_KEY`, else a key of this
            process).

    Raises:
        UsageError: `TOOLWIRE_MCP_STATE_KEY` holds a key shorter than 32 bytes.
    """
    thread = thread_id or "mcp_" + secrets.token_hex(16)
    security = request_state if request_state is not None else request_state_security()
    rounds = InputRequired(pipeline, ttl=security.ttl)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.parameters_schema,
                    annotations=annotations_for(tool),
                )
                for tool in pipeline.toolbox
            ]
        )

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:  # an Ask is an `input_required` result
            outcome = await reporting(ctx, lambda observer: rounds.call(ctx, params, observer=observer))
            return outcome if isinstance(outcome, types.InputRequiredResult) else to_call_result(outcome)
        call = ToolCall(id="mcp_" + secrets.token_hex(8), name=params.name, arguments=dict(params.arguments or {}))
        asking = pipeline.with_tools(pipeline.toolbox, client=elicitation(ctx))

        async def run(observer: Observer | None) -> ToolResult:
            done = await asking.run(call, thread_id=_thread_of(ctx, thread), observer=observer)
            assert done.result is not None
            return done.result

        return to_call_result(await reporting(ctx, run))

    server = Server(name, on_list_tools=list_tools, on_call_tool=call_tool)
    # Seals the `requestState` of an `input_required` result, and verifies it when it comes back
    # (before the handler sees it): bound to the call, the server's name and the principal.
    server.middleware.append(RequestStateBoundary(security, default_audience=name))
    return server


async def reporting(ctx: ServerRequestContext[Any], run: Callable[[Observer | None], Awaitable[_T]]) -> _T:
    """Run a call with the observer that sends its progress to the MCP client; its outcome.

    Without a `progressToken` in the request, `run` gets no observer. With one, each
    `ToolProgress` of the call is sent as `notifications/progress` (`ServerSession.report_progress`)
    in the order reported; the last is sent before this returns, so before the result.
    """
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        return await run(None)
    send, receive = anyio.create_memory_object_stream[ToolProgress](math.inf)

    def observe(event: CallEvent) -> None:
        if isinstance(event, ToolProgress):
            try:
                send.send_nowait(event)
            except anyio.ClosedResourceError:
                pass  # reported by a thread still running after the call ended: its request is answered

    async def forward() -> None:
        async with receive:
            async for event in receive:
                await ctx.session.report_progress(event.progress, event.total, event.message)

    outcome: list[_T] = []  # set inside the task group, which ends when the last report is sent
    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        with send:
            outcome.append(await run(observe))
    return outcome[0]


def _thread_of(ctx: ServerRequestContext[Any], connection_thread: str) -> str:
    """The thread of a call: its Streamable HTTP session's, else the connection's (stdio)."""
    request = ctx.request
    if isinstance(request, Request) and (session := request.headers.get(MCP_SESSION_ID_HEADER)):
        # The SDK answers 404 to a session id it did not make (or that another credential made),
        # so a client cannot reach another session's thread by naming it.
        return "mcp_" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return connection_thread


def to_call_result(result: ToolResult) -> types.CallToolResult:
    """The MCP `CallToolResult` of a toolwire result (see the module docstring)."""
    if result.success:
        data = result.data
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        structured = cast("dict[str, Any]", data) if isinstance(data, dict) else None
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)
    meta: dict[str, Any] = {
        f"{META_PREFIX}outcome": _OUTCOMES[result.type],
        f"{META_PREFIX}code": result.wire_code,
        f"{META_PREFIX}payload": result.payload(),
    }
    text = result.error or result.message or _OUTCOMES[result.type]
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True, _meta=meta)


def load_pipeline(spec: str) -> Pipeline:
    """The pipeline `module:factory` names: the factory returns an `Agent`, a `Pipeline` or a `Toolbox`.

    An `Agent` serves its function tools (`agent.pipeline`: its policy and filters); a `Toolbox`
    is served with the default policy and no filters.

    Raises:
        UsageError: The factory cannot be found or called without arguments, or returns
            something else.
    """
    factory: Any = find_app(spec)
    if not callable(factory):
        raise UsageError(f"--app {spec} is a {type(factory).__name__}, not a function")
    made: object = factory()
    if inspect.iscoroutine(made):
        made.close()
        raise UsageError(f"--app {spec} is async; give a plain function returning an Agent, Pipeline or Toolbox")
    match made:
        case Agent():
            return made.pipeline
        case Pipeline():
            return made
        case Toolbox():
            return Pipeline(made)
        case _:
            raise UsageError(f"--app {spec} returned {type(made).__name__}, not an Agent, Pipeline or Toolbox")


async def serve_stdio(pipeline: Pipeline, *, name: str = "toolwire") -> None:
    """Serve the pipeline's tools to one MCP client over standard input and output, until it leaves."""
    server = build_server(pipeline, name=name)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
