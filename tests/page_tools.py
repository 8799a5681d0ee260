"""The chat page's "Page" group as the page registers it: a copy of `PAGE_GROUP` in `web/page/tools.ts`.

Its `SetNotes` takes up to 20,000 characters: the grammar llama-cpp-python once built for that bound
crashed llama.cpp (issue 12), so the local model tests run with these tools expanded.
"""

from __future__ import annotations

from typing import Any

from toolwire.messages import ToolDefinition

_NO_ARGUMENTS = {"type": "object", "properties": {}, "additionalProperties": False}


def _closed(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


PAGE_GROUP: dict[str, Any] = {
    "name": "Page",
    "description": "The chat page the user has open: its notes area, messages to the user, the colour theme",
    "tools": [
        {
            "name": "GetSelection",
            "description": "The text the user selected in the page's notes area (empty when nothing is selected)",
            "parametersSchema": _NO_ARGUMENTS,
        },
        {
            "name": "GetUserInput",
            "description": "Ask the user a question on the page and wait for the typed answer",
            "parametersSchema": _closed({"question": {"type": "string", "maxLength": 500}}, "question"),
        },
        {
            "name": "ShowMessage",
            "description": "Show the user a short message (a toast) with a severity",
            "parametersSchema": _closed(
                {"text": {"type": "string", "maxLength": 500}, "severity": {"enum": ["info", "warning", "error"]}},
                "text",
            ),
        },
        {
            "name": "SetTheme",
            "description": "Switch the page to the light or the dark colour theme",
            "parametersSchema": _closed({"theme": {"enum": ["light", "dark"]}}, "theme"),
        },
        {
            "name": "SetNotes",
            "description": "Replace the text of the page's notes area",
            "parametersSchema": _closed({"text": {"type": "string", "maxLength": 20_000}}, "text"),
        },
        {
            "name": "DeleteNotes",
            "description": "Delete everything in the page's notes area (asks the user first)",
            "parametersSchema": _NO_ARGUMENTS,
            "requiresPermission": True,
        },
    ],
}

PAGE_TOOLS = tuple(
    ToolDefinition(tool["name"], tool["description"], tool["parametersSchema"]) for tool in PAGE_GROUP["tools"]
)
"""The Page tools as the model sees them once the group is expanded."""


def page_handlers() -> dict[str, Any]:
    """Handlers of the Page tools, as a `FakeClient` runs them (a page with empty notes, light theme)."""
    return {
        "GetSelection": lambda arguments: "",
        "GetUserInput": lambda arguments: "yes",
        "ShowMessage": lambda arguments: {"shown": True},
        "SetTheme": lambda arguments: {"theme": arguments["theme"]},
        "SetNotes": lambda arguments: {"length": len(arguments["text"])},
        "DeleteNotes": lambda arguments: {"deleted": 0},
    }
