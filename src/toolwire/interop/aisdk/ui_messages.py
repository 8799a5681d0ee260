"""The `UIMessage`s of a `useChat` request, reconciled with the stored transcript: `reconcile` (pure).

The store is the truth, as for AG-UI (`agui.reconcile`). `useChat` sends its whole view of the
chat; the server takes from it only what is new, at its end:

```
messages = [ ...history...                  user texts and tool call ids the transcript has
             assistant message              its tool parts with `state: "output-available"` (or
                                            `"output-error"`) for the thread's waiting calls: answers;
                                            `state: "approval-responded"`: answers to consent questions
             | user messages ]              or: the new prompt (text parts; several joined)
```

- Approvals: a tool part `approval-responded` (`chat.addToolApprovalResponse`) of the last message,
  the assistant's, answers the question about its call: `approval.approved` (a JSON boolean) and
  `approval.reason` (shown to the model when refused). Such a request is a resume: the endpoint
  checks that it answers every open question, and drops an answer to a question answered before
  (a repeated request is idempotent); a call the thread never made is refused (400
  `unknown_interrupt`).

- History: each user message's text must be a user message of the transcript, in order; each
  tool part's `toolCallId` must be a call of the thread. An assistant's text is not compared (the
  SDK joins a run's steps into one message).
- A tool part with an output for a call that has its result already is accepted when it says what
  the transcript says (a repeated request is idempotent), refused otherwise (409); an output for a
  call the thread never made is refused (400).
- `system` messages and parts other than text and tools (`step-start`, `reasoning`, `data-*`, ...)
  are the client's own: ignored. A `file` part in a new user message is refused (text only).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, cast

from ...envelopes import ResultType
from ...messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from ...policy import ConsentAnswer
from ..frontends.answers import Answer, Approval, HistoryConflict, Reconciled

__all__ = ["reconcile", "tool_parts"]

_OUTPUTS = frozenset({"output-available", "output-error", "output-denied"})


def reconcile(
    stored: Sequence[Message],
    waiting: Collection[str],
    messages: Sequence[Mapping[str, Any]],
    decided: Mapping[str, ToolResultMessage] | None = None,
) -> Reconciled:
    """Split the request's `messages` into history (checked against `stored`) and what is new.

    Args:
        stored: The thread's transcript.
        waiting: Ids of the thread's front-end calls that wait for an output.
        messages: The request's `messages` (`UIMessage[]`, as JSON).
        decided: Results of the open batch's other calls (in the ledger, not yet in the transcript).

    Raises:
        HistoryConflict: A message is not in the transcript, an output answers a call the thread
            never made, or gives a settled call another result; an approval's `approved` is not a
            boolean (400 `invalid_approval`).
    """
    relevant = [message for message in messages if message.get("role") in ("user", "assistant")]
    end = len(relevant)
    prompts: list[str] = []
    while end and relevant[end - 1].get("role") == "user":
        end -= 1
        prompts.insert(0, _text(relevant[end], new=True))
    results = {message.call_id: message for message in stored if isinstance(message, ToolResultMessage)}
    results.update(decided or {})
    answers: list[Answer] = []
    approvals: list[Approval] = []
    if not prompts and end and relevant[end - 1].get("role") == "assistant":
        for part in tool_parts(relevant[end - 1]):
            call_id = str(part.get("toolCallId"))
            if part.get("state") == "approval-responded":
                approvals.append(Approval(call_id, _consent(call_id, part)))
            elif call_id in waiting and part.get("state") in ("output-available", "output-error"):
                answers.append(_answer(call_id, part))
    answered = {answer.call_id for answer in answers} | {approval.call_id for approval in approvals}
    _check_history(stored, relevant, results, set(waiting), answered)
    prompt = "\n\n".join(prompts) if prompts else None
    return Reconciled(prompt, tuple(answers), tuple(approvals), resumed=bool(approvals))


def tool_parts(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A message's tool parts (`tool-<name>` and `dynamic-tool`)."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        return []
    found: list[Mapping[str, Any]] = []
    for part in cast(list[Any], parts):
        if isinstance(part, dict):
            typed = cast(dict[str, Any], part)
            kind = str(typed.get("type", ""))
            if kind.startswith("tool-") or kind == "dynamic-tool":
                found.append(typed)
    return found


def _check_history(
    stored: Sequence[Message],
    relevant: Sequence[Mapping[str, Any]],
    results: Mapping[str, ToolResultMessage],
    waiting: set[str],
    answered: set[str],
) -> None:
    users = [message.content for message in stored if isinstance(message, UserMessage)]
    calls = {call.id for message in stored if isinstance(message, AssistantMessage) for call in message.tool_calls}
    position = 0
    end = len(relevant)
    while end and relevant[end - 1].get("role") == "user":
        end -= 1  # the new prompt
    for message in relevant[:end]:
        if message.get("role") == "user":
            text = _text(message, new=False)
            try:
                position = users.index(text, position) + 1
            except ValueError:
                raise HistoryConflict(
                    f"user message {str(message.get('id'))!r} is not in this thread's transcript: the server's "
                    "transcript is the thread's history; send only what it has, then the new user message"
                ) from None
            continue
        for part in tool_parts(message):
            call_id = str(part.get("toolCallId"))
            state = part.get("state")
            if call_id in answered or (call_id in waiting and state not in _OUTPUTS):
                continue
            if call_id not in calls and call_id not in waiting:
                if state in _OUTPUTS:
                    raise HistoryConflict(
                        f"a tool part gives an output for call {call_id!r}, which this thread is not waiting "
                        "for (unknown call)",
                        code="unknown_tool_call",
                    )
                raise HistoryConflict(f"call {call_id!r} is not in this thread's transcript")
            result = results.get(call_id)
            if result is not None and state in _OUTPUTS and not _says(result, part):
                raise HistoryConflict(
                    f"call {call_id!r} has its result already ({result.result.type.name.lower()}); a call gets "
                    "one result, and this tool part gives it another",
                    status=409,
                    code="tool_call_settled",
                )


def _answer(call_id: str, part: Mapping[str, Any]) -> Answer:
    if part.get("state") == "output-error":
        return Answer(call_id, "", str(part.get("errorText") or "the front end's tool failed"))
    value = part.get("output")
    return Answer(call_id, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _consent(call_id: str, part: Mapping[str, Any]) -> ConsentAnswer:
    approval = part.get("approval")
    given = cast(dict[str, Any], approval) if isinstance(approval, dict) else {}
    approved = given.get("approved")
    if not isinstance(approved, bool):
        raise HistoryConflict(
            f"the tool part of call {call_id!r} is approval-responded, but its approval.approved is not a "
            "boolean: answer with chat.addToolApprovalResponse({id, approved: true | false})",
            code="invalid_approval",
        )
    reason = given.get("reason")
    return ConsentAnswer(approved, reason if isinstance(reason, str) and reason else None)


def _says(stored: ToolResultMessage, part: Mapping[str, Any]) -> bool:
    """True when a tool part's output is the stored result: as the server streamed it, or as the front end gave it."""
    result = stored.result
    match part.get("state"):
        case "output-denied":
            return result.type is ResultType.DENIED
        case "output-error":
            return result.type is not ResultType.SUCCESS
        case _:
            if result.type is ResultType.SUCCESS and part.get("output") == result.payload():
                return True
            given = _answer(stored.call_id, part).result(stored.tool_name)
            return given.type is result.type and given.payload() == result.payload()


def _text(message: Mapping[str, Any], *, new: bool) -> str:
    """A user message's text: its text parts joined (a new message's other parts, but `step-start`, are refused)."""
    parts = message.get("parts")
    texts: list[str] = []
    for part in cast(list[Any], parts) if isinstance(parts, list) else []:
        typed = cast(dict[str, Any], part) if isinstance(part, dict) else {}
        kind = typed.get("type")
        if kind == "text":
            texts.append(str(typed.get("text", "")))
        elif new and kind in ("file", "source-url", "source-document"):
            raise HistoryConflict(f"a user message's {kind!r} part is not supported; send text")
    return "".join(texts)
