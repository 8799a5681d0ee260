"""The application toolwire's MCP server serves to the conformance suite's server scenarios.

The tools the suite's tool scenarios call, as far as a toolwire tool can answer them: a toolwire
result is text or JSON, so the image, audio, embedded-resource and mixed-content scenarios have no
tool here; nor have progress, logging, sampling and elicitation (a toolwire tool cannot send them).
"""

from __future__ import annotations

from typing import Any

from toolwire import Agent, Tool, Toolbox, ToolError, tool
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


def _echo_arguments(**arguments: Any) -> dict[str, Any]:
    return arguments


def json_schema_tool() -> Tool[..., Any]:
    """`json_schema_2020_12_tool`: parameters given as a JSON Schema 2020-12 document."""
    description = "Tool with JSON Schema 2020-12 features"
    parameters = SchemaParameters(JSON_SCHEMA_2020_12, description, check_parameters_schema(JSON_SCHEMA_2020_12))
    return Tool(_echo_arguments, name="json_schema_2020_12_tool", description=description, parameters=parameters)


def make_agent() -> Agent:
    """An agent whose function tools are the conformance tools (its model is never asked)."""
    return Agent(ScriptedModel([]), tools=Toolbox([test_simple_text, test_error_handling, json_schema_tool()]))
