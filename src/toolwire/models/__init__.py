"""The `Model` interface the loop drives, and what flows through it.

A model adapter implements one method, `stream(request)`: it yields `TextDelta`s as the answer
arrives and ends with exactly one `ModelResponse` holding the whole text, the tool calls (complete
and parsed), the usage and why it stopped. Vendor types never leave their adapter module.

Adapters: `toolwire.testing.ScriptedModel` and `FunctionModel` (tests), `models.openai`
(OpenAI-compatible Chat Completions), `models.anthropic` (Anthropic Messages), `models.local`
(a local GGUF model in llama-cpp-python's server, a supervised child process) and
`models.llamacpp` (the same, in process).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .._extras import import_extra as import_extra
from .._fast import quick_init
from ..envelopes import ToolCall
from ..messages import Message, ToolDefinition, Usage

__all__ = [
    "Model",
    "ModelEvent",
    "ModelRequest",
    "ModelResponse",
    "TextDelta",
    "ToolChoice",
    "import_extra",
]

ToolChoice = Literal["auto", "none", "required"] | str
"""`auto` (the model decides), `none`, `required` (some tool), or the name of one tool to call."""


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """One request to a model: the conversation so far and the tools it may call."""

    system: str
    """The system prompt (the agent's instructions and what the tools add)."""
    messages: Sequence[Message]
    """The transcript to answer, oldest first; tool calls are always followed by their results."""
    tools: Sequence[ToolDefinition] = ()
    """The tools offered on this turn."""
    tool_choice: ToolChoice = "auto"
    request_index: int = 0
    """Zero-based index of this request within the run."""


@quick_init
@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the answer's text, as it streams."""

    text: str


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """The complete response: text, tool calls, usage. Always the last event of a stream."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=lambda: Usage(requests=1))
    finish_reason: str | None = None
    """Why the model stopped, as the provider said it (`stop`, `tool_calls`, `length`, ...)."""
    model_name: str | None = None


ModelEvent = TextDelta | ModelResponse


class Model(Protocol):
    """A chat model that can call tools."""

    @property
    def name(self) -> str:
        """A name for logs and the UI, e.g. `openai:gpt-4o-mini`."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer `request`: yield `TextDelta`s, then exactly one `ModelResponse`.

        Raises:
            ProviderError: The model could not be reached or refused the request.
        """
        ...
