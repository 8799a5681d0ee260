"""What an MCP server sends the client during a `tools/call`, routed into toolwire's run.

- **Progress.** A server's `notifications/progress` for a call becomes a `ToolProgress` event of
  the run (`ToolContext.report_progress`): `Agent.stream()` yields it, `on_event` is told. A
  notification the SDK delivers after the call has its answer is dropped, so no progress event
  follows the call's `ToolCallFinished`.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ...tools import ToolContext

if TYPE_CHECKING:
    from mcp.shared.dispatcher import ProgressFnT

__all__ = ["CallRouter"]


class CallRouter:
    """Routes what a server sends during its calls to the call it belongs to (one per `MCPToolset`)."""

    @contextmanager
    def calling(self, context: ToolContext | None) -> Generator[ProgressFnT | None]:
        """Around one `tools/call`: yields its `progress_callback` (None without a context).

        The callback reports to `context` until the block ends.
        """
        if context is None:
            yield None
            return
        running = [True]

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if running[0]:
                context.report_progress(progress, total, message)

        try:
            yield report
        finally:
            running[0] = False
