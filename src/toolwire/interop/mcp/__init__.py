"""MCP servers' tools as a toolwire toolset (the `mcp` extra: `pip install 'toolwire[mcp]'`).

See docs/mcp.md. Importing this package imports the official MCP SDK, or fails naming the extra.
"""

from __future__ import annotations

from .config_file import ConfiguredServer as ConfiguredServer
from .config_file import MCPServerConfig as MCPServerConfig
from .config_file import MCPServersFile as MCPServersFile
from .config_file import load_servers as load_servers
from .config_file import read_servers as read_servers
from .hints import annotation_mode as annotation_mode
from .hints import tool_mode as tool_mode
from .mcp_toolset import MCPTool as MCPTool
from .mcp_toolset import MCPToolset as MCPToolset
from .names import ToolNames as ToolNames
from .names import sanitize_tool_name as sanitize_tool_name
from .servers import MCPServerAddress as MCPServerAddress
from .servers import Stdio as Stdio
from .servers import StreamableHTTP as StreamableHTTP

__all__ = [
    "ConfiguredServer",
    "MCPServerAddress",
    "MCPServerConfig",
    "MCPServersFile",
    "MCPTool",
    "MCPToolset",
    "Stdio",
    "StreamableHTTP",
    "ToolNames",
    "annotation_mode",
    "load_servers",
    "read_servers",
    "sanitize_tool_name",
    "tool_mode",
]
