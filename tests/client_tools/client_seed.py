"""Seed 004's own examples, as a client would send them (camelCase JSON), for the client tool tests."""

from __future__ import annotations

from typing import Any

from toolwire import Agent, ToolCall
from toolwire.loop import RunResult
from toolwire.testing import validate_transcript

IDE_GROUP: dict[str, Any] = {
    "name": "IDE",
    "description": "VS Code interaction tools",
    "startCollapsed": True,
    "functionResult": None,
    "systemPrompt": "Use ShowMessage for important notifications to the user.",
    "tools": [
        {
            "name": "OpenFile",
            "description": "Open a file in the editor",
            "parametersSchema": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "line": {"type": "integer"}},
                "required": ["path"],
            },
        },
        {
            "name": "GetSelection",
            "description": "Get the user's current text selection",
            "parametersSchema": {"type": "object"},
        },
        {
            "name": "ShowMessage",
            "description": "Show a message to the user",
            "parametersSchema": {
                "type": "object",
                "properties": {
                    "message": {"type": "string"},
                    "severity": {"type": "string", "enum": ["info", "warning", "error"]},
                },
                "required": ["message"],
            },
        },
    ],
}

CHECKOUT_GROUP: dict[str, Any] = {
    "name": "Checkout",
    "description": "Shop checkout",
    "tools": [
        {"name": "ValidateCart", "description": "Validate the cart", "parametersSchema": {"type": "object"}},
        {"name": "ProcessPayment", "description": "Charge the customer", "parametersSchema": {"type": "object"}},
        {"name": "ConfirmOrder", "description": "Confirm the order", "parametersSchema": {"type": "object"}},
    ],
    "skills": [
        {
            "name": "Complete Checkout",
            "description": "Process a customer's checkout",
            "functionResult": None,
            "systemPrompt": "CHECKOUT WORKFLOW:\n1. Validate the cart contents\n2. Process payment",
            "references": [{"name": "ValidateCart"}, {"name": "ProcessPayment"}, {"name": "ConfirmOrder"}],
        }
    ],
}


def group(name: str, *tools: str, **options: Any) -> dict[str, Any]:
    """A small group of parameterless tools."""
    entries = [{"name": tool, "description": f"{tool} tool", "parametersSchema": {"type": "object"}} for tool in tools]
    return {"name": name, "description": f"{name} tools", "tools": entries, **options}


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


async def run(agent: Agent, prompt: str = "go", **options: Any) -> RunResult:
    result = await agent.run(prompt, **options)
    validate_transcript(result.transcript)  # every path leaves a transcript both providers accept
    return result


def offered(request: Any) -> list[str]:
    """The tool names a model request offered."""
    return [definition.name for definition in request.tools]
