"""Tool calls as models write them: their arguments, their ids, and calls written in plain text.

Shared by the model adapters. A call whose arguments are not a JSON object (malformed, or cut off
by a token limit) is kept with the raw text under `INVALID_JSON_KEY`: no tool has that parameter,
so the pipeline answers it with an `invalid_parameters` result and the model can try again.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Collection
from typing import Any, Final, cast

from ..envelopes import ToolCall
from ..schema import INVALID_JSON_KEY

__all__ = ["TextGate", "new_call_id", "parse_arguments", "parse_text_tool_calls"]

_CALL_MARKERS: Final = ("<tool_call>", "```", "{")
"""Where a tool call written in the text may start."""


def parse_arguments(raw: str) -> dict[str, Any]:
    """Decode a call's arguments; text that is not a JSON object goes under `INVALID_JSON_KEY`."""
    try:
        value: Any = json.loads(raw) if raw.strip() else {}  # no text: a tool without parameters
    except ValueError:
        value = None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def new_call_id() -> str:
    """A fresh call id for a call the model gave none (96 random bits)."""
    return "call_" + secrets.token_hex(12)


class TextGate:
    """Passes streamed text up to where a tool call written in it may start (`text_tool_calls`)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.seen, self.sent, self.closed = "", 0, False

    def feed(self, text: str) -> str:
        """Return the part of the text seen so far that is safe to show now."""
        if not self.enabled:
            return text
        self.seen += text
        if self.closed:
            return ""
        starts = [index for index in (self.seen.find(marker, self.sent) for marker in _CALL_MARKERS) if index >= 0]
        if starts:
            self.closed, end = True, min(starts)
        else:  # hold back an ending that may begin a marker
            ending = (n for marker in _CALL_MARKERS for n in range(1, len(marker)) if self.seen.endswith(marker[:n]))
            end = len(self.seen) - max(ending, default=0)
        out, self.sent = self.seen[self.sent : end], max(self.sent, end)
        return out

    def tail(self, final_text: str) -> str:
        """What `final_text` (the calls taken out) adds to the text already passed."""
        sent, final_text = self.seen[: self.sent].lstrip(), final_text.lstrip()
        return final_text[len(sent) :] if self.enabled and final_text.startswith(sent) else ""


def parse_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Find the tool calls a model wrote in its text, for servers that do not return `tool_calls`.

    Recognizes Hermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (one or many, the
    closing tag optional at the end), fenced JSON blocks and bare JSON objects (or lists of them),
    each with a `name` among `tool_names` and `arguments` (or `parameters`). Anything else,
    including a call of a tool not offered, stays text.

    Args:
        text: The model's whole answer.
        tool_names: The names of the tools offered on this turn.

    Returns:
        The text without the recovered calls (stripped), and the calls, with new ids.
    """
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        try:
            found = _calls_in(json.JSONDecoder().raw_decode(match.group(1).strip())[0], tool_names)
        except (ValueError, RecursionError):  # RecursionError: a model looping on `[[[[`
            found = []
        calls.extend(found)
        return "" if found else match.group(0)

    text = re.sub(r"<tool_call>(.*?)(?:</tool_call>|$)", take, text, flags=re.DOTALL)
    text = re.sub(r"```[\w-]*(.*?)```", take, text, flags=re.DOTALL)
    kept: list[str] = []
    position = skip = 0
    for match in re.finditer(r'\{\s*"|\[\s*\{', text):  # where a call object, or a list of them, may start
        if match.start() < skip:
            continue  # inside JSON already read
        try:
            value, skip = json.JSONDecoder().raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if found := _calls_in(value, tool_names):
            kept.append(text[position : match.start()])
            calls.extend(found)
            position = skip
    kept.append(text[position:])
    return ("".join(kept).strip() if calls else text), calls


def _calls_in(value: Any, tool_names: Collection[str]) -> list[ToolCall]:
    """Read a call object or a list of them; all of it must be calls, or none is."""
    calls: list[ToolCall] = []
    for item in map(_object, _list(value) if isinstance(value, list) else [value]):
        name, arguments = item.get("name"), item.get("arguments", item.get("parameters"))
        if not isinstance(name, str) or name not in tool_names or arguments is None:
            return []
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(id=new_call_id(), name=name, arguments=parse_arguments(raw)))
    return calls


def _object(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []
