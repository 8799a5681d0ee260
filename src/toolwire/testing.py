"""Tools for testing code that uses toolwire: scripted models and the transcript validator.

```python
model = ScriptedModel([
    [ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})],
    "It is 21 degrees in Paris.",
])
result = await Agent(model, tools=[get_weather]).run("Weather in Paris?")
validate_transcript(result.transcript)
assert model.requests[1].messages[-1].result.data == {...}
```
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

from .envelopes import ToolCall
from .errors import UsageError
from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .models import ModelEvent, ModelRequest, ModelResponse, TextDelta

__all__ = ["FunctionModel", "ScriptedModel", "TranscriptError", "Turn", "validate_transcript"]

Turn = str | Sequence[ToolCall] | ModelResponse
"""One scripted model response: the answer's text, a batch of tool calls, or a full response."""


def _response(turn: Turn) -> ModelResponse:
    if isinstance(turn, ModelResponse):
        return turn
    if isinstance(turn, str):
        return ModelResponse(text=turn, finish_reason="stop")
    return ModelResponse(tool_calls=tuple(turn), finish_reason="tool_calls")


async def _events(response: ModelResponse) -> AsyncIterator[ModelEvent]:
    if response.text:
        yield TextDelta(response.text)
    yield response


class ScriptedModel:
    """A model that answers from a script, one turn per request, and records what it was sent.

    Args:
        turns: The responses in order: a string (the answer), a list of `ToolCall`s (a batch),
            or a `ModelResponse`.
        name: The model's name in events and logs.

    Attributes:
        requests: Every `ModelRequest` received (system prompt, messages, tools offered).
    """

    def __init__(self, turns: Sequence[Turn], *, name: str = "scripted") -> None:
        self._turns = [_response(turn) for turn in turns]
        self._next = 0
        self.name = name
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer with the next scripted turn.

        Raises:
            UsageError: The script has no turn left.
        """
        self.requests.append(request)
        if self._next >= len(self._turns):
            raise UsageError(f"ScriptedModel has no turn left for request {len(self.requests)}; add more turns")
        response = self._turns[self._next]
        self._next += 1
        return _events(response)


class FunctionModel:
    """A model whose every response is computed by a function of the request.

    The function (sync or async) returns a `Turn`: text, a list of `ToolCall`s or a `ModelResponse`.
    Use it to script behaviour that depends on what the model was sent, e.g. on the last result.
    """

    def __init__(self, function: Callable[[ModelRequest], Turn | Awaitable[Turn]], *, name: str = "function") -> None:
        self._function = function
        self.name = name
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Call the function and stream its response."""
        self.requests.append(request)
        turn = self._function(request)
        if inspect.isawaitable(turn):
            turn = await turn
        async for event in _events(_response(turn)):
            yield event


class TranscriptError(AssertionError):
    """A transcript breaks a rule that OpenAI or Anthropic enforce; the message names the rule."""


def validate_transcript(transcript: Sequence[Message]) -> None:
    """Check a transcript against the rules of both OpenAI and Anthropic.

    The rules: the first message is the user's; an assistant message has text or tool calls and
    never follows another assistant message; tool call ids are unique; every assistant message
    with tool calls is followed immediately by exactly one result per call, in the calls' order,
    each naming its call's tool; no result appears anywhere else.

    Raises:
        TranscriptError: With the rule broken and where.
    """
    if transcript and not isinstance(transcript[0], UserMessage):
        raise TranscriptError(f"message 0 must be the user's, not {transcript[0].role}")
    seen: set[str] = set()
    expected: list[ToolCall] = []
    previous: Message | None = None
    for index, message in enumerate(transcript):
        if expected and not isinstance(message, ToolResultMessage):
            missing = ", ".join(call.id for call in expected)
            raise TranscriptError(f"message {index}: tool call(s) {missing} have no result before this {message.role}")
        match message:
            case UserMessage():
                pass
            case AssistantMessage():
                if isinstance(previous, AssistantMessage):
                    raise TranscriptError(f"message {index}: an assistant message follows another one")
                if not message.text and not message.tool_calls:
                    raise TranscriptError(f"message {index}: an assistant message is empty")
                for call in message.tool_calls:
                    if not call.id or call.id in seen:
                        raise TranscriptError(f"message {index}: tool call id {call.id!r} is empty or used twice")
                    seen.add(call.id)
                expected = list(message.tool_calls)
            case ToolResultMessage():
                if not expected:
                    raise TranscriptError(f"message {index}: result for {message.call_id!r} answers no pending call")
                call = expected.pop(0)
                if message.call_id != call.id:
                    raise TranscriptError(
                        f"message {index}: result for {message.call_id!r} where the result for {call.id!r} "
                        "was due (results go in the calls' order, one per call)"
                    )
                if message.tool_name != call.name:
                    raise TranscriptError(
                        f"message {index}: result of {call.id!r} names tool {message.tool_name!r}, not {call.name!r}"
                    )
        previous = message
    if expected:
        raise TranscriptError(f"the transcript ends before the results of {', '.join(call.id for call in expected)}")
