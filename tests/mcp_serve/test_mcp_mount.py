"""`toolwire serve --mcp`: the agent's function tools at `/mcp` beside `/ws`, behind the same tokens.

A real `toolwire serve` subprocess on a free loopback port (tests/serving.py), the official MCP
client over Streamable HTTP, and plain HTTP requests for what the client never sends.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import httpx
import pytest

pytest.importorskip("mcp")

from serving import serve_app
from toolwire import Pipeline, Toolbox, UsageError
from toolwire.interop.mcp_http import http_app, mount_mcp

from .peers import LEGACY, MODERN, OUTCOME, connected, text

TOKEN = "mcp-token-0123456789abcdef"
APP_SOURCE = textwrap.dedent(
    '''
    from toolwire import Agent, PermissionPolicy, Toolbox
    from toolwire.testing import ScriptedModel

    def make_agent(store):
        toolbox = Toolbox()

        @toolbox.tool(mode="read")
        def get_greeting(name: str) -> str:
            """Greet someone."""
            return f"Hello, {name}!"

        @toolbox.tool(mode="destructive")
        def drop_table(table: str) -> str:
            """Drop a table (the policy denies it)."""
            return f"dropped {table}"

        policy = PermissionPolicy(deny=["drop_*"], store=store)
        return Agent(ScriptedModel(["hello"]), tools=toolbox, store=store, policy=policy)
    '''
)
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_app(tmp_path_factory.mktemp("serve"), APP_SOURCE, "mcpagent", "--mcp", token=TOKEN) as server:
        yield server.url.replace("ws://", "http://").removesuffix("/ws") + "/mcp"


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_the_agents_function_tools_answer_with_the_token(mcp_url: str, mode: str):
    async with connected(mcp_url, mode, token=TOKEN) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("get_greeting", {"name": "Ada"})
    assert (names, text(result)) == ({"get_greeting", "drop_table"}, "Hello, Ada!")


async def test_the_agents_policy_applies(mcp_url: str):
    async with connected(mcp_url, MODERN, token=TOKEN) as client:
        result = await client.call_tool("drop_table", {"table": "users"})
    assert result.meta is not None
    assert (result.is_error, result.meta[OUTCOME]) == (True, "denied")


def test_a_request_without_a_token_is_refused(mcp_url: str):
    response = httpx.post(mcp_url, json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 401


def test_a_request_with_a_wrong_token_is_refused(mcp_url: str):
    response = httpx.post(mcp_url, json=INITIALIZE, headers={**ACCEPT, "Authorization": "Bearer " + "x" * 26})
    assert response.status_code == 401


def test_the_token_in_the_query_string_is_not_accepted(mcp_url: str):
    response = httpx.post(mcp_url, params={"token": TOKEN}, json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 401


def test_a_browser_from_another_origin_is_refused(mcp_url: str):
    headers = {**ACCEPT, "Authorization": f"Bearer {TOKEN}", "Origin": "https://evil.example"}
    response = httpx.post(mcp_url, json=INITIALIZE, headers=headers)
    assert response.status_code == 403


def test_a_request_with_the_token_opens_a_session(mcp_url: str):
    response = httpx.post(mcp_url, json=INITIALIZE, headers={**ACCEPT, "Authorization": f"Bearer {TOKEN}"})
    assert (response.status_code, bool(response.headers.get("mcp-session-id"))) == (200, True)


def test_mounting_needs_a_toolwire_servers_app():
    from starlette.applications import Starlette

    with pytest.raises(UsageError, match="create_app"):
        mount_mcp(Starlette())


def test_serving_another_address_than_loopback_without_tokens_is_refused():
    with pytest.raises(UsageError, match="give a token"):
        http_app(Pipeline(Toolbox()), host="0.0.0.0")
