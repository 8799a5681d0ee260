"""MCP servers from a JSON file, in the shape other MCP hosts use, as toolsets.

```json
{
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "collapsed": true},
    "search": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}
  }
}
```

The keys of Claude Desktop, Cursor and Claude Code (`command`, `args`, `env`, `cwd`; `url`,
`headers`; `type`) mean what they mean there; toolwire's own (`trusted`, `minimumMode`,
`collapsed`, `description`, `tools`, `prefix`, `timeout`, `elicitation`) are `MCPToolset`'s
options. Validation is strict: an unknown key, a value of the wrong type, `url` beside `command`,
an SSE server, a `${VAR}` that is not set: each is refused with the file, the server and the key
in the message. `${VAR}` and `${VAR:-default}` are expanded (as Claude Code does) in `command`,
`args`, `env`, `cwd`, `url` and `headers`, so secrets stay in the environment, not in the file.

`read_servers(path)` checks the file; `load_servers(path)` gives the toolsets (a
`ConfiguredServer` each: an `MCPToolset`, in a `Collapsed` container when `collapsed` is true,
whose failure to start names the server and the file), for `Agent(tools=[...])` or
`agent.add_toolsets(...)`; `toolwire serve --mcp-servers FILE` does the latter.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, model_validator
from pydantic_core import ErrorDetails

from ...envelopes import ToolResult
from ...errors import UsageError
from ...modes import ToolMode
from ...store import LedgerEntry
from ...toolsets import BoundToolset, RunScope
from ...toolsets.collapsed import Collapsed
from .mcp_toolset import MCPToolset
from .names import ToolNames
from .supervisor import describe

__all__ = ["ConfiguredServer", "MCPServerConfig", "MCPServersFile", "load_servers", "read_servers"]

_TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_VARIABLE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_EXPANDED: Final = ("command", "args", "env", "cwd", "url", "headers")


class MCPServerConfig(BaseModel):
    """One server of the file: where it is (a command, or a URL) and how toolwire offers its tools."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    type: Literal["stdio", "http", "streamable-http", "sse"] | None = None
    """How to reach it; optional: `command` means stdio and `url` Streamable HTTP (`sse` is refused)."""
    command: str | None = None
    """The executable that starts a stdio server (`npx`, `uvx`, `node`, ...)."""
    args: list[str] = Field(default_factory=list[str])
    env: dict[str, str] = Field(default_factory=dict[str, str])
    """Variables over the SDK's safe defaults (PATH, HOME, ...), not the whole environment."""
    cwd: str | None = None
    """The server's working directory; relative to the file's directory."""
    url: str | None = None
    """A Streamable HTTP server's endpoint."""
    headers: dict[str, str] = Field(default_factory=dict[str, str])
    """Sent with every request to a URL."""
    trusted: StrictBool = False
    minimum_mode: ToolMode | None = Field(default=None, alias="minimumMode")
    collapsed: StrictBool = False
    """Offer the server's tools as one container named like the server, which the model expands."""
    description: str | None = None
    """The container's description (with `collapsed`)."""
    tools: list[str] | None = None
    """Offer only these tools (MCP names)."""
    prefix: str = ""
    timeout: Annotated[float, Field(gt=0)] | None = None
    elicitation: StrictBool = True

    @model_validator(mode="after")
    def _one_address(self) -> Self:
        if self.type == "sse":
            raise ValueError("the SSE transport is not supported: give the server's Streamable HTTP endpoint as 'url'")
        if (self.command is None) == (self.url is None):
            raise ValueError("give either 'command' (a stdio server) or 'url' (Streamable HTTP), not both or neither")
        if self.command is not None:
            if self.type not in (None, "stdio"):
                raise ValueError(f"'type' {self.type!r} needs 'url', not 'command'")
            if self.headers:
                raise ValueError("key 'headers' is for a 'url', not for a stdio server ('command'): it takes 'env'")
        else:
            if self.type == "stdio":
                raise ValueError("'type' 'stdio' needs 'command', not 'url'")
            if stdio := [key for key in ("args", "env", "cwd") if key in self.model_fields_set]:
                raise ValueError(f"key {stdio[0]!r} is for a stdio server ('command'), not for a 'url'")
        if self.description is not None and not self.collapsed:
            raise ValueError("'description' describes the container: set 'collapsed': true too")
        return self

    def expanded(self, environ: Mapping[str, str]) -> MCPServerConfig:
        """This entry with `${VAR}` and `${VAR:-default}` replaced in its addresses' strings.

        Raises:
            ValueError: A variable without a default is not set (the message names it and the key).
        """
        update: dict[str, Any] = {}
        for key in _EXPANDED:
            value = getattr(self, key)
            try:
                update[key] = _expand(value, environ)
            except KeyError as missing:
                raise ValueError(
                    f"key {key!r}: environment variable {missing.args[0]!r} is not set "
                    f"(set it, or write ${{{missing.args[0]}:-default}})"
                ) from None
        return self.model_copy(update=update)

    def toolset(self, name: str, *, base: Path | None = None) -> MCPToolset | Collapsed:
        """The server as a toolset: an `MCPToolset` named `name`, in a `Collapsed` container if asked.

        Args:
            name: The server's name in the file: its label in messages, and the container's tool name.
            base: The directory a relative `cwd` is taken from (the file's).

        Raises:
            UsageError: An option `MCPToolset` refuses (a bad prefix, URL or container name).
        """
        options: dict[str, Any] = {
            "name": name,
            "prefix": self.prefix,
            "trusted": self.trusted,
            "minimum_mode": self.minimum_mode,
            "tools": self.tools,
            "timeout": self.timeout,
            "elicitation": self.elicitation,
        }
        if self.url is not None:
            toolset = MCPToolset.http(self.url, headers=self.headers, **options)
        else:
            assert self.command is not None  # one address (checked)
            cwd = None if self.cwd is None else (base or Path()) / self.cwd
            env = self.env or None
            toolset = MCPToolset(self.command, self.args, env=env, cwd=cwd, **options)
        if not self.collapsed:
            return toolset
        description = self.description if self.description is not None else f"Tools of the MCP server '{name}'."
        return Collapsed(toolset, name=name, description=description)


