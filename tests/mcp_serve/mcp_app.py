"""The application `toolwire mcp serve --app mcp_app:factory` serves in tests/mcp_serve/."""

from __future__ import annotations

import anyio

from toolwire import PermissionPolicy, Pipeline, Toolbox, ToolContext

ran: list[str] = []
"""The tools that ran in this process, in order (`get_runs` tells)."""


def factory() -> Pipeline:
    """One tool per mode, a slow one, a denied one, two reporting progress and the record of what ran."""
    toolbox = Toolbox()

    @toolbox.tool(mode="read")
    def get_greeting(name: str) -> str:
        """Greet someone.

        Args:
            name: Who to greet.
        """
        ran.append("get_greeting")
        return f"Hello, {name}!"

    @toolbox.tool(mode="read")
    def get_runs() -> dict[str, list[str]]:
        """The tools that ran so far."""
        return {"ran": list(ran)}

    @toolbox.tool(mode="safe_write")
    def add_note(text: str) -> dict[str, object]:
        """Add a note."""
        ran.append("add_note")
        return {"id": 1, "text": text}

    @toolbox.tool(mode="safe_write", idempotent=True)
    def set_title(title: str) -> str:
        """Set the title."""
        ran.append("set_title")
        return title

    @toolbox.tool(mode="destructive")
    def drop_table(table: str) -> str:
        """Drop a table (the policy denies it)."""
        ran.append("drop_table")
        return f"dropped {table}"

    @toolbox.tool(mode="external")
    def lookup_rate(currency: str) -> float:
        """Look up an exchange rate."""
        ran.append("lookup_rate")
        return 1.08

    @toolbox.tool(mode="local")
    def local_touch(path: str) -> str:
        """Touch a file on this machine (the default preset asks first)."""
        ran.append("local_touch")
        return f"touched {path}"

    @toolbox.tool(mode="read", timeout=0.2)
    async def get_forever() -> str:
        """Never answers: its deadline ends it."""
        await anyio.Event().wait()
        return "never"

    @toolbox.tool(mode="read")
    async def get_pages(ctx: ToolContext, count: int) -> int:
        """Read `count` pages, reporting each one as progress."""
        for page in range(1, count + 1):
            ctx.report_progress(page, count, f"page {page}")
        return count

    @toolbox.tool(mode="read")
    def get_pages_in_thread(ctx: ToolContext, count: int) -> int:
        """`get_pages` as a plain function (it runs in a worker thread)."""
        for page in range(1, count + 1):
            ctx.report_progress(page, count, f"page {page}")
        return count

    @toolbox.tool(mode="read")
    async def get_confirmed(ctx: ToolContext, item: str) -> str:
        """Read `item`, then ask the person whether to go on (a question while the call runs)."""
        ran.append("get_confirmed")
        answer = await ctx.ask(f"Go on with {item}?")
        return "went on" if answer.allow else f"stopped: {answer.reason}"

    return Pipeline(toolbox, policy=PermissionPolicy(deny=["drop_*"]))
