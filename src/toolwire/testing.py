"""Tools for testing code that uses toolwire: scripted models, a fake client, the transcript validator.

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
import math
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import anyio
from anyio.abc import TaskGroup

from .client_tools.channel import ClientHub
from .client_tools.definitions import (
    ClientToolRequest,
    ClientToolResponse,
    JsonContent,
    TextContent,
)
from .envelopes import ToolCall
from .errors import ClientDisconnected, ToolwireError, UsageError
from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from .policy import ConsentAnswer, ConsentRequest

__all__ = [
    "Behaviour",
    "FakeClient",
    "FunctionModel",
    "ScriptedModel",
    "TranscriptError",
    "Turn",
    "validate_transcript",
]

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


class TranscriptError(ToolwireError, AssertionError):
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


# -- a fake client ---------------------------------------------------------------------------------

FakeHandler = Callable[[dict[str, Any]], Any]
"""Runs a client tool: gets the arguments, returns text, a JSON value or a `ClientToolResponse`
(sync or async); an exception becomes a failure response with its message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """How the fake client treats one request (the default: execute it and respond at once)."""

    delay: float = 0.0
    """Seconds to wait before executing; `math.inf` never answers (a frozen client)."""
    drop: Literal["on_receive", "after_execute"] | None = None
    """Disconnect when the request arrives (nothing runs), or after running it (the response is lost)."""
    reconnect: bool = False
    """After a `drop`, come back at once (the runtime may then re-send the request)."""
    duplicate: bool = False
    """Send the response twice."""
    forge: str | None = None
    """Respond with this request id instead of the request's."""
    thread: str | None = None
    """Deliver the response as if from this thread (a foreign client)."""


class FakeClient:
    """A client application for tests that misbehaves on request (delay, drop, duplicate, forge).

    It executes client tool requests with handlers and answers consent prompts.

    Use it as `client=` of `Agent.run` inside `async with FakeClient(agent, handlers=...)`. Like a
    real client it keeps an execution ledger: a request re-sent after a reconnect is answered from
    the ledger, never executed twice.

    Args:
        agent: The agent (or its `ClientHub`) whose runs the client serves.
        handlers: Client tool name → handler.
        consent: The answer to every consent prompt, or a function of the prompt.
    """

    def __init__(
        self,
        agent: Any,
        *,
        handlers: Mapping[str, FakeHandler] | None = None,
        consent: bool | ConsentAnswer | Callable[[ConsentRequest], bool | ConsentAnswer] = False,
    ) -> None:
        self.hub: ClientHub = agent if isinstance(agent, ClientHub) else agent.clients
        self.handlers = dict(handlers or {})
        self._consent = consent
        self.requests: list[ClientToolRequest] = []
        """Every request received, re-deliveries included."""
        self.executions: Counter[str] = Counter()
        """How many times each request id was executed (at most once, by invariant I5)."""
        self.consent_requests: list[ConsentRequest] = []
        self.accepted: list[bool] = []
        """For each response sent, whether the runtime accepted it."""
        self.connected = True
        self._behaviours: dict[str, deque[Behaviour]] = {}
        self._ledger: dict[str, ClientToolResponse] = {}
        self._threads: set[str] = set()
        self._group: TaskGroup | None = None
        self._arrived = anyio.Event()

    def behave(self, tool: str, *behaviours: Behaviour) -> None:
        """Apply `behaviours` to the next calls of `tool`, one each, in order."""
        self._behaviours.setdefault(tool, deque()).extend(behaviours)

    async def __aenter__(self) -> Self:
        self._group = await anyio.create_task_group().__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._group is not None
        self._group.cancel_scope.cancel()  # requests still in flight are abandoned
        # The body's own exception propagates as it is, not wrapped in an exception group.
        await self._group.__aexit__(None, None, None)
        return None

    # -- the channel -------------------------------------------------------------------------------

    async def send(self, request: ClientToolRequest) -> None:
        """Receive a request; it is handled in the background, like a real client would."""
        if not self.connected:
            raise ClientDisconnected("the fake client is disconnected")
        if self._group is None:
            raise UsageError("use the FakeClient inside `async with FakeClient(...)`")
        self.requests.append(request)
        self._arrived.set()
        self._arrived = anyio.Event()
        self._threads.add(request.thread_id)
        queue = self._behaviours.get(request.tool_name)
        behaviour = queue.popleft() if queue else Behaviour()
        self._group.start_soon(self._handle, request, behaviour)

    async def wait_for_requests(self, count: int = 1) -> list[ClientToolRequest]:
        """Wait until `count` requests have arrived (re-deliveries included); return them all."""
        while len(self.requests) < count:
            await self._arrived.wait()
        return list(self.requests)

    async def consent(self, request: ConsentRequest) -> bool | ConsentAnswer:
        """Answer a consent prompt as configured."""
        self.consent_requests.append(request)
        return self._consent(request) if callable(self._consent) else self._consent

    def disconnect(self) -> None:
        """Drop the connection: calls in flight learn it (their strategy decides what follows)."""
        self.connected = False
        for thread_id in self._threads:
            self.hub.detach(thread_id, self)

    def reconnect(self, thread_id: str | None = None) -> None:
        """Come back for the threads served so far (or `thread_id`); the hub re-sends what it must."""
        self.connected = True
        for thread in {thread_id} if thread_id is not None else set(self._threads):
            self._threads.add(thread)
            self.hub.attach(thread, self)

    async def _handle(self, request: ClientToolRequest, behaviour: Behaviour) -> None:
        if behaviour.drop == "on_receive":
            self._drop(request, behaviour)
            return
        if behaviour.delay:
            await anyio.sleep(behaviour.delay if math.isfinite(behaviour.delay) else math.inf)
        response = self._ledger.get(request.request_id)
        if response is None:
            response = self._ledger[request.request_id] = await self._execute(request)
        if behaviour.drop == "after_execute":
            self._drop(request, behaviour)
            return
        if behaviour.forge is not None:
            response = response.model_copy(update={"request_id": behaviour.forge})
        if not self.connected:
            return  # the connection dropped meanwhile: the response is lost with it
        thread_id = behaviour.thread or request.thread_id
        for _ in range(2 if behaviour.duplicate else 1):
            self.accepted.append(self.hub.deliver(thread_id, response))

    def _drop(self, request: ClientToolRequest, behaviour: Behaviour) -> None:
        self.disconnect()
        if behaviour.reconnect:
            self.reconnect(request.thread_id)

    async def _execute(self, request: ClientToolRequest) -> ClientToolResponse:
        self.executions[request.request_id] += 1
        handler = self.handlers.get(request.tool_name)
        if handler is None:
            message = f"the fake client has no handler for '{request.tool_name}'"
            return ClientToolResponse(request_id=request.request_id, success=False, error_message=message)
        try:
            value = handler(dict(request.arguments))
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            return ClientToolResponse(request_id=request.request_id, success=False, error_message=str(exc))
        if isinstance(value, ClientToolResponse):
            return value.model_copy(update={"request_id": request.request_id})
        content = TextContent(text=value) if isinstance(value, str) else JsonContent(value=value)
        return ClientToolResponse(request_id=request.request_id, content=(content,))
