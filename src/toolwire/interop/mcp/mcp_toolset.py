"""`MCPToolset`: the tools of an MCP server (over stdio) as a toolwire toolset.

```python
everything = MCPToolset("npx", ["-y", "@modelcontextprotocol/server-everything"], prefix="ev_")
async with Agent(model, tools=[everything]) as agent:  # setup(): start the server, list its tools
    await agent.run("...")
```

`setup()` starts the server, connects with the official SDK's client and lists its tools once.
Each tool the server lists becomes an `MCPTool`, run by the pipeline like any tool: its arguments
are checked locally against the server's input schema first (Error `invalid_parameters`, the
server is not asked), its mode (`hints.tool_mode`) drives the policy, the filters wrap it, and
its deadline (`timeout`) ends it as a Timeout: the SDK call is cancelled, which sends the server
`notifications/cancelled`. The server's progress notifications during a call become `ToolProgress`
events of the run, and its questions (elicitation) yes/no questions to whoever answers consent for
the run (`callbacks`). Hidden, and listed in `hidden` with the reason: tools left out by the
`tools` filter, tools that require task augmentation (`execution.taskSupport == "required"`,
which a plain call cannot run), and tools whose input schema toolwire refuses to compile.

A call is never re-sent: once the connection is lost, calls end as Errors until the agent is set
up again, and after a crash the ledger's open MCP calls end Canceled (`resume` takes none).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._extras import import_extra
from ...client_tools.patterns import SchemaProblem
from ...client_tools.validation import ArgumentValidator, SchemaParameters, check_parameters_schema
from ...envelopes import ToolResult
from ...errors import UsageError
from ...modes import ModeDecision, ToolMode
from ...store import LedgerEntry
from ...tools import DEFAULT_TIMEOUT, Tool, Toolbox, ToolContext
from ...toolsets import RunScope
from .callbacks import CallRouter
from .hints import tool_mode
from .names import ToolNames
from .outcomes import call_result, lost_connection

if TYPE_CHECKING:
    import mcp.types
    from mcp.client.stdio import StdioServerParameters

    import mcp
else:
    mcp = import_extra("mcp", "mcp")
    StdioServerParameters = import_extra("mcp.client.stdio", "mcp").StdioServerParameters

__all__ = ["MCPTool", "MCPToolset"]

_log = logging.getLogger("toolwire.interop.mcp")


class MCPTool(Tool[..., Awaitable[ToolResult]]):
    """One tool of an MCP server as the pipeline sees it; running it sends `tools/call`."""

    def __init__(
        self,
        definition: mcp.types.Tool,
        *,
        name: str,
        toolset: MCPToolset,
        validator: ArgumentValidator,
        decision: ModeDecision,
        timeout: float,
    ) -> None:
        self.definition = definition
        """The tool as the server listed it."""
        self.mcp_name = definition.name
        """The name the server knows the tool by."""
        self._toolset = toolset
        description = definition.description or definition.title or ""
        idempotent = (
            toolset.trusted and definition.annotations is not None and bool(definition.annotations.idempotent_hint)
        )
        super().__init__(
            self._send,
            name=name,
            description=description,
            timeout=timeout,
            idempotent=idempotent,
            parameters=SchemaParameters(_without_dialect(definition.input_schema), description, validator),
        )
        self.mode_decision = decision
        self.takes_context = True  # the call's context carries its progress events

    def with_context(self, context: ToolContext) -> Callable[..., Awaitable[ToolResult]]:
        """Send the call with its context (the arguments stay the server's, whatever their names)."""
        return functools.partial(self._send_with, context)

    async def _send(self, **arguments: Any) -> ToolResult:
        return await self._toolset.call(self.mcp_name, arguments)

    async def _send_with(self, context: ToolContext, /, **arguments: Any) -> ToolResult:
        return await self._toolset.call(self.mcp_name, arguments, context)


class MCPToolset:
    """The tools of an MCP server started as a subprocess and spoken to over stdio.

    Args:
        command: The executable that starts the server (e.g. `npx`, `uvx`, `node`).
        args: Its arguments.
        env: Environment variables for the server, over the SDK's safe defaults (PATH, HOME, ...).
        cwd: The server's working directory.
        name: The server's label in messages and mode reasons (default: the name it reports).
        prefix: Put before every tool name the model sees (e.g. `"fs_"`); up to 32 letters,
            digits, '_' or '-'.
        trusted: The server's annotations decide its tools' modes; else they can only raise the
            risk the name patterns give (see `toolwire.interop.mcp.hints`).
        minimum_mode: The floor of every tool's mode; default `external` for an untrusted server
            and none for a trusted one (pass `ToolMode.READ` for no floor).
        tools: Offer only these tools (MCP names); default all.
        timeout: Seconds a call may run before it ends as a Timeout (default 30).
        elicitation: Declare the elicitation capability: the server's questions during a call go
            to whoever answers consent for the run, as yes/no questions (see `callbacks`); with
            no one to ask they are declined. False: not declared (the server then does without,
            or hides the tools that need it).

    Raises:
        UsageError: An invalid prefix or timeout.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        prefix: str = "",
        trusted: bool = False,
        minimum_mode: ToolMode | None = None,
        tools: Collection[str] | None = None,
        timeout: float | None = None,
        elicitation: bool = True,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise UsageError("MCPToolset: timeout must be a positive number of seconds")
        ToolNames(name or command, (), prefix=prefix)  # checks the prefix now, not at setup
        self.parameters = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env is not None else None, cwd=cwd
        )
        self.name = name
        self.prefix = prefix
        self.trusted = trusted
        self.minimum_mode = minimum_mode if minimum_mode is not None or trusted else ToolMode.EXTERNAL
        self.include = None if tools is None else frozenset(tools)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        self.elicitation = elicitation
        self.hidden: dict[str, str] = {}
        """The server's tools not offered, by MCP name, with the reason (filled by `setup`)."""
        self.sent = 0
        """`tools/call` requests sent to the server since `setup`."""
        self._client: mcp.Client | None = None
        self._router = CallRouter(lambda: self.label)
        self._toolbox: Toolbox | None = None
        self._lost: str | None = None
        self._reported: str | None = None

    @property
    def label(self) -> str:
        """The server's name in messages: `name`, else the name it reported, else the command."""
        return self.name or self._reported or self.parameters.command

    @property
    def toolbox(self) -> Toolbox:
        """The tools offered (after `setup`).

        Raises:
            UsageError: The toolset is not set up.
        """
        if self._toolbox is None:
            raise UsageError(
                f"MCP server {self.label!r} is not connected: use `async with agent:` (or await setup()) first"
            )
        return self._toolbox

    async def setup(self) -> None:
        """Start the server, connect, and list its tools.

        Raises:
            UsageError: Two of its tools get one name (give it a `prefix`, or leave one out).
            OSError: The command could not be started.
        """
        if self._client is not None:
            raise UsageError(f"MCP server {self.label!r} is already set up")
        client = mcp.Client(self.parameters, elicitation_callback=self._router.elicit if self.elicitation else None)
        await client.__aenter__()
        self._client, self._lost, self.sent = client, None, 0
        info = client.server_info
        self._reported = info.name if info is not None else None
        try:
            self._toolbox = await self._list_tools(client)
        except BaseException:
            await self.teardown()
            raise

    async def teardown(self) -> None:
        """Close the connection; the SDK stops the server."""
        client, self._client, self._toolbox = self._client, None, None
        if client is not None:
            await client.__aexit__(None, None, None)

    async def _list_tools(self, client: mcp.Client) -> Toolbox:
        listed: list[mcp.types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self.hidden = {}
        offered: list[tuple[mcp.types.Tool, ArgumentValidator]] = []
        for definition in listed:
            if self.include is not None and definition.name not in self.include:
                self.hidden[definition.name] = "not in the toolset's `tools`"
            elif definition.execution is not None and definition.execution.task_support == "required":
                self.hidden[definition.name] = "requires task augmentation (taskSupport: required)"
            else:
                try:
                    offered.append((definition, check_parameters_schema(definition.input_schema)))
                except SchemaProblem as problem:
                    self.hidden[definition.name] = f"its input schema is refused: {problem}"
        for mcp_name, reason in self.hidden.items():
            _log.info("MCP server %r: tool %r is not offered: %s", self.label, mcp_name, reason)
        names = ToolNames(self.label, [definition.name for definition, _ in offered], prefix=self.prefix)
        toolbox = Toolbox()
        for definition, validator in offered:
            decision = tool_mode(
                definition.name,
                definition.annotations,
                server=self.label,
                trusted=self.trusted,
                minimum=self.minimum_mode,
            )
            toolbox.add(
                MCPTool(
                    definition,
                    name=names.provider_name(definition.name),
                    toolset=self,
                    validator=validator,
                    decision=decision,
                    timeout=self.timeout,
                )
            )
        return toolbox

    async def call(self, tool: str, arguments: dict[str, Any], context: ToolContext | None = None) -> ToolResult:
        """Send one `tools/call` (arguments already validated) and map its answer (see `outcomes`).

        With the call's `context`, the server's progress notifications become its `ToolProgress`
        events (see `callbacks`).
        """
        client = self._client
        if client is None or self._lost is not None:
            return lost_connection(self.label, tool, self._lost or "the toolset is not set up")
        self.sent += 1
        try:
            with self._router.calling(context) as progress:
                result = await client.call_tool(tool, arguments, progress_callback=progress)
        except mcp.MCPError as exc:
            if exc.error.code == mcp.types.CONNECTION_CLOSED:
                self._lost = f"the connection was lost ({exc.error.message})"
                return lost_connection(self.label, tool, self._lost)
            return ToolResult.failed(None, f"MCP server {self.label!r}, tool {tool!r}: {exc.error.message}")
        except OSError as exc:
            self._lost = f"the connection was lost ({exc})"
            return lost_connection(self.label, tool, self._lost)
        return call_result(result, server=self.label, tool=tool)

    async def bind(self, scope: RunScope) -> Toolbox | None:
        """The server's tools for this run; None when it offers none.

        Raises:
            UsageError: The toolset is not set up, or one of its tools has the name of a tool bound before it.
        """
        toolbox = self.toolbox
        if clash := sorted(set(scope.reserved) & set(toolbox.names)):
            raise UsageError(
                f"MCP server {self.label!r}: tool(s) {', '.join(clash)} have the name of another toolset's tool; "
                "give the server a `prefix`"
            )
        return toolbox if len(toolbox) else None

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """None: MCP answers are not saved apart from the ledger's result."""
        return None


def _without_dialect(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema as the model is shown it: without its `$schema` dialect."""
    return {key: value for key, value in schema.items() if key != "$schema"}
