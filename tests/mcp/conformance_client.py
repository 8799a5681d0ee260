"""The MCP client the conformance suite's client scenarios start: `conformance_client.py [--sdk] URL`.

The suite starts a test server for a scenario, then runs this script with the server's URL as the
last argument and the scenario's name in `MCP_CONFORMANCE_SCENARIO`; the script must exit 0.

- default: toolwire's client, an `Agent` whose tools come from `MCPToolset.http(url)` (set up:
  connect and list the tools; a scripted model makes the scenario's call through the loop). Its
  consent handler says yes to every question, so a server's yes/no question is accepted; a form
  with fields is declined all the same (a consent answer cannot fill it).
- `--sdk`: the reference, the official SDK's `mcp.Client` on its own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

import anyio
from mcp.client.context import ClientRequestContext
from mcp.types import ElicitRequestFormParams, ElicitRequestParams, ElicitResult, ErrorData

import mcp
from toolwire import Agent, ConsentRequest, PermissionPolicy, ToolCall
from toolwire.interop.mcp import MCPToolset
from toolwire.messages import ToolResultMessage
from toolwire.models import ModelResponse
from toolwire.testing import ScriptedModel

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "sse-retry": ("test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
}
"""The tool each scenario calls after listing the tools (`initialize` only lists them)."""


async def with_defaults(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult | ErrorData:
    """Accept an elicitation with the defaults its schema gives (SEP-1034)."""
    content: dict[str, Any] = {}
    if isinstance(params, ElicitRequestFormParams):
        for name, field in params.requested_schema.get("properties", {}).items():
            if "default" in field:
                content[name] = field["default"]
    return ElicitResult(action="accept", content=content)


async def run_sdk(url: str, scenario: str) -> None:
    async with mcp.Client(url, elicitation_callback=with_defaults) as client:
        await client.list_tools()
        if scenario in CALLS:
            name, arguments = CALLS[scenario]
            result = await client.call_tool(name, arguments)
            print(f"{name}: {result.model_dump_json(exclude_none=True)}")


async def yes(request: ConsentRequest) -> bool:
    """The person at this client: says yes to every question."""
    return True


async def run_toolwire(url: str, scenario: str) -> None:
    toolset = MCPToolset.http(url)
    turns: list[Any] = []
    if scenario in CALLS:
        name, arguments = CALLS[scenario]
        turns.append(ModelResponse(tool_calls=(ToolCall(id="c1", name=name, arguments=arguments),)))
    model = ScriptedModel([*turns, "done"])
    async with Agent(model, tools=[toolset], policy=PermissionPolicy(consent=yes)) as agent:
        result = await agent.run(scenario)
    for message in result.transcript:
        if isinstance(message, ToolResultMessage):
            print(f"{message.result.type.name}: {message.result.data!r} {message.result.error or ''}")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    sdk = "--sdk" in args
    url, scenario = args[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "initialize")
    anyio.run(run_sdk if sdk else run_toolwire, url, scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
