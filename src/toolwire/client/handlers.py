"""The client's tools: handlers by name, the execution ledger, and the answer to each request.

`Handlers.run(request)` always returns a ToolUseResult for the request's id:

| what happened | `errorCode` |
|---|---|
| the handler returned | none: success |
| no handler for the tool | `unknown_tool` |
| the arguments do not match the registered `parametersSchema` or the function's signature | `invalid_parameters` |
| the handler raised | `execution_error` (or a `ToolError`'s own code) |
| the handler ran past the deadline | `timeout`, "Tool execution exceeded timeout of Nms" (+ effect unknown: sync) |
| the value cannot be sent | `execution_error`; `result_too_large` past the frame limit |

A sync handler runs in a thread, which cannot be stopped: its timeout says that its effect is
unknown (it may still finish its work).

The `ExecutionLedger` remembers each request id's outcome, so a request delivered again (replayed
after a resume, or re-sent by the server) is answered from it and never runs twice.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Final, TypeAlias, cast

import anyio
from anyio import to_thread

from ..client_tools.definitions import BinaryContent, ClientToolResponse, JsonContent, TextContent
from ..client_tools.validation import ArgumentValidator
from ..envelopes import ToolResult, wrap_value
from ..errors import ToolError, UsageError
from ..protocol import DEFAULT_LIMITS, Envelope, Limits, ToolUseRequest, ToolUseResult, encode, result_message

__all__ = ["ExecutionLedger", "ExecutionRecord", "Handler", "Handlers", "failure", "success"]

Handler: TypeAlias = Callable[..., Any]
"""A sync or async function called with the request's arguments as keyword arguments.

It returns text, a JSON value, a content item (`TextContent`, `JsonContent`, `BinaryContent`), a
list of content items, None, or a `ClientToolResponse` (to fail with a message or to augment).
"""

_Item: TypeAlias = TextContent | JsonContent | BinaryContent


def failure(request_id: str, code: str, message: str) -> ToolUseResult:
    """A failed answer with a wire code (`unknown_tool`, `invalid_parameters`, ...)."""
    return ToolUseResult(id=request_id, success=False, error_code=code, error_message=message)


def success(request_id: str, value: Any) -> ToolUseResult:
    """The answer for a handler's return value (see `Handler`); the value travels once.

    Text and any other JSON value travel in `result` (seed 001): a map as it is, text or another
    value as `{"value": ...}` (`wrap_value`). Content items travel in `content`, as they are.
    """
    match value:
        case ClientToolResponse() as response:
            return _from_response(request_id, response)
        case None:
            return ToolUseResult(id=request_id, success=True)
        case TextContent() | JsonContent() | BinaryContent() as item:
            return ToolUseResult(id=request_id, success=True, content=(_item(item),))
        case [TextContent() | JsonContent() | BinaryContent(), *_] if _all_items(value):
            items = cast("Sequence[_Item]", value)
            return ToolUseResult(id=request_id, success=True, content=tuple(_item(item) for item in items))
        case _:
            return ToolUseResult(id=request_id, success=True, result=wrap_value(value))


def _all_items(value: Any) -> bool:
    items = cast("Sequence[object]", value) if isinstance(value, list | tuple) else None
    return items is not None and all(isinstance(item, TextContent | JsonContent | BinaryContent) for item in items)


def _item(item: _Item) -> dict[str, Any]:
    return item.to_dict(binary="bytes")  # MessagePack carries binary data raw


def _from_response(request_id: str, response: ClientToolResponse) -> ToolUseResult:
    message = response.to_message(request_id)
    if response.success:
        return message
    return replace(
        message,
        error_code=message.error_code or "execution_error",
        error_message=message.error_message or "the tool failed",
    )


@dataclass(slots=True, kw_only=True)
class ExecutionRecord:
    """One request id in the ledger."""

    request: ToolUseRequest
    result: ToolUseResult | None = None
    """What was answered; None while the handler runs."""
    duration_ms: float = 0.0


class ExecutionLedger:
    """Request id → its one execution; at most `max_entries` finished ones are kept, oldest dropped."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._entries: dict[str, ExecutionRecord] = {}

    def get(self, request_id: str) -> ExecutionRecord | None:
        """The execution of `request_id`, if this client has seen it."""
        return self._entries.get(request_id)

    def start(self, request: ToolUseRequest) -> ExecutionRecord:
        """Record that `request` runs now; call `get()` first, a request id starts only once.

        Raises:
            UsageError: The request id is already in the ledger.
        """
        if request.id in self._entries:
            raise UsageError(f"request {request.id!r} already ran: answer it from the ledger")
        entry = self._entries[request.id] = ExecutionRecord(request=request)
        while len(self._entries) > self.max_entries:
            oldest = next((key for key, value in self._entries.items() if value.result is not None), None)
            if oldest is None:
                break
            del self._entries[oldest]
        return entry

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[ExecutionRecord]:
        return iter(list(self._entries.values()))


