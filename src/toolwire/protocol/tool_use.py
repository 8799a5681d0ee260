"""ToolUseRequest (type 6) and ToolUseResult (type 7): one tool call on the wire.

The server sends a ToolUseRequest for every tool call: `execution="client"` asks the client to run
the tool and answer with a ToolUseResult; `"server"` requests and their results are sent for
transparency only. A ToolUseResult's `id` is the request's id; `protocol.results` converts it to
and from `ToolResult` (`result_message`, `tool_result`).

A ToolUseResult whose id can be read but whose body cannot (a `resultType` out of range, a
`result` that is not a map...) is refused with 105 like any bad message, and `Connection.receive`
also delivers it as `ToolUseResult.invalid(...)`: a failure `invalid_result` of that request, so
the call waiting for it ends at once instead of at its deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, Self, cast

from ..envelopes import ResultType
from .error_codes import ErrorCode, ProtocolError
from .published import without_none
from .wire import Fields, MessageType

__all__ = ["DEFAULT_TIMEOUT_MS", "Execution", "ToolUseRequest", "ToolUseResult"]

Execution = Literal["server", "client", "either"]
"""Who runs the tool: the server, the client, or whichever can (coordinated so it runs once)."""
_EXECUTIONS: Final = ("server", "client", "either")
DEFAULT_TIMEOUT_MS: Final = 30_000
"""The protocol's default deadline of a ToolUseRequest."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseRequest:
    """The server asks for one tool call (type 6, server → client)."""

    type: ClassVar[MessageType] = MessageType.TOOL_USE_REQUEST
    id: str
    """The request id (≥ 128 random bits, made by the server); the result's `id` repeats it."""
    tool_name: str
    """The tool to run."""
    arguments: dict[str, Any]
    """The call's arguments, the wire's `parameters` (a dialect names them `arguments`; both are read)."""
    execution: Execution
    """`"client"`: run it and answer; `"server"`: shown for transparency, never answered."""
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    """The deadline; a client answers `timeout` when its tool runs longer."""
    call_id: str | None = None
    """The model's own id for the call (toolwire)."""
    description: str | None = None
    """The tool's description, to show the user what is about to happen (toolwire)."""
    mode: str | None = None
    """The call's `ToolMode` value, e.g. `"read"` (toolwire)."""

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        return without_none(
            {
                "id": self.id,
                "toolName": self.tool_name,
                "parameters": self.arguments,
                "execution": self.execution,
                "timeoutMs": self.timeout_ms,
                "callId": self.call_id,
                "description": self.description,
                "mode": self.mode,
            }
        )

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body; `arguments` is accepted for `parameters`, an extra `messageId` ignored."""
        fields = Fields(body, "ToolUseRequest")
        key = "parameters" if fields.has("parameters") or not fields.has("arguments") else "arguments"
        return cls(
            id=fields.text("id", non_empty=True),
            tool_name=fields.text("toolName", non_empty=True),
            arguments=fields.mapping(key),
            execution=cast(Execution, fields.choice("execution", _EXECUTIONS)),
            timeout_ms=fields.integer("timeoutMs", DEFAULT_TIMEOUT_MS, low=1, high=2**31 - 1),
            call_id=fields.optional_text("callId"),
            description=fields.optional_text("description"),
            mode=fields.optional_text("mode"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseResult:
    """The outcome of one ToolUseRequest (type 7, both ways); seed 001's body plus toolwire's fields."""

    type: ClassVar[MessageType] = MessageType.TOOL_USE_RESULT
    id: str
    """The id of the ToolUseRequest this answers (a dialect's `requestId` wins when present)."""
    success: bool
    """True when the tool ran and returned a value."""
    result: dict[str, Any] | None = None
    """The value on success (a value that is not a map travels as `{"value": ...}`); on failure,
    the outcome's seed 000 payload: `{"timeout": {"durationMs", "effectUnknown"}}`, `{"denied":
    {"tool", "reason"}}`, `{"canceled": {"reason", "by"}}`, `{"error": {"type"}}`."""
    error_code: str | None = None
    """On failure: `unknown_tool`, `invalid_parameters`, `execution_error`, `timeout`, ... or a tool's own."""
    error_message: str | None = None
    """On failure: what went wrong, for the model."""
    result_type: int | None = None
    """The `ResultType` (0–4), sent only when `errorCode` does not imply it."""
    needs_followup: bool | None = None
    """Sent only when it differs from the default (false on success; true on failure, false when
    `terminal`)."""
    terminal: bool = False
    """The run ends after this call's batch."""
    message: str | None = None
    """Text for the user."""
    content: tuple[dict[str, Any], ...] = ()
    """A client tool's items, sent instead of a `result` (never both): `{"type": "text", "text"}`,
    `{"type": "json", "value"}`, `{"type": "binary", "mimeType", "data": <bin>, "filename"}` (the
    `to_dict(binary="bytes")` shapes)."""
    augmentation: dict[str, Any] | None = None
    """Changes to the thread's client tools, in `Augmentation.to_dict()` shape."""
    problem: str | None = None
    """Set only by a receiving `Connection`, never sent: why the body was refused (105) although
    its id could be read. The message then stands for a failure `invalid_result` of that request,
    so that the call waiting for it ends at once (see `invalid`)."""

    @classmethod
    def invalid(cls, body: Mapping[str, Any], problem: str) -> Self | None:
        """The answer a body `from_body` refused stands for: a failure with code `invalid_result`.

        Args:
            body: The refused body.
            problem: Why it was refused (the ErrorMessage's text).

        Returns:
            The failure for the request the body names, or None when its id cannot be read either.
        """
        request_id = body.get("requestId") if body.get("requestId") is not None else body.get("id")
        if not isinstance(request_id, str) or not request_id:
            return None
        return cls(
            id=request_id,
            success=False,
            error_code="invalid_result",
            error_message=f"The tool's result could not be read: {problem}",
            problem=problem,
        )

    def to_body(self) -> dict[str, Any]:
        """Return the wire body."""
        body = without_none(
            {
                "id": self.id,
                "success": self.success,
                "result": self.result,
                "errorCode": self.error_code,
                "errorMessage": self.error_message,
                "resultType": self.result_type,
                "needsFollowup": self.needs_followup,
            }
        )
        if self.terminal:
            body["terminal"] = True
        if self.message is not None:
            body["message"] = self.message
        if self.content:
            body["content"] = list(self.content)
        if self.augmentation is not None:
            body["augmentation"] = self.augmentation
        return body

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """Read a wire body, and the spellings of a dialect seen in the field.

        `requestId` names the request when present; a failure's `error` text stands for an absent
        `errorMessage` (another type of `error` is ignored, as an unknown field).
        """
        fields = Fields(body, "ToolUseResult")
        success = fields.flag("success")
        result_type = fields.optional_integer("resultType", low=0, high=len(ResultType) - 1)
        if result_type is not None and (result_type == ResultType.SUCCESS) is not success:
            message = f"ToolUseResult.resultType {result_type} contradicts success={str(success).lower()}"
            raise ProtocolError(ErrorCode.INVALID_MESSAGE, message)
        content = fields.mappings("content")
        for index, item in enumerate(content):
            _check_item(Fields(item, f"ToolUseResult.content[{index}]"), item)
        return cls(
            id=fields.text("requestId" if fields.has("requestId") else "id", non_empty=True),
            success=success,
            result=fields.optional_mapping("result"),
            error_code=fields.optional_text("errorCode"),
            error_message=_error_message(fields, success),
            result_type=result_type,
            needs_followup=fields.optional_flag("needsFollowup"),
            terminal=fields.flag("terminal", False),
            message=fields.optional_text("message"),
            content=content,
            augmentation=fields.optional_mapping("augmentation"),
        )


def _error_message(fields: Fields, success: bool) -> str | None:
    """`errorMessage`, or on a failure without one the `error` text a dialect sends instead."""
    message = fields.optional_text("errorMessage")
    if message is None and not success and isinstance(error := fields.get("error"), str):
        return error
    return message


def _check_item(fields: Fields, item: Mapping[str, Any]) -> None:
    match fields.choice("type", ("text", "json", "binary")):
        case "text":
            fields.text("text")
        case "json":
            if "value" not in item:
                raise fields.refuse("value", "present (any value)", None)
        case _:
            fields.text("mimeType", non_empty=True)
            data = fields.get("data")
            if not isinstance(data, bytes):
                raise fields.refuse("data", "binary (MessagePack bin)", data)
            fields.optional_text("filename")
