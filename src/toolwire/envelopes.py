"""`ToolCall` and `ToolResult`: what a model asks to run, and the one outcome it gets back.

A `ToolResult` has one of five outcome types (`ResultType`) and converts to three shapes:

- `to_dict()` / `from_dict()`: the JSON envelope (the fields of the tools spec in camelCase, plus
  `callId` and, when `success` alone does not imply it, `type`);
- `payload()` / `from_payload()`: the JSON a model sees, by the convention of each outcome type;
- the ToolUseResult wire message: `toolwire.protocol.results` (`result_message`, `tool_result`),
  which reads this module's code table (`CODE_RESULT_TYPES`, `DEFAULT_CODES`).

`data` is any JSON value in Python and in `payload()` (seed 000). The JSON envelope's `data`
(seed 002) and the wire's `result` (seed 001) are objects: there a value that is not an object,
and an object whose only key is `value`, is written as `{"value": ...}`, and decoders unwrap
`{"value": x}` to `x` (`wrap_value` / `unwrap_value`), so every form gives back the same value.

For Canceled, Timeout and Denied results `data` holds the outcome's payload object itself, e.g.
`{"timeout": {"durationMs": 5000}}`; an Error result keeps its message, code and type in `error`,
`error_code` and `error_type`, from which `payload()` builds the error object.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Any, Final, Literal, cast

from ._fast import maker, quick_init, replacer
from .errors import EnvelopeError

__all__ = [
    "CANCELED_BY",
    "CODE_RESULT_TYPES",
    "DEFAULT_CODES",
    "EFFECT_UNKNOWN_NOTE",
    "PAYLOAD_KEYS",
    "SUCCESS",
    "CanceledBy",
    "ResultType",
    "ToolCall",
    "ToolResult",
    "arguments_hash",
    "canonical_json",
    "is_terminal_result",
    "new_success",
    "result_type_for_code",
    "unwrap_value",
    "wrap_value",
]


class ResultType(IntEnum):
    """How a tool call concluded. Check it before reading a result's payload."""

    SUCCESS = 0
    """The tool ran and returned a value."""
    ERROR = 1
    """The tool failed, or the call could not be made (unknown tool, invalid arguments, ...)."""
    CANCELED = 2
    """The call was canceled before or while it ran, by the user, a policy or the system."""
    TIMEOUT = 3
    """The tool did not finish within its deadline."""
    DENIED = 4
    """The permission policy, or the person asked for consent, refused the call."""


SUCCESS: Final = ResultType.SUCCESS
"""`ResultType.SUCCESS` for the hot paths: a module constant is read ten times faster than an enum member."""

CanceledBy = Literal["user", "policy", "system"]
CANCELED_BY: Final = frozenset(("user", "policy", "system"))
"""Who may cancel a call (a Canceled payload's `by`)."""

CODE_RESULT_TYPES: Final[Mapping[str, ResultType]] = MappingProxyType(
    {
        "unknown_tool": ResultType.ERROR,
        "invalid_parameters": ResultType.ERROR,
        "execution_error": ResultType.ERROR,
        "client_disconnected": ResultType.ERROR,
        "result_too_large": ResultType.ERROR,
        "invalid_result": ResultType.ERROR,
        "timeout": ResultType.TIMEOUT,
        "canceled": ResultType.CANCELED,
        "denied": ResultType.DENIED,
    }
)
"""The wire error codes toolwire knows and the outcome type of each; any other code is an Error."""

DEFAULT_CODES: Final[Mapping[ResultType, str]] = MappingProxyType(
    {
        ResultType.ERROR: "execution_error",
        ResultType.CANCELED: "canceled",
        ResultType.TIMEOUT: "timeout",
        ResultType.DENIED: "denied",
    }
)
"""The wire error code of each failed outcome type when a result names none of its own."""

PAYLOAD_KEYS: Final[Mapping[ResultType, str]] = MappingProxyType(
    {ResultType.CANCELED: "canceled", ResultType.TIMEOUT: "timeout", ResultType.DENIED: "denied"}
)
"""The outcome type of each payload convention: a Canceled, Timeout or Denied result's `data` is
`{key: {...}}` (seed 000)."""
EFFECT_UNKNOWN_NOTE: Final = " (the tool could not be stopped; its effect is unknown)"
"""Ends a Timeout's message when its effect is unknown (the wire's text for peers that read no payload)."""
_EMPTY: Final[Mapping[str, Any]] = MappingProxyType({})