class MCPServersFile(BaseModel):
    """The whole file: `{"mcpServers": {"name": {...}, ...}}`."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    mcp_servers: dict[str, MCPServerConfig] = Field(alias="mcpServers")


def read_servers(path: str | Path, *, environ: Mapping[str, str] | None = None) -> dict[str, MCPServerConfig]:
    """Read and check an MCP servers file; nothing is started.

    Args:
        path: The JSON file.
        environ: Where `${VAR}` is looked up (`os.environ` by default).

    Returns:
        The servers by name, in the file's order, with `${VAR}` expanded.

    Raises:
        UsageError: The file cannot be read, is not JSON, or breaks a rule; the message names the
            file, the server and the key.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"MCP servers file {path}: cannot be read ({exc.strerror or exc})") from None
    try:
        parsed = MCPServersFile.model_validate_json(text)
    except ValidationError as exc:
        raise UsageError(f"MCP servers file {path}: {_problem(_first(exc.errors()))}") from None
    environ = os.environ if environ is None else environ
    servers: dict[str, MCPServerConfig] = {}
    for name, server in parsed.mcp_servers.items():
        if problem := _name_problem(name, server):
            raise UsageError(f"MCP servers file {path}: server {name!r}: {problem}")
        try:
            servers[name] = server.expanded(environ)
        except ValueError as exc:
            raise UsageError(f"MCP servers file {path}: server {name!r}: {exc}") from None
    return servers


class ConfiguredServer:
    """A server of an MCP servers file as a toolset: its `MCPToolset`, collapsed or not.

    Everything is the wrapped toolset's, except that a failure to start (setup) is a `UsageError`
    naming the server and the file.
    """

    def __init__(self, name: str, toolset: MCPToolset | Collapsed, *, path: Path) -> None:
        self.name = name
        """The server's name in the file."""
        self.toolset = toolset
        """What the agent is offered: the `MCPToolset`, or its `Collapsed` container."""
        self.path = path
        """The file it comes from."""

    @property
    def mcp(self) -> MCPToolset:
        """The server's `MCPToolset` (its `toolbox`, `hidden`, `sent`, ...)."""
        toolset = self.toolset
        if isinstance(toolset, Collapsed):
            assert isinstance(toolset.toolset, MCPToolset)  # made by `MCPServerConfig.toolset`
            return toolset.toolset
        return toolset

    async def setup(self) -> None:
        """Start the server (a stdio one) or connect, and list its tools.

        Raises:
            UsageError: It did not start, or was refused (two of its tools get one name).
        """
        try:
            await self.toolset.setup()
        except UsageError as exc:
            raise UsageError(f"MCP server {self.name!r} of {self.path}: {exc}") from exc
        except Exception as exc:
            raise UsageError(f"MCP server {self.name!r} of {self.path} did not start: {describe(exc)}") from exc

    async def teardown(self) -> None:
        """Close the connection (stopping a stdio server)."""
        await self.toolset.teardown()

    async def bind(self, scope: RunScope) -> BoundToolset | None:
        """The wrapped toolset's binding."""
        return await self.toolset.bind(scope)

    def saved_result(self, entry: LedgerEntry) -> ToolResult | None:
        """The wrapped toolset's saved result."""
        return self.toolset.saved_result(entry)


