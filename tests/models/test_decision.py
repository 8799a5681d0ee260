"""The decision schema's bounds: what keeps llama.cpp's grammar parser from overflowing its stack.

llama-cpp-python writes a `maxLength` (or `maxItems`, or a `{n,m}` in a pattern) of n as n nested
optional groups, and llama.cpp parses them by recursion: the page's `SetNotes` (`maxLength: 20000`)
crashed the server with SIGSEGV (issue 12). These tests need no model, only llama-cpp-python's
converter for the grammar checks.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from page_tools import PAGE_TOOLS
from toolwire.examples import example_toolbox
from toolwire.messages import ToolDefinition, UserMessage
from toolwire.models import ModelRequest
from toolwire.models.decision import output_schema

EXAMPLE_AND_PAGE_TOOLS = (*example_toolbox().definitions(), *PAGE_TOOLS)


def schema_for(*tools: ToolDefinition, max_tokens: int = 256, tool_choice: str = "auto") -> dict[str, Any]:
    request = ModelRequest(system="", messages=[UserMessage("hello")], tools=tools, tool_choice=tool_choice)
    schema = output_schema(request, max_tokens=max_tokens)
    assert schema is not None
    return schema


def arguments_of(schema: dict[str, Any], tool: str) -> dict[str, Any]:
    [branch] = [b for b in schema["oneOf"] if b["properties"]["tool"].get("const") == tool]
    return branch["properties"]["arguments"]["properties"]


def nesting(grammar: str) -> int:
    """The deepest nesting of parenthesised groups in a GBNF grammar (quoted text skipped)."""
    depth = deepest = 0
    for token in re.findall(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[()]', grammar):
        if token == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif token == ")":
            depth -= 1
    return deepest


def gbnf(schema: dict[str, Any]) -> str:
    converter = pytest.importorskip("llama_cpp.llama_grammar", reason="needs llama-cpp-python: toolwire[local]")
    return converter.json_schema_to_gbnf(json.dumps(schema))


def test_a_long_bound_of_the_tools_own_is_capped_by_what_one_response_holds() -> None:
    assert arguments_of(schema_for(*PAGE_TOOLS), "SetNotes")["text"]["maxLength"] == 400
    assert arguments_of(schema_for(*PAGE_TOOLS, max_tokens=64), "SetNotes")["text"]["maxLength"] == 256
    assert arguments_of(schema_for(*PAGE_TOOLS), "ShowMessage")["text"]["maxLength"] == 400
    assert PAGE_TOOLS[4].parameters["properties"]["text"]["maxLength"] == 20_000  # the tool's own schema is kept


def test_lengths_counts_and_pattern_repetitions_are_all_capped() -> None:
    hostile = ToolDefinition(
        "hostile",
        "Every bound out of reach.",
        {
            "type": "object",
            "properties": {
                "long": {"type": "string", "minLength": 100_000, "maxLength": 1_000_000},
                "many": {"type": "array", "items": {"type": "integer"}, "minItems": 1_000, "maxItems": 10_000},
                "repeated": {"type": "string", "pattern": "^a{0,100000}$"},
                "code": {"type": "string", "pattern": "^[A-Z]{2,3}$"},
                "short": {"type": "string", "maxLength": 10},
            },
        },
    )
    arguments = arguments_of(schema_for(hostile), "hostile")
    assert arguments["long"] == {"type": "string", "minLength": 400, "maxLength": 400}
    assert (arguments["many"]["minItems"], arguments["many"]["maxItems"]) == (32, 32)
    assert arguments["repeated"] == {"type": "string", "maxLength": 64}  # the pattern is checked after decoding
    assert arguments["code"] == {"type": "string", "pattern": "^[A-Z]{2,3}$"}  # small repetitions stay
    assert arguments["short"] == {"type": "string", "maxLength": 10}
    assert nesting(gbnf(schema_for(hostile))) <= 400


def test_the_example_and_page_tools_make_a_shallow_grammar() -> None:
    # The conversation of issue 12: the example agent with the page's tools expanded. Uncapped,
    # SetNotes alone nested 20,000 groups deep; llama.cpp's parser recursed once per group.
    grammar = gbnf(schema_for(*EXAMPLE_AND_PAGE_TOOLS))
    assert nesting(grammar) <= 400
    for tool_choice in ("required", "SetNotes"):
        assert nesting(gbnf(schema_for(*EXAMPLE_AND_PAGE_TOOLS, tool_choice=tool_choice))) <= 400


def test_the_depth_measure_sees_the_nesting_that_crashed() -> None:
    # The check above can fail: the uncapped bound gives a grammar exactly that deep.
    grammar = gbnf({"type": "string", "maxLength": 20_000})
    assert nesting(grammar) == 20_000
