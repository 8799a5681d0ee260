"""Consent questions as AG-UI interrupts, and `resume` entries as their answers (pure).

A call the policy asks about (Ask) is put to the front end: the response ends with `RUN_FINISHED`
whose outcome is `interrupt`, one `Interrupt` per question, and the next request answers every
one of them in `resume`:

```
Interrupt    {id: "approval-<toolCallId>", reason: "tool_call", toolCallId, message,
              responseSchema, expiresAt, metadata: {toolwire: {mode, tool, allowAlways}}}
ResumeEntry  {interruptId, status: "resolved", payload: {approved, editedArgs?, reason?, scope?}}
             {interruptId, status: "cancelled"}                               → denied
```

`approved` must be a JSON boolean; `editedArgs` (an object) approves the call once with those
arguments in place of the model's (validated against the tool's parameters like the model's);
`reason` is shown to the model when the call is refused; `scope: "thread"` allows the tool for the
rest of the thread when the interrupt's `allowAlways` says it may. The shape is that of
pydantic-ai's AG-UI adapter (its `approved`, `editedArgs`, `reason`), plus `scope`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError
from pydantic.alias_generators import to_camel

from ..._extras import import_extra
from ...policy import ConsentAnswer
from ..frontends.answers import Approval, HistoryConflict
from ..frontends.live_runs import Asking

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import Interrupt, ResumeEntry  # noqa: E402

__all__ = ["INTERRUPT_PREFIX", "REASON", "approvals", "interrupt"]

INTERRUPT_PREFIX: Final = "approval-"
"""An interrupt's id is this and the id of the call it asks about."""
REASON: Final = "tool_call"
"""`Interrupt.reason` of a consent question (pydantic-ai's adapter uses the same)."""

_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object"},
        "reason": {"type": "string"},
        "scope": {"type": "string", "enum": ["once", "thread"]},
    },
    "required": ["approved"],
}


class _Payload(BaseModel):
    """`ResumeEntry.payload` of a resolved consent question (camelCase on the wire only)."""

    model_config = ConfigDict(alias_generator=to_camel)

    approved: StrictBool
    edited_args: dict[str, Any] | None = None
    reason: str | None = None
    scope: Literal["once", "thread"] = "once"


def interrupt(asking: Asking, consent_timeout: float) -> Interrupt:
    """The interrupt that puts one consent question to the front end."""
    request = asking.request
    schema = {**_SCHEMA, "properties": dict(_SCHEMA["properties"])}
    if not request.allow_always:
        del schema["properties"]["scope"]
    expires = datetime.fromtimestamp(asking.asked_at + consent_timeout, UTC)
    return Interrupt(
        id=INTERRUPT_PREFIX + request.call.id,
        reason=REASON,
        tool_call_id=request.call.id,
        message=f"May '{request.tool}' run? {request.reason[:1].upper()}{request.reason[1:]}.",
        response_schema=schema,
        expires_at=expires.isoformat().replace("+00:00", "Z"),
        metadata={"toolwire": {"tool": request.tool, "mode": request.mode.value, "allowAlways": request.allow_always}},
    )


def approvals(resume: Sequence[ResumeEntry]) -> tuple[Approval, ...]:
    """The answers `resume` gives, by call id.

    Raises:
        HistoryConflict: An entry is not for a consent question (400 `unknown_interrupt`), answers
            one twice, or its payload is not the interrupt's `responseSchema` (400 `invalid_resume`).
    """
    found: dict[str, Approval] = {}
    for entry in resume:
        if not entry.interrupt_id.startswith(INTERRUPT_PREFIX):
            raise HistoryConflict(
                f"interrupt {entry.interrupt_id!r} is not one of this server's", code="unknown_interrupt"
            )
        call_id = entry.interrupt_id.removeprefix(INTERRUPT_PREFIX)
        if call_id in found:
            raise HistoryConflict(f"interrupt {entry.interrupt_id!r} is answered twice", code="invalid_resume")
        found[call_id] = Approval(call_id, _answer(entry))
    return tuple(found.values())


def _answer(entry: ResumeEntry) -> ConsentAnswer:
    if entry.status == "cancelled":
        return ConsentAnswer(False, "the user dismissed the question")
    try:
        payload = _Payload.model_validate(entry.payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, error['loc'])) or 'payload'}: {error['msg']}" for error in exc.errors()[:5]
        )
        raise HistoryConflict(
            f"the answer to interrupt {entry.interrupt_id!r} is not its responseSchema "
            f'({problems}); send {{"approved": true}} or {{"approved": false}}',
            code="invalid_resume",
        ) from None
    if not payload.approved:
        return ConsentAnswer(False, payload.reason or None)
    return ConsentAnswer(True, scope=payload.scope, arguments=payload.edited_args)