@dataclass(frozen=True, slots=True)
class _Registered:
    function: Handler
    timeout: float | None
    is_async: bool
    signature: inspect.Signature | None


class Handlers:
    """The functions that run the client's tools, and the schemas their arguments must match.

    Args:
        limits: What a result frame may be (`result_too_large` beyond `max_frame_bytes`).
    """

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self.validators: dict[str, ArgumentValidator] = {}
        """Tool name → its registered `parametersSchema`, compiled."""
        self._handlers: dict[str, _Registered] = {}

    def add(self, name: str, function: Handler, *, timeout: float | None = None) -> None:
        """Run `function` for requests of tool `name` (replacing a handler of the same name).

        Args:
            name: The tool's name, as registered in a group.
            function: Sync functions run in a worker thread, so they may block.
            timeout: Seconds the handler may run, when shorter than the request's `timeoutMs`.
        """
        if not callable(function):
            raise UsageError(f"the handler for {name!r} must be a function, not {type(function).__name__}")
        if timeout is not None and not timeout > 0:
            raise UsageError(f"the timeout of {name!r} must be a positive number of seconds")
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):  # some builtins have none: let the call decide
            signature = None
        # Anything else runs in a thread; what it returns is awaited if it can be (an async __call__).
        self._handlers[name] = _Registered(function, timeout, inspect.iscoroutinefunction(function), signature)

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    async def run(self, request: ToolUseRequest) -> ToolUseResult:
        """Run the request's handler and return the answer; never raises but for cancellation."""
        name, arguments = request.tool_name, request.arguments
        handler = self._handlers.get(name)
        if handler is None:
            return failure(request.id, "unknown_tool", f"This client has no tool '{name}'.")
        if problems := self._problems(name, handler, arguments):
            return failure(request.id, "invalid_parameters", f"Invalid arguments for tool '{name}': {problems}")
        deadline_ms = request.timeout_ms
        if handler.timeout is not None:
            deadline_ms = min(deadline_ms, max(1, round(handler.timeout * 1000)))
        with anyio.move_on_after(deadline_ms / 1000):
            try:
                value = await self._call(handler, arguments)
            except ToolError as exc:
                return _tool_error(request.id, exc)
            except Exception as exc:
                return failure(request.id, "execution_error", str(exc) or type(exc).__name__)
            return self._checked(success(request.id, value))
        # A sync handler goes on in its thread: what it does next is unknown, and the server says so.
        return result_message(ToolResult.timeout(None, deadline_ms, not handler.is_async), request.id)

    def _problems(self, name: str, handler: _Registered, arguments: Mapping[str, Any]) -> str:
        validator = self.validators.get(name)
        if validator is not None and (problems := validator.problems(arguments)):
            return "; ".join(problems)
        if handler.signature is not None:
            try:
                handler.signature.bind(**arguments)
            except TypeError as exc:
                return f"the handler does not accept them ({exc})"
        return ""

    async def _call(self, handler: _Registered, arguments: Mapping[str, Any]) -> Any:
        if handler.is_async:
            return await handler.function(**arguments)
        # A thread cannot be interrupted: past the deadline it is abandoned and finishes alone.
        value = await to_thread.run_sync(partial(handler.function, **arguments), abandon_on_cancel=True)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            value = await value
        return value

    def _checked(self, result: ToolUseResult) -> ToolUseResult:
        """Refuse values that cannot travel: not MessagePack-able, or larger than a frame."""
        try:
            size = len(encode(Envelope(1, "c", result)))
        except (TypeError, ValueError, OverflowError) as exc:
            return failure(result.id, "execution_error", f"the tool's value cannot be sent: {exc}")
        if size > self.limits.max_frame_bytes - _ENVELOPE_ALLOWANCE:
            message = f"the tool's value is {size} bytes, more than a frame holds ({self.limits.max_frame_bytes})"
            return failure(result.id, "result_too_large", message)
        return result


_ENVELOPE_ALLOWANCE: Final = 256
"""Room for the real envelope's conversation id and stanza id."""


def _tool_error(request_id: str, exc: ToolError) -> ToolUseResult:
    return ToolUseResult(
        id=request_id,
        success=False,
        error_code=exc.code,
        error_message=exc.message,
        terminal=exc.terminal,
        needs_followup=None if exc.needs_followup else False,
    )


def elapsed_ms(started: float) -> float:
    """Milliseconds since `started` (a `time.monotonic()` value)."""
    return (time.monotonic() - started) * 1000
