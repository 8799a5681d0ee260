"""Filters: the chain every allowed call passes through, built-in ones and one of your own.

The pipeline below wraps each call in, outermost first:

1. `keep_to_the_workspace`, our own filter: cancels a call whose `path` leaves the workspace;
2. `Audit`: one log record per call that got past it, however it ended (printed here);
3. `RateLimit`: `search_web` at most twice a minute;
4. `Retry`: runs a read tool again after a transient failure (a `ConnectionError` here);
5. `Cache`: answers a repeated read from memory, without running the tool.

    python examples/filters.py
"""

from __future__ import annotations

import logging

import anyio

from toolwire import Audit, Cache, InvocationContext, Pipeline, RateLimit, Retry, Toolbox, ToolCall, ToolError
from toolwire.pipeline import Next

toolbox = Toolbox()
attempts: dict[str, int] = {}


@toolbox.tool
def get_stock_price(symbol: str) -> float:
    """The price of a stock; the exchange is busy the first time each symbol is asked for."""
    attempts[symbol] = attempts.get(symbol, 0) + 1
    if attempts[symbol] == 1:
        # A transient failure: `Retry` may run the call again. (An exception named in
        # `Retry(retry_on=...)`, ConnectionError by default, counts as transient too.)
        raise ToolError("The exchange is busy; try again.", code="busy", retryable=True)
    return 123.4


@toolbox.tool
def search_web(query: str) -> list[str]:
    """Search the web (read: the `search_` prefix)."""
    return [f"https://example.org/?q={query}"]


@toolbox.tool
def read_file(path: str) -> str:
    """Read a file of the workspace."""
    return f"contents of {path}"


async def keep_to_the_workspace(ctx: InvocationContext, call_next: Next) -> None:
    """A filter of our own: a call whose `path` is outside the workspace never reaches the tool."""
    path = ctx.arguments.get("path")
    if isinstance(path, str) and (path.startswith("/") or ".." in path.split("/")):
        ctx.cancel = True  # the call ends as Canceled, by `policy`
        return
    await call_next(ctx)  # the rest of the chain, then the tool


class PrintAudit(logging.Handler):
    """Show a few fields of each Audit record (all of them are in `record.toolwire`)."""

    def emit(self, record: logging.LogRecord) -> None:
        fields = record.__dict__["toolwire"]
        print(f"  audit: {fields['tool']} {fields['call_id']} {fields['decision']} -> {fields['outcome']}")


async def main() -> None:
    audit_log = logging.getLogger("example.audit")
    audit_log.addHandler(PrintAudit())
    audit_log.setLevel(logging.INFO)
    pipeline = Pipeline(
        toolbox,
        filters=[
            keep_to_the_workspace,
            Audit(audit_log),
            RateLimit({"search_*": (2, 60.0)}),
            Retry(backoff=0.01),
            Cache(),
        ],
    )
    calls = [
        ToolCall(id="c1", name="get_stock_price", arguments={"symbol": "ACME"}),  # retried once
        ToolCall(id="c2", name="get_stock_price", arguments={"symbol": "ACME"}),  # from the cache
        ToolCall(id="c3", name="search_web", arguments={"query": "toolwire"}),
        ToolCall(id="c4", name="search_web", arguments={"query": "filters"}),
        ToolCall(id="c5", name="search_web", arguments={"query": "one too many"}),  # rate limited
        ToolCall(id="c6", name="read_file", arguments={"path": "notes/todo.txt"}),
        ToolCall(id="c7", name="read_file", arguments={"path": "../../etc/passwd"}),  # canceled
    ]
    for call in calls:
        ctx = await pipeline.run(call, thread_id="demo")  # `invoke()` returns just `ctx.result`
        assert ctx.result is not None
        # What the filters left in `ctx.properties`: Retry's attempts, Cache's hit or miss.
        notes = ", ".join(f"{key}={ctx.properties[key]}" for key in ("attempts", "cache") if key in ctx.properties)
        print(f"{call.id} {call.name} -> {ctx.result.type.name}: {ctx.result.payload()}  {notes}".rstrip())


if __name__ == "__main__":
    anyio.run(main)
