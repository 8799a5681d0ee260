"""The one converter between `ToolResult` and the ToolUseResult message (type 7).

The server, the Python client and the ledger use it; the TypeScript client has its twin in
`web/src/results.ts`. The code ↔ outcome type table is `toolwire.envelopes.CODE_RESULT_TYPES`
(with `DEFAULT_CODES`), read here and nowhere else on the way in or out.

```
ToolResult ──result_message()──► ToolUseResult ──encode──► bytes
bytes ──decode──► ToolUseResult ──tool_result(call_id, tool, deadline_ms)──► ToolResult
ToolUseResult ──answer_json()──► the ledger's saved answer ──answer_from_json()──► ToolUseResult
```

What a message carries, once each:

- a success's value: `result` (seed 001; a value that is not a map as `{"value": ...}`) or, for
  a client tool's content items (seed 004), `content`; never both. A frame from another
  implementation may send both: `content` wins.
- a failure's details: `errorCode` and `errorMessage` (seed 001), and in `result` the outcome's
  seed 000 payload: `{"timeout": {"durationMs", "effectUnknown"}}`, `{"denied": {"tool",
  "reason"}}`, `{"canceled": {"reason", "by"}}`, `{"error": {"type"}}`. A frame without it (another
  implementation's) is read from the seed's standard texts instead: "Tool execution exceeded
  timeout of 5000ms", "Call to 'X' was denied: reason".
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, Final, cast

from ..envelopes import (
    CANCELED_BY,
    DEFAULT_CODES,
    EFFECT_UNKNOWN_NOTE,
    PAYLOAD_KEYS,
    ResultType,
    ToolResult,
    result_type_for_code,
    unwrap_value,
    wrap_value,
)
from .error_codes import ErrorCode, ProtocolError
from .tool_use import ToolUseResult

__all__ = [
    "answer_from_json",
    "answer_json",
    "content_value",
    "failure_result",
    "result_message",
    "tool_result",
]

_TIMEOUT_TEXT: Final = re.compile(r"timeout of (\d+)\s*ms")
_DENIED_TEXT: Final = re.compile(r"Call to '(.*?)' was denied: (.*)", re.DOTALL)
_EMPTY: Final[Mapping[str, Any]] = {}


def result_message(result: ToolResult, request_id: str) -> ToolUseResult:
    """Return the ToolUseResult that reports `result` as the answer to the request `request_id`.

    A success carries its value in `result`. A failure carries `errorCode` (the result's code, or
    its outcome type's default), `errorMessage` (its `error` text), its outcome payload in `result`
    (an Error's only when it has an `error_type`), and `resultType` only when the code does not
    imply the outcome type. `needsFollowup` is sent only when it differs from the wire's default
    (false on success; on failure true, false when `terminal`); `terminal` and `message` only when set.
    """
    default = False if result.success else not result.terminal
    followup = None if result.needs_followup is default else result.needs_followup
    if result.success:
        value = wrap_value(result.data)
        return ToolUseResult(
            id=request_id,
            success=True,
            result=None if value is None else dict(value),
            needs_followup=followup,
            terminal=result.terminal,
            message=result.message,
        )
    code = result.wire_code or DEFAULT_CODES[ResultType.ERROR]
    return ToolUseResult(
        id=request_id,
        success=False,
        result=_failure_payload(result),
        error_code=code,
        error_message=result.error or result.message or "",
        result_type=None if result.type is result_type_for_code(code) else int(result.type),
        needs_followup=followup,
        terminal=result.terminal,
        message=result.message,
    )


def tool_result(
    message: ToolUseResult,
    *,
    call_id: str | None = None,
    tool: str | None = None,
    deadline_ms: int | None = None,
) -> ToolResult:
    """Return the `ToolResult` a ToolUseResult reports, bound to the model's call.

    Args:
        message: The ToolUseResult (received, or read back from the ledger).
        call_id: The model's call id; defaults to the request id.
        tool: The tool the request was for: a Denied payload names it.
        deadline_ms: The request's deadline: a Timeout's duration when the message gives none.

    A success's value is its `content` items' value (`content_value`) when it has items, else its
    `result`. A failure's outcome type is `resultType` when sent, else its code's (a code this
    version does not know is an Error that keeps the code); the details are read from the outcome
    payload in `result`, else from the standard texts (see `failure_result`). Then `needsFollowup`
    (default: true on failure, unless `terminal`), `terminal` and `message` apply. `augmentation`
    is not part of a `ToolResult`: the client tools layer reads it from the message.

    Raises:
        ProtocolError: 105 when `result_type` is not an outcome type.
    """
    bound = message.id if call_id is None else call_id
    if message.success:
        value = content_value(message.content) if message.content else unwrap_value(message.result)
        result = ToolResult.ok(bound, value, message=message.message, terminal=message.terminal)
        return result if message.needs_followup is None else replace(result, needs_followup=message.needs_followup)
    try:
        named = None if message.result_type is None else ResultType(message.result_type)
    except ValueError:
        problem = f"ToolUseResult.resultType must be an integer in 0..4, got {message.result_type!r}"
        raise ProtocolError(ErrorCode.INVALID_MESSAGE, problem) from None
    code = message.error_code or DEFAULT_CODES.get(named or ResultType.ERROR) or DEFAULT_CODES[ResultType.ERROR]
    followup = message.needs_followup
    if followup is None:
        followup = not message.terminal
    result = failure_result(
        bound,
        code,
        message.error_message or (f"The client reported that '{tool}' failed." if tool else "The tool failed."),
        type=named,
        payload=message.result,
        tool=tool,
        deadline_ms=deadline_ms,
        needs_followup=followup,
    )
    changes: dict[str, Any] = {}
    if message.content and result.type is ResultType.ERROR:
        changes["data"] = content_value(message.content)
    if message.terminal:
        changes["terminal"] = True
    if message.message is not None:
        changes["message"] = message.message
    return replace(result, **changes) if changes else result


def failure_result(
    call_id: str | None,
    code: str,
    message: str,
    *,
    type: ResultType | None = None,
    payload: Any = None,
    tool: str | None = None,
    deadline_ms: int | None = None,
    needs_followup: bool | None = None,
) -> ToolResult:
    """Build the failed outcome a peer reported (a ToolUseResult's failure fields).

    The outcome type is `type` when given, else the one `code` stands for; a code that does not
    stand for the type (a tool's own code for a denial) is kept in `error_code`. The outcome's
    seed 000 payload, when the peer sent one as `payload`, gives the details (`durationMs`,
    `effectUnknown`, `reason`, `by`, an error's `type`); else they are read from the seed's standard
    texts ("Tool execution exceeded timeout of 5000ms", "... (the tool could not be stopped; its
    effect is unknown)", "Call to 'X' was denied: reason"), which another implementation may send.

    Args:
        call_id: The call the result answers.
        code: The wire error code.
        message: The peer's error message.
        type: The outcome type the peer named, when its code does not imply it.
        payload: The payload object the peer sent beside the failure, if any.
        tool: The tool the request was for (a Denied payload names it; wins over the text's).
        deadline_ms: A Timeout's duration when the report gives none (the request's deadline).
        needs_followup: None for each constructor's default (the model follows up, except
            after a cancel by the user).
    """
    implied = result_type_for_code(code)
    result_type = implied if type is None or type is ResultType.SUCCESS else type
    sent = _sent_detail(payload, PAYLOAD_KEYS.get(result_type, "error"))
    followup = True if needs_followup is None else needs_followup  # the default of all but `canceled`
    match result_type:
        case ResultType.TIMEOUT:
            duration, found = sent.get("durationMs"), _TIMEOUT_TEXT.search(message)
            if not isinstance(duration, int) or isinstance(duration, bool) or duration < 0:
                duration = int(found.group(1)) if found else deadline_ms
            unknown = sent.get("effectUnknown") is True or message.endswith(EFFECT_UNKNOWN_NOTE)
            result = ToolResult.timeout(call_id, duration, unknown, needs_followup=followup)
        case ResultType.CANCELED:
            by, reason = sent.get("by"), sent.get("reason")
            result = ToolResult.canceled(
                call_id,
                reason if isinstance(reason, str) else message,
                by if by in CANCELED_BY else "user",
                needs_followup=needs_followup,
            )
        case ResultType.DENIED:
            standard = _DENIED_TEXT.fullmatch(message)
            reason = sent.get("reason")
            if not isinstance(reason, str):
                reason = standard.group(2) if standard else message
            named = sent.get("tool")
            named = tool or (named if isinstance(named, str) else standard.group(1) if standard else "")
            result = ToolResult.denied(call_id, named, reason, needs_followup=followup)
        case _:
            error_type = sent.get("type")
            return ToolResult.failed(
                call_id,
                message,
                code=code,
                error_type=error_type if isinstance(error_type, str) else None,
                needs_followup=followup,
            )
    return result if implied is result_type else replace(result, error_code=code)


def content_value(items: Iterable[Mapping[str, Any]]) -> Any:
    """Return the JSON value of a client tool's content items (the `ToolResult.data` of a success).

    No items give None, one text item its text, one json item its value, one binary item its
    `{"type": "binary", "mimeType", "data", "filename"}` object with `data` as base64; several
    items give the list of their objects.
    """
    objects = [_item_json(item) for item in items]
    match objects:
        case []:
            return None
        case [{"type": "text", "text": text}]:
            return text
        case [{"type": "json", "value": value}]:
            return value
        case [single]:
            return single
        case _:
            return objects


def answer_json(message: ToolUseResult) -> dict[str, Any]:
    """Return the JSON object of a client's answer, as the ledger saves it (binary data as base64)."""
    body = message.to_body()
    if message.content:
        body["content"] = [_item_json(item) for item in message.content]
    return body


def answer_from_json(value: Mapping[str, Any]) -> ToolUseResult:
    """Read an answer `answer_json` saved; also the shape saved before (`requestId`, `payload`).

    Raises:
        ProtocolError: 105 when the object is not a ToolUseResult body.
    """
    body = {key: item for key, item in value.items() if item is not None}
    if "payload" in body and "result" not in body and body.get("success") is False:
        body["result"] = body.pop("payload")  # saved by versions that kept the failure's payload apart
    content = body.get("content")
    if isinstance(content, list):
        body["content"] = [_item_from_json(item) for item in cast("list[Any]", content)]
    return ToolUseResult.from_body(body)


def _failure_payload(result: ToolResult) -> dict[str, Any] | None:
    """The seed 000 payload a failure sends in `result`: its details as structured fields."""
    if result.type is ResultType.ERROR:
        return None if result.error_type is None else {"error": {"type": result.error_type}}
    return dict(cast("Mapping[str, Any]", result.data))


def _sent_detail(payload: Any, key: str) -> Mapping[str, Any]:
    if isinstance(payload, Mapping):
        inner = cast("Mapping[str, Any]", payload).get(key)
        if isinstance(inner, Mapping):
            return cast("Mapping[str, Any]", inner)
    return _EMPTY


def _item_json(item: Mapping[str, Any]) -> dict[str, Any]:
    match item.get("type"):
        case "text":
            return {"type": "text", "text": item.get("text")}
        case "json":
            return {"type": "json", "value": item.get("value")}
        case _:
            data = item.get("data")
            if isinstance(data, bytes | bytearray):
                data = base64.b64encode(data).decode("ascii")
            return {"type": "binary", "mimeType": item.get("mimeType"), "data": data, "filename": item.get("filename")}


def _item_from_json(item: Any) -> Any:
    if not isinstance(item, Mapping):
        return item
    fields = {key: value for key, value in cast("Mapping[str, Any]", item).items() if value is not None}
    if fields.get("type") == "binary" and isinstance(data := fields.get("data"), str):
        fields["data"] = base64.b64decode(data)
    return fields
