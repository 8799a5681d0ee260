"""The `messages` of a `RunAgentInput`, reconciled with the stored transcript: `reconcile` (pure).

The store is the truth. A client sends its whole view of the thread; the server takes from it only
what is new, at its end, and checks that everything before was said in the thread:

```
messages = [ ...history...                 the thread's transcript has each, in this order
             tool results for open calls   the answers of the thread's waiting front-end calls
             user messages ]               the new prompt (several are joined by a blank line)
```

- History is matched in order, as a subsequence of the transcript (a client may have left out
  messages, e.g. those of a run it did not watch): a user message by its text, an assistant
  message by its tool call ids (by its text when it has none), a tool message by its call id.
- A tool message for a call that has its result already is history: accepted when it says what
  the transcript says (a repeated request is idempotent), refused otherwise (409: a call has one
  result). A tool message for a call the thread never made is refused (400).
- `system`, `developer`, `activity` and `reasoning` messages are the client's own: ignored.
- A message that is not in the transcript is refused (400), never merged into it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from ..._extras import import_extra

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import AssistantMessage as AguiAssistantMessage  # noqa: E402
from ag_ui.core import Message as AguiMessage  # noqa: E402
from ag_ui.core import TextPart  # noqa: E402
from ag_ui.core import ToolMessage as AguiToolMessage  # noqa: E402
from ag_ui.core import UserMessage as AguiUserMessage  # noqa: E402

from ...messages import AssistantMessage, Message, ToolResultMessage, UserMessage  # noqa: E402
from ..frontends.answers import Answer, HistoryConflict, Reconciled  # noqa: E402
from .event_map import render_result  # noqa: E402

__all__ = ["Answer", "HistoryConflict", "Reconciled", "reconcile"]


_IGNORED = frozenset({"system", "developer", "activity", "reasoning"})


def reconcile(
    stored: Sequence[Message],
    waiting: Collection[str],
    messages: Sequence[AguiMessage],
    decided: Mapping[str, ToolResultMessage] | None = None,
) -> Reconciled:
    """Split the client's `messages` into history (checked against `stored`) and what is new.

    Args:
        stored: The thread's transcript.
        waiting: Ids of the thread's front-end calls that wait for a result.
        messages: `RunAgentInput.messages`.
        decided: Results of the open batch's other calls (in the ledger, not yet in the transcript,
            which gets a batch's results together): a client has them from `TOOL_CALL_RESULT`.

    Raises:
        HistoryConflict: A message is not in the transcript, a tool message answers a call the
            thread never made, or gives a settled call another result.
    """
    relevant = [message for message in messages if message.role not in _IGNORED]
    end = len(relevant)
    prompts: list[str] = []
    while end and isinstance(last := relevant[end - 1], AguiUserMessage):
        end -= 1
        prompts.insert(0, _text(last, "user"))
    answers: list[Answer] = []
    decided = decided or {}
    while end and isinstance(tail := relevant[end - 1], AguiToolMessage):
        if tail.tool_call_id in waiting:
            answers.insert(0, Answer(tail.tool_call_id, _text(tail, "tool"), tail.error))
        elif (result := decided.get(tail.tool_call_id)) is not None:
            if not _says(result, tail):
                _refuse_result(tail, result)
        else:
            break
        end -= 1
    if len({answer.call_id for answer in answers}) < len(answers):
        raise HistoryConflict("two tool messages answer the same call")
    _check_history(stored, relevant[:end])
    return Reconciled("\n\n".join(prompts) if prompts else None, tuple(answers))


def _check_history(stored: Sequence[Message], history: Sequence[AguiMessage]) -> None:
    results = {message.call_id: message for message in stored if isinstance(message, ToolResultMessage)}
    position = 0
    for message in history:
        found = _find(stored, position, message)
        if found is None:
            if isinstance(message, AguiToolMessage):
                _refuse_result(message, results.get(message.tool_call_id))
            raise HistoryConflict(
                f"message {message.id!r} ({message.role}) is not in this thread's transcript: the server's "
                "transcript is the thread's history; send only what it has, then the new user message"
            )
        position = found + 1


def _find(stored: Sequence[Message], start: int, message: AguiMessage) -> int | None:
    """The index of the first stored message from `start` that `message` stands for."""
    for index in range(start, len(stored)):
        if _same(stored[index], message):
            return index
    return None


def _same(stored: Message, message: AguiMessage) -> bool:
    match stored, message:
        case UserMessage(content=content), AguiUserMessage():
            return _text(message, "user") == content
        case AssistantMessage(text=text, tool_calls=calls), AguiAssistantMessage(tool_calls=client_calls):
            if client_calls:
                return {call.id for call in client_calls} <= {call.id for call in calls}
            return not calls and (message.content or "") == text
        case ToolResultMessage(), AguiToolMessage(tool_call_id=call_id):
            return call_id == stored.call_id and _says(stored, message)
        case _:
            return False


def _says(stored: ToolResultMessage, message: AguiToolMessage) -> bool:
    """True when a tool message gives the stored result: as the server rendered it, or as the front end answered."""
    content = _text(message, "tool")
    if message.error is None and content == render_result(stored.result):
        return True
    given = Answer(stored.call_id, content, message.error).result(stored.tool_name)
    return given.type is stored.result.type and given.payload() == stored.result.payload()


def _refuse_result(message: AguiToolMessage, stored: ToolResultMessage | None) -> None:
    if stored is None:
        raise HistoryConflict(
            f"tool message {message.id!r} answers call {message.tool_call_id!r}, which this thread is not "
            "waiting for (unknown call)",
            code="unknown_tool_call",
        )
    outcome = stored.result.type.name.lower()
    raise HistoryConflict(
        f"call {message.tool_call_id!r} has its result already ({outcome}); a call gets one result, "
        "and this tool message gives it another",
        status=409,
        code="tool_call_settled",
    )


def _text(message: AguiUserMessage | AguiToolMessage, role: str) -> str:
    """A message's text: its string content, or its text parts joined (other parts are refused)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if not isinstance(part, TextPart):
            raise HistoryConflict(f"a {role} message's {part.type!r} part is not supported; send text")
        parts.append(part.text)
    return "".join(parts)
