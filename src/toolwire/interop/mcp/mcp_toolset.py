"""`MCPToolset`: the tools of an MCP server (over stdio or Streamable HTTP) as a toolwire toolset.

```python
everything = MCPToolset("npx", ["-y", "@modelcontextprotocol/server-everything"], prefix="ev_")
remote = MCPToolset.http("https://mcp.example.com/mcp", headers={"Authorization": "Bearer ..."})
async with Agent(model, tools=[everything, remote]) as agent:  # setup(): connect, list the tools
    await agent.run("...")
```

`setup()` connects with the official SDK's client (`mcp.Client`, which probes the 2026-07-28
protocol generation and falls back to 2025-11-25) and lists the server's tools. Each tool the
server lists becomes an `MCPTool`, run by the pipeline like any tool: its arguments are checked
locally against the server's input schema first (Error `invalid_parameters`, the server is not
asked), its mode (`hints.tool_mode`) drives the policy, the filters wrap it, and its deadline
(`timeout`) ends it as a Timeout: the SDK call is cancelled, which sends the server
`notifications/cancelled`. The server's progress notifications during a call become `ToolProgress`
events of the run, and its questions (elicitation) yes/no questions to whoever answers consent for
the run (`callbacks`). Hidden, and listed in `hidden` with the reason: tools left out by the
`tools` filter, tools that require task augmentation (`execution.taskSupport == "required"`,
which a plain call cannot run), and tools whose input schema toolwire refuses to compile.

When the server says its tool list changed, the toolset lists the tools again: the next run
binds the new list, a run already running keeps the one it bound. A new list in which two
tools get one name is refused (logged; the old list stays).

The connection is supervised (`supervisor.ServerConnection`): when it is lost (the server
exited, the HTTP endpoint went away), the calls open on it end as Errors and are never re-sent;
the next call reconnects, restarting a stdio server. After a crash of toolwire's own process,
the ledger's open MCP calls end Canceled (`resume` takes none).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

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
from .outcomes import call_value, lost_connection
from .servers import MCPServerAddress, Stdio, StreamableHTTP
from .supervisor import ConnectionLost, ServerConnection

if TYPE_CHECKING:
    import mcp.types
    from mcp.client import Transport
    from mcp.client.session import MessageHandlerFnT

    import mcp
else:
    mcp = import_extra("mcp", "mcp")

__all__ = ["MCPTool", "MCPToolset"]

_log = logging.getLogger("toolwire.interop.mcp")


class MCPTool(Tool[..., Awaitable[Any]]):
    """One tool of an MCP server as the pipeline sees it; running it sends `tools/call` (`MCPToolset.send`)."""

    runs_on = "mcp"

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

    def with_context(self, context: ToolContext) -> Callable[..., Awaitable[Any]]:
        """Send the call with its context (the arguments stay the server's, whatever their names)."""
        return functools.partial(self._toolset.send, self.mcp_name, context)

    async def _send(self, **arguments: Any) -> Any:
        # Without a context (a direct call of the tool): a bound method, not a partial kept per tool.
        return await self._toolset.send(self.mcp_name, None, **arguments)


class MCPToolset:
    """The tools of an MCP server: a subprocess spoken to over stdio, or a Streamable HTTP endpoint.

    `MCPToolset(command, args, env=, cwd=, ...)` starts the server over stdio;
    `MCPToolset.http(url, headers=, ...)` connects to a URL; `MCPToolset(address, ...)` takes
    either description (`Stdio`, `StreamableHTTP`). The other options are the same for both.

    Args:
        command: The executable that starts the server (e.g. `npx`, `uvx`, `node`), or where the
            server is (`Stdio`, `StreamableHTTP`).
        args: Its arguments (stdio).
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
        UsageError: An invalid prefix or timeout, or `args`, `env` or `cwd` beside an address.
    """

    def __init__(
        self,
        command: str | MCPServerAddress,
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
        if isinstance(command, str):
            command = Stdio(command, tuple(args), env, cwd)
        elif args or env is not None or cwd is not None:
            raise UsageError("MCPToolset: give `args`, `env` and `cwd` to the `Stdio` address, not beside it")
        ToolNames(name or command.label, (), prefix=prefix)  # checks the prefix now, not at setup
        self.address: MCPServerAddress = command
        """Where the server is and how it is reached."""
        self.name = name
        self.prefix = prefix
        self.trusted = trusted
        self.minimum_mode = minimum_mode if minimum_mode is not None or trusted else ToolMode.EXTERNAL
        self.include = None if tools is None else frozenset(tools)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        self.elicitation = elicitation
        self.hidden: dict[str, str] = {}
        """The server's tools not offered, by MCP name, with the reason (filled when the tools are listed)."""
        self.sent = 0
        """`tools/call` requests sent to the server since `setup`."""
        self._router = CallRouter(lambda: self.label)
        self.connections = 0
        """Connections opened since `setup` (2 after one restart or reconnect)."""
        self.listings = 0
        """Tool lists received since `setup`: one at setup, one more per change announced or reconnect."""
        self._listed: anyio.Event | None = None
        self._connection: ServerConnection | None = None
        self._toolbox: Toolbox | None = None
        self._reported: str | None = None

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        prefix: str = "",
        trusted: bool = False,
        minimum_mode: ToolMode | None = None,
        tools: Collection[str] | None = None,
        timeout: float | None = None,
        elicitation: bool = True,
    ) -> MCPToolset:
        """The tools of the MCP server at `url`, over Streamable HTTP; `headers` go with every request.

        The other options are the constructor's.

        Raises:
            UsageError: A URL that is not http(s), an invalid prefix or timeout.
        """
        address = StreamableHTTP(url, dict(headers or {}))
        return cls(
            address,
            name=name,
            prefix=prefix,
            trusted=trusted,
            minimum_mode=minimum_mode,
            tools=tools,
            timeout=timeout,
            elicitation=elicitation,
        )

    @property
    def label(self) -> str:
        """The server's name in messages: `name`, else the name it reported, else its command or URL."""
        return self.name or self._reported or self.address.label

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision of the open connection (`"2026-07-28"`, `"2025-11-25"`, ...); None when closed."""
        client = self._connection.current if self._connection is not None else None
        return client.protocol_version if client is not None else None

    @property
    def toolbox(self) -> Toolbox:
        """The tools offered (after `setup`; the latest list the server gave).

        Raises:
            UsageError: The toolset is not set up.
        """
        if self._toolbox is None:
            raise UsageError(
                f"MCP server {self.label!r} is not connected: use `async with agent:` (or await setup()) first"
            )
        return self._toolbox

    async def setup(self) -> None:
        """Connect (starting a stdio server), and list the server's tools.

        Raises:
            UsageError: Two of its tools get one name (give it a `prefix`, or leave one out).
            OSError: The command could not be started.
        """
        if self._connection is not None:
            raise UsageError(f"MCP server {self.label!r} is already set up")
        self.sent, self.connections, self.listings, self._toolbox = 0, 0, 0, None
        self._listed = anyio.Event()
        self._connection = ServerConnection(
            self.address.transport, self._new_client, on_open=self._opened, on_change=self._relist
        )
        try:
            await self._connection.open()
        except BaseException:
            self._connection = None
            raise

    async def teardown(self) -> None:
        """Close the connection; the SDK stops a stdio server."""
        connection, self._connection, self._toolbox = self._connection, None, None
        if connection is not None:
            await connection.aclose()

    def _new_client(self, transport: Transport, message_handler: MessageHandlerFnT) -> mcp.Client:
        """A new SDK client over `transport` (not yet connected); `mode="auto"` picks the generation."""
        elicit = self._router.elicit if self.elicitation else None
        return mcp.Client(transport, mode="auto", message_handler=message_handler, elicitation_callback=elicit)

    async def _opened(self, client: mcp.Client) -> None:
        """A connection is open (at setup, or after a restart): list the tools."""
        self.connections += 1
        info = client.server_info
        self._reported = info.name if info is not None else self._reported
        await self._relist(client)

    async def _relist(self, client: mcp.Client) -> None:
        """List the tools again; a list with a name collision is refused, except at setup (raised)."""
        try:
            self._toolbox = await self._list_tools(client)
        except UsageError as problem:
            if self._toolbox is None:
                raise
            _log.warning("MCP server %r: its new tool list is refused, the previous one stays: %s", self.label, problem)
        self.listings += 1
        if self._listed is not None:
            self._listed.set()
            self._listed = anyio.Event()

    async def wait_listed(self, count: int) -> None:
        """Wait until the tools were listed `count` times since `setup` (see `listings`).

        E.g. `await toolset.wait_listed(toolset.listings + 1)` after a call that changes the
        server's tools: the next run offers the new list.
        """
        while self.listings < count and self._listed is not None:
            await self._listed.wait()

    async def _list_tools(self, client: mcp.Client) -> Toolbox:
        """The server's tools as offered (every page), with `hidden` updated.

        Raises:
            UsageError: Two tools get one name (`hidden` is left as it was).
        """
        listed: list[mcp.types.Tool] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        hidden: dict[str, str] = {}
        offered: list[tuple[mcp.types.Tool, ArgumentValidator]] = []
        for definition in listed:
            if self.include is not None and definition.name not in self.include:
                hidden[definition.name] = "not in the toolset's `tools`"
            elif definition.execution is not None and definition.execution.task_support == "required":
                hidden[definition.name] = "requires task augmentation (taskSupport: required)"
            else:
                try:
                    offered.append((definition, check_parameters_schema(definition.input_schema)))
                except SchemaProblem as problem:
                    hidden[definition.name] = f"its input schema is refused: {problem}"
        names = ToolNames(self.label, [definition.name for definition, _ in offered], prefix=self.prefix)
        self.hidden = hidden
        for mcp_name, reason in hidden.items():
            _log.info("MCP server %r: tool %r is not offered: %s", self.label, mcp_name, reason)
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

        Reconnects first (restarting a stdio server) when the connection was lost. With the call's
        `context`, the server's progress notifications become its `ToolProgress` events (see `callbacks`).
        """
        answer = await self.send(tool, context, **arguments)
        return answer if isinstance(answer, ToolResult) else ToolResult.ok(None, answer)

    async def send(self, tool: str, context: ToolContext | None, /, **arguments: Any) -> Any:
        """`call`, as the toolset's tools run it: a Success is its value, any other outcome its `ToolResult`.

        The pipeline makes the value the call's result, as it does any tool's value.
        """
        try:
            client = await self._client()
        except ConnectionLost as lost:
            return lost_connection(self.label, tool, str(lost))
        self.sent += 1
        try:
            with self._router.calling(context) as progress:
                result = await client.call_tool(tool, arguments, progress_callback=progress)
        except mcp.MCPError as exc:
            if exc.error.code == mcp.types.CONNECTION_CLOSED:
                return self._lost(client, tool, f"the connection was lost ({exc.error.message})")
            return ToolResult.failed(None, f"MCP server {self.label!r}, tool {tool!r}: {exc.error.message}")
        except OSError as exc:
            return self._lost(client, tool, f"the connection was lost ({exc})")
        return call_value(result, server=self.label, tool=tool)

    async def _client(self) -> mcp.Client:
        """The open SDK client, reconnecting when it was lost.

        Raises:
            ConnectionLost: Not set up, or the server could not be reached again.
        """
        connection = self._connection
        if connection is None:
            raise ConnectionLost("the toolset is not set up")
        # Open: hand it out without waiting. `client()` would wait on a set anyio Event, which
        # still yields to the loop once: a whole loop iteration per call.
        client = connection.current
        return client if client is not None else await connection.client()

    def _lost(self, client: mcp.Client, tool: str, why: str) -> ToolResult:
        """The Error of a call whose connection died; the next call reconnects."""
        if self._connection is not None:
            self._connection.lose(client, why)
        return lost_connection(self.label, tool, why)

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
