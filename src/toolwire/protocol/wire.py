"""The wire's vocabulary: message type numbers, and a reader for the typed fields of a body.

`Fields` reads one body; each method returns the field's value or raises `ProtocolError` 105
naming the message and the field (`ToolUseRequest.timeoutMs must be an integer ≥ 1, got a
string`). A field whose value is null counts as absent, as many encoders write nulls.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum
from typing import Any, Final, cast

from .error_codes import ErrorCode, ProtocolError

__all__ = ["MessageType", "Fields", "kind"]


class MessageType(IntEnum):
    """The `type` of an envelope: the published protocol's numbers, and toolwire's own from 100."""

    ERROR = 1
    USER_MESSAGE = 2
    ASSISTANT_MESSAGE = 3
    TOOL_USE_REQUEST = 6
    TOOL_USE_RESULT = 7
    ACKNOWLEDGEMENT = 8
    CONTROL_STOP = 10
    CONFIGURATION = 12
    START_ANSWER = 13
    ASSISTANT_SENTENCE = 16
    REGISTER_TOOLS = 100
    REGISTER_TOOLS_RESULT = 101
    CONSENT_REQUEST = 102
    CONSENT_ANSWER = 103
    RUN_STATUS = 104
    TOOL_USE_CANCEL = 105


_REQUIRED: Final = object()


def kind(value: Any) -> str:
    """Name a decoded value's type the way the protocol speaks of it ("a map", "a string")."""
    match value:
        case None:
            return "nil"
        case bool():
            return "a boolean"
        case int():
            return "an integer"
        case float():
            return "a float"
        case str():
            return "a string"
        case bytes():
            return "binary"
        case list() | tuple():
            return "an array"
        case Mapping():
            return "a map"
        case _:
            return type(value).__name__


class Fields:
    """Typed access to the fields of one message body."""

    __slots__ = ("_body", "_what")

    def __init__(self, body: Mapping[str, Any], what: str) -> None:
        self._body = body
        self._what = what

    def refuse(self, key: str, expected: str, value: Any) -> ProtocolError:
        """Return the 105 error for a field that is not what it should be."""
        got = "missing" if value is None else f"got {kind(value)}"
        return ProtocolError(ErrorCode.INVALID_MESSAGE, f"{self._what}.{key} must be {expected}, {got}")

    def get(self, key: str) -> Any:
        """Return the raw value of a field, None when absent."""
        return self._body.get(key)

    def has(self, key: str) -> bool:
        """Tell whether a field is present and not null."""
        return self._body.get(key) is not None

    def text(self, key: str, default: Any = _REQUIRED, *, non_empty: bool = False) -> str:
        """Return a string field; required unless `default` is given."""
        value = self._body.get(key)
        if value is None and default is not _REQUIRED:
            return cast(str, default)
        if not isinstance(value, str) or (non_empty and not value):
            raise self.refuse(key, "a non-empty string" if non_empty else "a string", value)
        return value

    def optional_text(self, key: str) -> str | None:
        """Return a string field, or None when absent."""
        return self.text(key, None) if self.has(key) else None

    def flag(self, key: str, default: bool | None = None) -> bool:
        """Return a boolean field; required when `default` is None."""
        value = self._body.get(key)
        if value is None and default is not None:
            return default
        if not isinstance(value, bool):
            raise self.refuse(key, "a boolean", value)
        return value

    def optional_flag(self, key: str) -> bool | None:
        """Return a boolean field, or None when absent."""
        return self.flag(key) if self.has(key) else None

    def integer(self, key: str, default: int | None = None, *, low: int | None = None, high: int | None = None) -> int:
        """Return an integer field within [`low`, `high`]; required when `default` is None."""
        value = self._body.get(key)
        if value is None and default is not None:
            return default
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or (low is not None and value < low)
            or (high is not None and value > high)
        ):
            bounds = "" if low is None else f" ≥ {low}" if high is None else f" in {low}..{high}"
            raise self.refuse(key, f"an integer{bounds}", value)
        return value

    def optional_integer(self, key: str, *, low: int | None = None, high: int | None = None) -> int | None:
        """Return an integer field, or None when absent."""
        return self.integer(key, low=low, high=high) if self.has(key) else None

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        """Return a string field that must be one of `options`."""
        value = self._body.get(key)
        if value is None and default is not None:
            return default
        if value not in options:
            shown = " | ".join(f'"{option}"' for option in options)
            if isinstance(value, str):
                raise ProtocolError(ErrorCode.INVALID_MESSAGE, f"{self._what}.{key} must be {shown}, got {value!r:.40}")
            raise self.refuse(key, shown, value)
        return cast(str, value)

    def mapping(self, key: str, default: dict[str, Any] | None = None) -> dict[str, Any]:
        """Return a map field; required when `default` is None."""
        value = self._body.get(key)
        if value is None and default is not None:
            return default
        if not isinstance(value, dict):
            raise self.refuse(key, "a map", value)
        return cast("dict[str, Any]", value)

    def optional_mapping(self, key: str) -> dict[str, Any] | None:
        """Return a map field, or None when absent."""
        return self.mapping(key) if self.has(key) else None

    def texts(self, key: str) -> tuple[str, ...]:
        """Return an array of strings; absent means empty."""
        return cast("tuple[str, ...]", self._array(key, str, "a string"))

    def mappings(self, key: str) -> tuple[dict[str, Any], ...]:
        """Return an array of maps; absent means empty."""
        return cast("tuple[dict[str, Any], ...]", self._array(key, dict, "a map"))

    def _array(self, key: str, item_type: type, expected: str) -> tuple[Any, ...]:
        value = self._body.get(key)
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise self.refuse(key, "an array", value)
        items = tuple(cast("list[Any]", value))
        for index, item in enumerate(items):
            if not isinstance(item, item_type):
                message = f"{self._what}.{key}[{index}] must be {expected}, got {kind(item)}"
                raise ProtocolError(ErrorCode.INVALID_MESSAGE, message)
        return items