def load_servers(path: str | Path, *, environ: Mapping[str, str] | None = None) -> list[ConfiguredServer]:
    """The servers of an MCP servers file as toolsets, in the file's order (see `read_servers`).

    Give them to an agent (`Agent(tools=[*toolbox, *load_servers(path)])` or
    `agent.add_toolsets(load_servers(path))`); `async with agent` starts them.

    Raises:
        UsageError: The file is refused (see `read_servers`), or an option is (a bad prefix or URL).
    """
    path = Path(path)
    servers = read_servers(path, environ=environ)
    toolsets: list[ConfiguredServer] = []
    for name, server in servers.items():
        try:
            toolsets.append(ConfiguredServer(name, server.toolset(name, base=path.parent), path=path))
        except UsageError as exc:
            raise UsageError(f"MCP servers file {path}: server {name!r}: {exc}") from None
    return toolsets


def _name_problem(name: str, server: MCPServerConfig) -> str | None:
    """Why a server's name or prefix cannot be used, if it cannot."""
    if not name.strip():
        return "a server needs a name"
    if server.collapsed and not _TOOL_NAME.match(name):
        return "with 'collapsed', the name is the container's tool name: use 1-64 letters, digits, '_' or '-'"
    try:
        ToolNames(name, (), prefix=server.prefix)
    except UsageError as exc:
        return f"key 'prefix': {exc}".replace(f"MCP server {name!r}: ", "")
    return None


def _expand(value: Any, environ: Mapping[str, str]) -> Any:
    """`value` (a string, or a list or map of them) with `${VAR}` and `${VAR:-default}` replaced.

    Raises:
        KeyError: A variable without a default is not set.
    """
    if isinstance(value, str):

        def replace(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is None:
                raise KeyError(name)
            return default

        return _VARIABLE.sub(replace, value)
    if isinstance(value, list):
        return [_expand(item, environ) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {key: _expand(item, environ) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType]
    return value


_SERVER_KEYS: Final = sorted(field.alias or name for name, field in MCPServerConfig.model_fields.items())


def _first(errors: list[ErrorDetails]) -> ErrorDetails:
    """The error to report: a top-level unknown key (e.g. VS Code's `servers`) before the rest."""
    return next((e for e in errors if len(e["loc"]) == 1 and e["type"] == "extra_forbidden"), errors[0])


def _problem(error: ErrorDetails) -> str:
    """One pydantic error as a sentence naming the server and the key."""
    location = [str(part) for part in error["loc"]]
    if error["type"] == "json_invalid":
        return f"not valid JSON: {error['msg'].removeprefix('Invalid JSON: ')}"
    if error["type"] == "missing" and location == ["mcpServers"]:
        return 'no \'mcpServers\': the file is {"mcpServers": {"NAME": {...}, ...}}'
    if not location or location[0] != "mcpServers":
        if location and error["type"] == "extra_forbidden":
            hint = " (the servers go under 'mcpServers')" if location[0] in ("servers", "mcp_servers") else ""
            return f"unknown key {location[0]!r}: the file holds 'mcpServers' only{hint}"
        return f'the file must be a JSON object {{"mcpServers": {{...}}}} ({error["msg"]})'
    if len(location) == 1:
        return f"'mcpServers' must be an object of servers by name ({error['msg']})"
    server, keys = location[1], location[2:]
    where = f"server {server!r}"
    if not keys:
        message = error["msg"].removeprefix("Value error, ")
        return f"{where}: {message}" if error["type"] == "value_error" else f"{where}: must be an object ({message})"
    key = keys[0]
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(key, _SERVER_KEYS, n=1)
        known = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(_SERVER_KEYS)}"
        return f"{where}: unknown key {key!r} ({known})"
    detail = f" (at {'.'.join(keys[1:])})" if len(keys) > 1 else ""
    return f"{where}: key {key!r}{detail}: {error['msg']}"