def result_type_for_code(code: str) -> ResultType:
    """Return the outcome type a wire error code stands for (custom codes are errors)."""
    return CODE_RESULT_TYPES.get(code, ResultType.ERROR)


def wrap_value(value: Any) -> dict[str, Any] | None:
    """Return the JSON object form of a result's value (the envelope's `data`, the wire's `result`).

    A map stays as it is, except one whose only key is `value`; that map and any other value travel
    as `{"value": ...}`. None stays None (the field is left out).
    """
    if value is None:
        return None
    if isinstance(value, Mapping) and not (len(value) == 1 and "value" in value):  # pyright: ignore[reportUnknownArgumentType]
        return cast("dict[str, Any]", value)
    return {"value": value}


def unwrap_value(value: Any) -> Any:
    """Return the value an object form stands for: `{"value": x}` is `x`; anything else itself."""
    if isinstance(value, Mapping) and len(value) == 1 and "value" in value:  # pyright: ignore[reportUnknownArgumentType]
        inner: Any = cast("Mapping[str, Any]", value)["value"]
        return inner
    return cast(Any, value)


def canonical_json(value: Any) -> str:
    """Serialize a JSON value the same way every time: sorted keys, no spaces, no NaN."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """Return the SHA-256 hex digest of the canonical JSON of a call's arguments.

    Approvals and denials are bound to this hash, so a call with other arguments is a new call.
    """
    return hashlib.sha256(canonical_json(arguments).encode()).hexdigest()


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A model's request to run one tool."""

    id: str
    """Correlates the call with its `ToolResult`; unique within a thread."""
    name: str
    """The name the tool is registered under."""
    arguments: dict[str, Any]
    """The arguments as decoded from the model, before validation."""

    @classmethod
    def from_dict(cls, value: Any) -> ToolCall:
        """Decode the JSON form `{"id", "name", "arguments"}`.

        Raises:
            EnvelopeError: A field is missing, unknown or of the wrong type, or `arguments` is
                not a JSON object.
        """
        obj = _require_object(value, "ToolCall")
        unknown = [key for key in obj if key not in ("id", "name", "arguments")]
        if unknown:
            raise EnvelopeError(
                f"ToolCall has unknown field(s) {_names(unknown)}; it takes exactly: id, name, arguments"
            )
        missing = [key for key in ("id", "name", "arguments") if key not in obj]
        if missing:
            raise EnvelopeError(f"ToolCall is missing field(s) {_names(missing)}")
        call_id, name, arguments = obj["id"], obj["name"], obj["arguments"]
        if not isinstance(call_id, str) or not call_id:
            raise EnvelopeError(f"ToolCall.id must be a non-empty string, got {_kind(call_id)}")
        if not isinstance(name, str) or not name:
            raise EnvelopeError(f"ToolCall.name must be a non-empty string, got {_kind(name)}")
        args = _require_object(arguments, "ToolCall.arguments")
        return cls(id=call_id, name=name, arguments=dict(args))

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form `{"id", "name", "arguments"}`."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@quick_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The one outcome of one tool call.

    Build results with the constructors, one per outcome: `ok` (Success), `failed` (Error),
    `canceled`, `timeout` and `denied`. They fill the payload and the flags the way the rest of
    toolwire expects.
    """

    call_id: str | None = None
    """The id of the `ToolCall` this result answers."""
    type: ResultType = ResultType.SUCCESS
    """The outcome type; `success` is true exactly when this is `SUCCESS`."""
    terminal: bool = False
    """End the run after this call's batch, whatever the outcome."""
    needs_followup: bool = False
    """Ask the model to continue even though the call failed (so it can correct itself)."""
    next_action: str | None = None
    """A machine-readable hint for the next operation, e.g. `"retry"` for a transient failure."""
    message: str | None = None
    """Text for the user."""
    error: str | None = None
    """What went wrong, for the model and the logs; set on every failed outcome."""
    error_code: str | None = None
    """The machine-readable code of an Error, e.g. `invalid_parameters`."""
    error_type: str | None = None
    """The kind of error, e.g. the name of the exception a tool raised."""
    data: Any = None
    """The tool's value on success; the outcome's payload object for Canceled, Timeout and Denied."""
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    """Fields this version does not know, kept so they survive a round trip."""
    raw_type: int | None = None
    """The undecodable numeric type this result arrived with, when `type` fell back to ERROR."""

    def __post_init__(self) -> None:
        if self.type is not SUCCESS and (key := PAYLOAD_KEYS.get(self.type)) is not None:
            if not _is_payload(self.data, key):
                raise EnvelopeError(
                    f"a {self.type.name} result must carry its payload in data, "
                    f"e.g. {{{key!r}: {{...}}}}; use ToolResult.{key}() to build one"
                )

    @property
    def success(self) -> bool:
        """True exactly when the outcome is `ResultType.SUCCESS`."""
        return self.type is SUCCESS

    @property
    def wire_code(self) -> str | None:
        """The wire error code: `error_code`, or the default code of the outcome type."""
        return self.error_code or DEFAULT_CODES.get(self.type)

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def ok(
        cls,
        call_id: str | None,
        data: Any = None,
        *,
        message: str | None = None,
        terminal: bool = False,
        next_action: str | None = None,
    ) -> ToolResult:
        """A Success carrying the tool's value (any JSON value)."""
        return cls(call_id=call_id, data=data, message=message, terminal=terminal, next_action=next_action)

    @classmethod
    def failed(
        cls,
        call_id: str | None,
        message: str,
        *,
        code: str = "execution_error",
        error_type: str | None = None,
        needs_followup: bool = True,
        terminal: bool = False,
        next_action: str | None = None,
        data: Any = None,
    ) -> ToolResult:
        """An Error with a code (`execution_error` unless given) that the model can act on."""
        return cls(
            call_id=call_id,
            type=ResultType.ERROR,
            error=message,
            error_code=code,
            error_type=error_type,
            needs_followup=needs_followup and not terminal,
            terminal=terminal,
            next_action=next_action,
            data=data,
        )

    @classmethod
    def canceled(
        cls,
        call_id: str | None,
        reason: str,
        by: CanceledBy = "user",
        *,
        needs_followup: bool | None = None,
    ) -> ToolResult:
        """A Canceled outcome; unless told, the model follows up except when the user canceled."""
        if by not in CANCELED_BY:
            raise ValueError(f"by must be one of user, policy, system; got {by!r}")
        return cls(
            call_id=call_id,
            type=ResultType.CANCELED,
            error=reason,
            needs_followup=by != "user" if needs_followup is None else needs_followup,
            data={"canceled": {"reason": reason, "by": by}},
        )

    @classmethod
    def timeout(
        cls,
        call_id: str | None,
        duration_ms: int | None,
        effect_unknown: bool = False,
        *,
        needs_followup: bool = True,
    ) -> ToolResult:
        """A Timeout after `duration_ms`, the deadline that was exceeded.

        Pass `effect_unknown=True` when the tool could not be stopped and may still finish its work.
        """
        detail: dict[str, Any] = {"durationMs": duration_ms}
        if effect_unknown:
            detail["effectUnknown"] = True
        return cls(
            call_id=call_id,
            type=ResultType.TIMEOUT,
            error=_timeout_message(duration_ms, effect_unknown),
            needs_followup=needs_followup,
            data={"timeout": detail},
        )

    @classmethod
    def denied(cls, call_id: str | None, tool: str, reason: str, *, needs_followup: bool = True) -> ToolResult:
        """A Denied outcome: the policy or the person asked refused to run `tool`."""
        return cls(
            call_id=call_id,
            type=ResultType.DENIED,
            error=_denied_message(tool, reason),
            needs_followup=needs_followup,
            data={"denied": {"tool": tool, "reason": reason}},
        )

    def with_call_id(self, call_id: str | None) -> ToolResult:
        """Return this result bound to another call id (e.g. a cached result for a new call)."""
        return self if call_id == self.call_id else _with_call_id(self, call_id)

    # -- the model-facing payload ---------------------------------------------------------------

    def payload(self) -> Any:
        """Return the JSON the model sees, by the convention of the outcome type.

        Success: the tool's value. Error: `{"error": {"message", "code", "type"}}` (code and type
        only when set). Canceled: `{"canceled": {"reason", "by"}}`. Timeout:
        `{"timeout": {"durationMs"}}`, with `"effectUnknown": true` when it applies. Denied:
        `{"denied": {"tool", "reason"}}`.
        """
        match self.type:
            case ResultType.SUCCESS:
                return self.data
            case ResultType.ERROR:
                detail: dict[str, Any] = {"message": self.error or self.message or ""}
                if self.error_code is not None:
                    detail["code"] = self.error_code
                if self.error_type is not None:
                    detail["type"] = self.error_type
                return {"error": detail}
            case ResultType.CANCELED | ResultType.TIMEOUT | ResultType.DENIED:
                return self.data

    @classmethod
    def from_payload(cls, call_id: str | None, type: ResultType, payload: Any) -> ToolResult:
        """Build a result from an outcome type and its payload; the inverse of `payload()`.

        Raises:
            EnvelopeError: The payload does not follow the convention of `type`.
        """
        match type:
            case ResultType.SUCCESS:
                return cls.ok(call_id, payload)
            case ResultType.ERROR:
                if not _is_payload(payload, "error"):
                    raise EnvelopeError('an Error payload must be {"error": {"message": ...}}')
                detail = payload["error"]
                return cls(
                    call_id=call_id,
                    type=ResultType.ERROR,
                    error=_optional_str(detail, "message", "error.message") or "",
                    error_code=_optional_str(detail, "code", "error.code"),
                    error_type=_optional_str(detail, "type", "error.type"),
                    needs_followup=True,
                )
            case ResultType.CANCELED | ResultType.TIMEOUT | ResultType.DENIED:
                return cls(
                    call_id=call_id,
                    type=type,
                    error=_payload_message(type, payload),
                    needs_followup=True,
                    data=payload,
                )

    # -- the JSON envelope ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON envelope: seed fields in camelCase, in the seeds' order.

        `type` is written only when `success` does not already imply it (Success for true,
        Error for false); `callId` only when set; flags only when true.
        """
        out: dict[str, Any] = {}
        if self.call_id is not None:
            out["callId"] = self.call_id
        implied = ResultType.SUCCESS if self.success else ResultType.ERROR
        if self.raw_type is not None:
            out["type"] = self.raw_type
        elif self.type is not implied:
            out["type"] = int(self.type)
        out["success"] = self.success
        if self.terminal:
            out["terminal"] = True
        if self.needs_followup:
            out["needsFollowup"] = True
        for key, value in (
            ("nextAction", self.next_action),
            ("error", self.error),
            ("message", self.message),
        ):
            if value is not None:
                out[key] = value
        if self.data is not None:
            out["data"] = wrap_value(self.data)
        if self.error_code is not None:
            out["errorCode"] = self.error_code
        if self.error_type is not None:
            out["errorType"] = self.error_type
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, value: Any) -> ToolResult:
        """Decode the JSON envelope; unknown fields are kept in `extra`.

        An unknown numeric `type` decodes as ERROR and is kept in `raw_type`.

        Raises:
            EnvelopeError: `success` is missing, a field has the wrong type, or `type`
                contradicts `success`.
        """
        obj = _require_object(value, "ToolResult")
        if "success" not in obj:
            raise EnvelopeError("ToolResult is missing field 'success'")
        success = obj["success"]
        if not isinstance(success, bool):
            raise EnvelopeError(f"ToolResult.success must be a boolean, got {_kind(success)}")
        result_type, raw_type = _decode_type(obj.get("type"), success)
        extra = {key: item for key, item in obj.items() if key not in _ENVELOPE_KEYS}
        return cls(
            call_id=_optional_str(obj, "callId", "ToolResult.callId"),
            type=result_type,
            raw_type=raw_type,
            terminal=_optional_bool(obj, "terminal"),
            needs_followup=_optional_bool(obj, "needsFollowup"),
            next_action=_optional_str(obj, "nextAction", "ToolResult.nextAction"),
            message=_optional_str(obj, "message", "ToolResult.message"),
            error=_optional_str(obj, "error", "ToolResult.error"),
            error_code=_optional_str(obj, "errorCode", "ToolResult.errorCode"),
            error_type=_optional_str(obj, "errorType", "ToolResult.errorType"),
            data=unwrap_value(obj.get("data")),
            extra=MappingProxyType(extra) if extra else _EMPTY,
        )


new_success: Final = maker(ToolResult, "call_id", "data")
"""`new_success(call_id, data)`: `ToolResult(call_id=call_id, data=data)`, faster (a tool's value, once per call)."""

_with_call_id: Final = replacer(ToolResult, "call_id")
"""`dataclasses.replace(result, call_id=...)`, faster (`__post_init__` does not read the id)."""


def is_terminal_result(result: ToolResult | Mapping[str, Any] | None) -> bool:
    """Tell whether a result ends the run: `terminal`, or a failure without `needsFollowup`.

    Accepts a `ToolResult` or its JSON dict (camelCase or snake_case keys); None (no result
    yet) is not terminal, as in seed 002.
    """
    if isinstance(result, ToolResult):
        return result.terminal or (result.type is not SUCCESS and not result.needs_followup)
    if result is None:
        return False
    followup = result.get("needsFollowup", result.get("needs_followup"))
    return result.get("terminal") is True or (result.get("success") is False and followup is not True)


_ENVELOPE_KEYS: Final = frozenset(
    (
        "callId",
        "type",
        "success",
        "terminal",
        "needsFollowup",
        "nextAction",
        "message",
        "error",
        "errorCode",
        "errorType",
        "data",
    )
)


def _decode_type(value: Any, success: bool) -> tuple[ResultType, int | None]:
    if value is None:
        return (ResultType.SUCCESS if success else ResultType.ERROR), None
    if not isinstance(value, int) or isinstance(value, bool):
        raise EnvelopeError(f"ToolResult.type must be an integer, got {_kind(value)}")
    try:
        result_type, raw = ResultType(value), None
    except ValueError:
        result_type, raw = ResultType.ERROR, value
    if success != (result_type is ResultType.SUCCESS):
        raise EnvelopeError(f"ToolResult.success is {str(success).lower()} but type is {value}")
    return result_type, raw


def _is_payload(value: Any, key: str) -> bool:
    if not isinstance(value, Mapping) or len(value) != 1 or key not in value:  # pyright: ignore[reportUnknownArgumentType]
        return False
    if not isinstance(value[key], Mapping):
        return False
    detail = cast("Mapping[str, Any]", value[key])
    match key:
        case "canceled":
            return isinstance(detail.get("reason"), str) and detail.get("by") in CANCELED_BY
        case "timeout":
            duration = detail.get("durationMs")
            return duration is None or (isinstance(duration, int) and not isinstance(duration, bool))
        case "denied":
            return isinstance(detail.get("tool"), str) and isinstance(detail.get("reason"), str)
        case _:
            return True


def _payload_message(type: ResultType, payload: Any) -> str:
    if not _is_payload(payload, PAYLOAD_KEYS[type]):
        raise EnvelopeError(f"not a {type.name} payload: {payload!r:.200}")
    match type:
        case ResultType.TIMEOUT:
            detail = payload["timeout"]
            return _timeout_message(detail["durationMs"], detail.get("effectUnknown") is True)
        case ResultType.DENIED:
            detail = payload["denied"]
            return _denied_message(detail["tool"], detail["reason"])
        case _:
            return payload["canceled"]["reason"]


def _timeout_message(duration_ms: int | None, effect_unknown: bool) -> str:
    # The wire's standard text, which `protocol.results` reads the duration and the note back from.
    if duration_ms is None:
        message = "Tool execution exceeded its timeout"
    else:
        message = f"Tool execution exceeded timeout of {duration_ms}ms"
    return message + EFFECT_UNKNOWN_NOTE if effect_unknown else message


def _denied_message(tool: str, reason: str) -> str:
    return f"Call to '{tool}' was denied: {reason}"


def _require_object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise EnvelopeError(f"{what} must be a JSON object, got {_kind(value)}")
    obj: Mapping[Any, Any] = value  # pyright: ignore[reportUnknownVariableType]
    for key in obj:
        if not isinstance(key, str):
            raise EnvelopeError(f"{what} has a non-string key {key!r:.50}")
    return obj


def _optional_str(obj: Mapping[str, Any], key: str, what: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise EnvelopeError(f"{what} must be a string, got {_kind(value)}")
    return value


def _optional_bool(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise EnvelopeError(f"ToolResult.{key} must be a boolean, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case list() | tuple():
            return "an array"
        case Mapping():
            return "an object"
        case _:
            return type(value).__name__


def _names(keys: list[str]) -> str:
    return ", ".join(repr(key) for key in keys)
