"""What an MCP server sends the client during a `tools/call`, routed into toolwire's run.

- **Progress.** A server's `notifications/progress` for a call becomes a `ToolProgress` event of
  the run (`ToolContext.report_progress`): `Agent.stream()` yields it, `on_event` is told. A
  notification the SDK delivers after the call has its answer is dropped, so no progress event
  follows the call's `ToolCallFinished`. When no one listens to the run's events, the call asks
  the server for no progress (it carries no progress token).
- **Questions** (elicitation). A server's question during a call (an `elicitation/create`
  request on the 2025-11-25 generation; an `input_required` round on 2026-07-28, which the SDK
  hands to the same callback) becomes a yes/no question to whoever answers consent for the
  call's run (`ToolContext.ask`: the application's consent handler, else the person at the
  thread's client; under `toolwire serve`, a consent prompt on the connected page).

| the server asks | toolwire answers |
|---|---|
| a form without fields (`properties` empty): a plain yes/no | yes: `accept` with `{}`; no: `decline` |
| a form with one boolean field | yes: `accept` with that field `true`; no: `decline` |
| any other form (text, numbers, choices, several fields) | `decline`, logged: a consent prompt cannot fill it |
| a URL (`mode: "url"`) | `decline`, logged: toolwire opens no URL for the person |
| no one can answer, or no answer in time | `decline` (the policy's `consent_timeout`; fail closed) |
| the run is canceled, or the call ends, while asking | `cancel` |
| while no call, or several calls, of the server run (2025-11-25: the request names no call) | `decline`, logged |
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

from anyio import CancelScope

from ..._extras import import_extra
from ...errors import CallCanceled
from ...tools import ToolContext

if TYPE_CHECKING:
    import mcp.types
    from mcp.client.session import ClientRequestContext
    from mcp.shared.dispatcher import ProgressFnT
else:
    mcp = import_extra("mcp", "mcp")

__all__ = ["CallRouter", "confirmation"]

_log = logging.getLogger("toolwire.interop.mcp")

_asking: ContextVar[ToolContext | None] = ContextVar("toolwire_mcp_call", default=None)
"""The call whose `tools/call` runs in this task (the 2026-07-28 rounds run inside it)."""


def confirmation(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The content of a yes to a form with this requested schema; None when a yes cannot fill it."""
    properties: object = schema.get("properties") or {}
    if not isinstance(properties, dict):
        return None
    fields = cast(dict[str, object], properties)
    if not fields:
        return {}
    match list(fields.items()):
        case [(name, {"type": "boolean"})]:
            return {name: True}
        case _:
            return None


class _Call:
    """One running call: its context, and the questions it has open (cancelled when it ends)."""

    __slots__ = ("context", "open")

    def __init__(self, context: ToolContext) -> None:
        self.context = context
        self.open: set[CancelScope] = set()


class CallRouter:
    """Routes what a server sends during its calls to the call it belongs to (one per `MCPToolset`).

    Args:
        server: The server's label in log lines, read when one is written.
    """

    def __init__(self, server: Callable[[], str]) -> None:
        self._server = server
        self._running: dict[int, _Call] = {}

    @contextmanager
    def calling(self, context: ToolContext | None) -> Generator[ProgressFnT | None]:
        """Around one `tools/call`: yields its `progress_callback` (None when no one hears progress).

        While the block runs, the server's progress and questions go to `context`; when it ends,
        a question still open is cancelled.
        """
        if context is None:
            yield None
            return
        call = _Call(context)
        self._running[id(call)] = call
        token = _asking.set(context)
        try:
            yield self._reporter(call) if context.reports_progress else None
        finally:
            _asking.reset(token)
            del self._running[id(call)]
            for scope in call.open:
                scope.cancel()

    def _reporter(self, call: _Call) -> ProgressFnT:
        """The `progress_callback` of `call`: its progress while it runs, to its context."""

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if id(call) in self._running:
                call.context.report_progress(progress, total, message)

        return report

    async def elicit(
        self, context: ClientRequestContext, params: mcp.types.ElicitRequestParams
    ) -> mcp.types.ElicitResult | mcp.types.ErrorData:
        """The SDK's `elicitation_callback`: ask the call's consent channel (see the module's table)."""
        call = self._call()
        if call is None:
            how = "no call of it is running" if not self._running else "several of its calls are running"
            return self._decline(f"the question cannot be tied to a call ({how})", params.message)
        if isinstance(params, mcp.types.ElicitRequestURLParams):
            return self._decline("it asks the user to open a URL, which toolwire does not do", params.message)
        content = confirmation(params.requested_schema)
        if content is None:
            fields = ", ".join(map(str, params.requested_schema.get("properties") or {}))
            return self._decline(f"its form asks for {fields}; a consent prompt answers only yes or no", params.message)
        scope = CancelScope()
        call.open.add(scope)
        answer = None
        try:
            with scope:
                answer = await call.context.ask(f"MCP server {self._server()!r} asks: {params.message}")
        except CallCanceled:
            pass
        finally:
            call.open.discard(scope)
        if answer is None:  # the run was canceled, or the call ended, before the answer
            return mcp.types.ElicitResult(action="cancel")
        if answer.allow:
            return mcp.types.ElicitResult(action="accept", content=content)
        return mcp.types.ElicitResult(action="decline")

    def _call(self) -> _Call | None:
        """The call a question belongs to: the one asking in this task, else the only one running."""
        context = _asking.get()
        for call in self._running.values():
            if call.context is context:
                return call
        if len(self._running) == 1:
            return next(iter(self._running.values()))
        return None

    def _decline(self, why: str, message: str) -> mcp.types.ElicitResult:
        _log.warning("MCP server %r asked %r; declined: %s", self._server(), message, why)
        return mcp.types.ElicitResult(action="decline")
