"""Client tools: tool groups a client application registers at run time and executes itself.

Seed 004: groups, collapsing into containers, skills, dual-context instructions, augmentation,
consent, invoke timeouts and disconnection strategies.

| module | what |
|---|---|
| `definitions` | groups, tools, skills, augmentations, content items, requests and responses |
| `validation` | registration checks: schema limits, names that shadow nothing |
| `patterns` | which regular expressions are safe to accept (no catastrophic backtracking) |
| `state` | `ClientState`: a thread's groups, expansion, hidden tools and context; what the model is offered |
| `channel` | `ClientChannel`, `ClientHub` (request/response correlation), disconnection strategies, config |
| `toolset` | `ClientToolset`: the client tools as a toolset (`toolwire.toolsets`), fed by a run's `ClientInput` |
| `session` | `ClientSession`: a thread's client tools during one run, the toolset's binding (`BoundToolset`) |

The names below load on first use: the definitions bring pydantic models and jsonschema-rs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .channel import ClientChannel as ClientChannel
from .channel import ClientHub as ClientHub
from .channel import ClientToolsConfig as ClientToolsConfig
from .channel import ConsentChannel as ConsentChannel
from .channel import FailFast as FailFast
from .channel import FallbackMessage as FallbackMessage
from .channel import RetryWithBackoff as RetryWithBackoff
from .toolset import ClientInput as ClientInput
from .toolset import ClientToolset as ClientToolset

if TYPE_CHECKING:
    from .definitions import Augmentation as Augmentation
    from .definitions import BinaryContent as BinaryContent
    from .definitions import ClientSkill as ClientSkill
    from .definitions import ClientTool as ClientTool
    from .definitions import ClientToolGroup as ClientToolGroup
    from .definitions import ClientToolRequest as ClientToolRequest
    from .definitions import ClientToolResponse as ClientToolResponse
    from .definitions import ContextItem as ContextItem
    from .definitions import JsonContent as JsonContent
    from .definitions import TextContent as TextContent
    from .validation import SchemaLimits as SchemaLimits

_LAZY = {
    "Augmentation": "definitions",
    "BinaryContent": "definitions",
    "ClientSkill": "definitions",
    "ClientTool": "definitions",
    "ClientToolGroup": "definitions",
    "ClientToolRequest": "definitions",
    "ClientToolResponse": "definitions",
    "ContextItem": "definitions",
    "JsonContent": "definitions",
    "TextContent": "definitions",
    "SchemaLimits": "validation",
}

__all__ = [
    "Augmentation",
    "BinaryContent",
    "ClientChannel",
    "ClientHub",
    "ClientInput",
    "ClientSkill",
    "ClientTool",
    "ClientToolGroup",
    "ClientToolRequest",
    "ClientToolResponse",
    "ClientToolsConfig",
    "ClientToolset",
    "ConsentChannel",
    "ContextItem",
    "FailFast",
    "FallbackMessage",
    "JsonContent",
    "RetryWithBackoff",
    "SchemaLimits",
    "TextContent",
]


def __getattr__(name: str) -> Any:
    if (module := _LAZY.get(name)) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
