"""The transcript of a thread: what the user said, what the model answered, what the tools returned.

Three message types cover every provider:

- `UserMessage`: a prompt;
- `AssistantMessage`: the model's text and the tool calls it asked for (a batch);
- `ToolResultMessage`: the one result of one of those calls, bound by `call_id`.

The loop keeps every `AssistantMessage` with calls followed by exactly one `ToolResultMessage` per
call, in the model's order, before anything else; model adapters map these to their vendor's shape
(OpenAI `tool` messages, Anthropic `tool_result` blocks). `to_dict()` / `message_from_dict()` give the
JSON form the stores keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._fast import quick_init
from .envelopes import ToolCall, ToolResult
from .errors import EnvelopeError

__all__ = [
    "AssistantMessage",
    "Message",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
    "message_from_dict",
]


@quick_init
@dataclass(frozen=True, slots=True)
class UserMessage:
    """A prompt from the user."""

    content: str
    role: Literal["user"] = field(default="user", init=False)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"role": "user", "content": self.content}


@quick_init
@dataclass(frozen=True, slots=True)
class AssistantMessage:
    """One model response: its text and the batch of tool calls it asked for."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    role: Literal["assistant"] = field(default="assistant", init=False)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        out: dict[str, Any] = {"role": "assistant", "text": self.text}
        if self.tool_calls:
            out["toolCalls"] = [call.to_dict() for call in self.tool_calls]
        return out


@quick_init
@dataclass(frozen=True, slots=True)
class ToolResultMessage:
    """The result of one tool call, sent back to the model."""

    tool_name: str
    result: ToolResult
    role: Literal["tool"] = field(default="tool", init=False)

    @property
    def call_id(self) -> str:
        """The id of the call this result answers."""
        return self.result.call_id or ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"role": "tool", "toolName": self.tool_name, "result": self.result.to_dict()}


Message = UserMessage | AssistantMessage | ToolResultMessage
"""Any message of a transcript."""


def message_from_dict(value: Mapping[str, Any]) -> Message:
    """Decode the JSON form of any message.

    Raises:
        EnvelopeError: The value is not a message.
    """
    match value.get("role"):
        case "user":
            return UserMessage(str(value.get("content", "")))
        case "assistant":
            calls = tuple(ToolCall.from_dict(item) for item in value.get("toolCalls", ()))
            return AssistantMessage(str(value.get("text", "")), calls)
        case "tool":
            result = ToolResult.from_dict(value.get("result"))
            if result.call_id is None:
                raise EnvelopeError("a tool message's result needs its callId")
            return ToolResultMessage(str(value.get("toolName", "")), result)
        case role:
            raise EnvelopeError(f"unknown message role {role!r}")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as a model sees it: name, description and JSON Schema of its parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@quick_init
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and requests a run (or one model response) used."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
        )
