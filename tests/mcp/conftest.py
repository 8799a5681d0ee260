"""The MCP reference server the tests run against: `@modelcontextprotocol/server-everything`.

Pinned in `tests/mcp/package.json` (and its lock); `npm ci --prefix tests/mcp` installs it
(`.ci/run` does). The tests skip only when Node.js is missing.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
EVERYTHING = HERE / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture
def everything() -> dict[str, Any]:
    """The `command` and `args` of an `MCPToolset` that starts server-everything over stdio."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed: the MCP tests run @modelcontextprotocol/server-everything with node")
    if not EVERYTHING.exists():
        pytest.fail("server-everything is not installed: run `npm ci --no-audit --no-fund --prefix tests/mcp`")
    return {"command": node, "args": [str(EVERYTHING), "stdio"]}
