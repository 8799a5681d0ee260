"""The chat page with an MCP server's tools: `toolwire serve --mcp-servers FILE` with server-everything.

The served app is `tests/mcp_served_app.py`; the file lists server-everything collapsed as
`everything`. docs/mcp-serve.png is this module's screenshot (see docs/browser.md for where it goes).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest

pytest.importorskip("playwright", reason="the browser tests need the playwright package: pip install -e '.[dev]'")

from browser_support import HERE, TOKEN, ChatPage
from playwright.sync_api import Browser, expect

from serving import serve_app

APP = HERE.parent / "mcp_served_app.py"
EVERYTHING = HERE.parent / "mcp" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture(scope="module")
def server(chromium: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`toolwire serve` with the MCP servers file (overrides the chat page's server)."""
    node = shutil.which("node")
    if node is None or not EVERYTHING.exists():
        pytest.skip("needs Node.js and server-everything: npm ci --no-audit --no-fund --prefix tests/mcp")
    tmp_path = tmp_path_factory.mktemp("mcp-page")
    entry = {"command": node, "args": [str(EVERYTHING), "stdio"], "collapsed": True, "tools": ["echo", "get-sum"]}
    servers = tmp_path / "mcp.json"
    servers.write_text(json.dumps({"mcpServers": {"everything": entry}}))
    extra = ("--mcp-servers", str(servers))
    with serve_app(tmp_path, APP.read_text(), "mcp_served_app", *extra, token=TOKEN) as served:
        yield served.url.replace("ws://", "http://", 1).removesuffix("/ws")


def test_an_mcp_servers_tool_call_shows_on_the_page_with_its_result(chat: ChatPage) -> None:
    chat.open()
    chat.send("echo hello from the page")
    expect(chat.answer()).to_contain_text("The MCP server answered: Echo: hello from the page")
    echo = chat.tool("echo")
    expect(echo).to_have_attribute("data-where", "server")
    expect(echo).to_have_attribute("data-outcome", "success")
    expect(echo).to_contain_text("Echo: hello from the page")

    chat.send("add 2 3")
    expect(chat.answer()).to_contain_text("The MCP server answered:")
    expect(chat.tool("get-sum")).to_have_attribute("data-outcome", "success")
    chat.page.set_viewport_size({"width": 1280, "height": 900})
    chat.screenshot("mcp")


def test_the_apps_function_tool_runs_beside_the_mcp_servers(chat: ChatPage) -> None:
    chat.open()
    chat.send("time")
    expect(chat.answer()).to_contain_text("The function tool answered: 12:00")
    expect(chat.tool("get_time")).to_have_attribute("data-outcome", "success")
