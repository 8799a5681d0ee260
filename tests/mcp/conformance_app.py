"""The application toolwire's MCP server serves to the conformance suite's server scenarios.

    toolwire mcp serve --app conformance_app:make_agent --http --port 0     # from tests/mcp/

The tools the suite's tool scenarios call (each scenario's expectation is in the suite's source,
`node_modules/@modelcontextprotocol/conformance/dist/index.js`), as far as a toolwire tool can
answer them. None for the rest: a toolwire result is text or JSON (no image, audio, embedded
resource or mixed content), and a toolwire tool cannot log to the client, ask it for a sampling,
or put a form to it (`ToolContext.ask` is a yes/no consent question).
"""

from __future__ import annotations

from typing import Any

import anyio

from toolwire import Agent, Tool, Toolbox, ToolContext, ToolError, tool
from toolwire.client_tools.validation import SchemaParameters, check_parameters_schema
from toolwire.testing import ScriptedModel

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@tool(mode="read")
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool(mode="read")
def test_error_handling() -> str:
    """Always fails."""
    raise ToolError("This tool intentionally returns an error for testing")


@tool(mode="read")
async def test_tool_with_progress(ctx: ToolContext) -> str:
    """Reports progress 0, 50 and 100 of 100, about 50 ms apart (the scenario's pacing)."""
    for step in (0, 50, 100):
        ctx.report_progress(step, 100)
        if step < 100:
            await anyio.sleep(0.05)
    return "Progress reported."


def _echo_arguments(**arguments: Any) -> dict[str, Any]:
    return arguments


def json_schema_tool() -> Tool[..., Any]:
    """`json_schema_2020_12_tool`: parameters given as a JSON Schema 2020-12 document."""
    description = "Tool with JSON Schema 2020-12 features"
    parameters = SchemaParameters(JSON_SCHEMA_2020_12, description, check_parameters_schema(JSON_SCHEMA_2020_12))
    return Tool(_echo_arguments, name="json_schema_2020_12_tool", description=description, parameters=parameters)


def make_agent() -> Agent:
    """An agent whose function tools are the conformance tools (its model is never asked)."""
    return Agent(
        ScriptedModel([]),
        tools=Toolbox([test_simple_text, test_error_handling, test_tool_with_progress, json_schema_tool()]),
    )
