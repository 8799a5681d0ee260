"""The decision format of the local models: what a turn asks for, and how its output reads.

`LlamaCppModel` (llama.cpp in process) and `LocalModel` (llama-cpp-python's server, in a child
process) share it. Tiny models call tools reliably only when their output is constrained. Each
turn is either:

- a *decision*, when tools are offered and the last message is not a tool result (or
  `tool_choice` requires a tool): one JSON object decoded under a grammar (`output_schema()`),
  `{"tool": <name>, "arguments": <its parameters>}` or `{"tool": "none", "answer": "..."}`. The
  choice falls on a tool's *name*, which means something to the model; with a separate
  `{"answer"}` object the 0.5B demo model answered every prompt (or called the tool for every
  prompt), whatever the order of the alternatives;
- or *free text*, after a tool result with `tool_choice="auto"` (and without tools, or with
  `"none"`): tiny models answer from a result far better so, but cannot chain a second call there.

The schema bounds what the grammar must spell out. llama-cpp-python's converter writes a
`maxLength` of n as n nested optional groups, `(c (c (c ...)?)?)?`, and llama.cpp parses a
grammar by recursion, one level per group: a client tool's `maxLength: 20000` overflowed the
stack of the thread parsing it (SIGSEGV). So every length, count and pattern repetition in the
schema is capped by what one response can hold (`max_tokens`), at most `_MAX_TEXT_LENGTH`. The
pipeline validates the arguments against the tool's own schema after decoding, as for any model.

A decision cut off by `max_tokens` still counts: an answer keeps its text so far, and a call gets
the raw output as its only argument, `INVALID_JSON_KEY`, which the pipeline answers with an
`invalid_parameters` result the model can correct.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, Final, assert_never, cast

from ..envelopes import ToolCall
from ..errors import UsageError
from ..messages import AssistantMessage, Message, ToolDefinition, ToolResultMessage, UserMessage
from ..schema import INVALID_JSON_KEY
from . import ModelRequest
from .calls import new_call_id

__all__ = ["NO_TOOL", "chat_messages", "output_schema", "parse_output", "partial_answer"]

NO_TOOL: Final = "none"
"""The `tool` of a decision that answers instead of calling a tool."""

_MAX_ARGUMENT_LENGTH: Final = 64
"""The `maxLength` given to a string that has no bound of its own."""
_MAX_TEXT_LENGTH: Final = 400
"""The most any string of a decision may hold (the answer, or a string with a larger bound)."""
_MAX_ITEMS: Final = 32
"""The most items an array of a decision may hold (written as nested groups, like strings)."""

_NOT_A_SCHEMA_KEYS: Final = frozenset(("const", "default", "enum", "examples"))
_ANSWER_START: Final = re.compile(rf'\s*\{{\s*"tool"\s*:\s*"{NO_TOOL}"\s*,\s*"answer"\s*:\s*"')
_ANSWER_NOW: Final = "Answer my question using this result, in plain text."
_LOCAL_REF: Final = re.compile(r"#/(\$defs|definitions)/")
_TOOL_NAME: Final = re.compile(r'"tool"\s*:\s*"([^"]*)')
_QUANTIFIER: Final = re.compile(r"\{\s*(\d+)\s*(?:,\s*(\d*)\s*)?\}")


def output_schema(request: ModelRequest, *, max_tokens: int) -> dict[str, Any] | None:
    """Return the JSON Schema that constrains the response to `request`, or None for free text.

    Args:
        request: The request to answer.
        max_tokens: The most tokens the response may have; it bounds the strings and arrays.

    Raises:
        UsageError: `tool_choice` names a tool that is not offered.
    """
    tools, choice = list(request.tools), request.tool_choice
    if not tools or choice == "none":
        return None
    if choice not in ("auto", "required"):
        tools = [definition for definition in tools if definition.name == choice]
        if not tools:
            offered = ", ".join(definition.name for definition in request.tools)
            raise UsageError(f"tool_choice names {choice!r}, which is not among the offered tools ({offered})")
    elif choice == "auto" and request.messages and isinstance(request.messages[-1], ToolResultMessage):
        return None
    # Short enough for the JSON to close in time, and shallow enough for llama.cpp's grammar parser.
    limits = _Limits(
        default=min(_MAX_ARGUMENT_LENGTH, max(16, max_tokens // 2)), longest=min(_MAX_TEXT_LENGTH, max_tokens * 4)
    )
    definitions: dict[str, Any] = {}
    branches = [_tool_branch(definition, limits, definitions) for definition in tools]
    if choice == "auto":
        answer = {"type": "string", "maxLength": limits.longest}
        branches.insert(0, _closed_object({"tool": {"const": NO_TOOL}, "answer": answer}))
    schema: dict[str, Any] = {"oneOf": branches}
    if definitions:
        schema["$defs"] = definitions
    return schema


def chat_messages(request: ModelRequest) -> list[dict[str, str]]:
    """Return the chat messages that ask for `request`'s response.

    The system prompt describes the tools and the JSON of a decision whenever tools are offered,
    also on free-text turns, so that llama.cpp reuses the evaluated prompt from turn to turn; a
    free-text turn after a tool result ends with a request to answer in plain text.
    """
    system, last = request.system, request.messages[-1] if request.messages else None
    answering = isinstance(last, ToolResultMessage) and request.tool_choice in ("auto", "none")
    if request.tools and request.tool_choice != "none" and not answering:
        system = "\n\n".join(part for part in (system, _describe_tools(request)) if part)
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    for message in request.messages:
        role, content = _render(message, as_json=not answering)
        if out and out[-1]["role"] == role:  # templates want the roles to alternate
            out[-1]["content"] += "\n\n" + content
        else:
            out.append({"role": role, "content": content})
    if answering:
        out[-1]["content"] += "\n\n" + _ANSWER_NOW
    return out


def parse_output(raw: str, tool_names: Sequence[str]) -> tuple[str, tuple[ToolCall, ...]]:
    """Read a decision: `{"tool": <name>, "arguments": {...}}` or `{"tool": "none", "answer": "..."}`.

    A cut-off answer gives its text so far; a cut-off call, or anything else that does not parse,
    gives a call of the first offered tool whose name starts as written, with the raw output as
    its only argument (`INVALID_JSON_KEY`): the pipeline answers it as `invalid_parameters`.

    Args:
        raw: The model's whole output.
        tool_names: The tools that were offered, in order.

    Returns:
        The answer's text and no calls, or an empty text and one call with a new id.
    """
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        value = cast("dict[str, Any]", value)
        name, arguments, answer = value.get("tool"), value.get("arguments"), value.get("answer")
        if isinstance(name, str) and isinstance(arguments, dict):
            return "", (ToolCall(id=new_call_id(), name=name, arguments=cast("dict[str, Any]", arguments)),)
        if isinstance(answer, str):
            return answer, ()
    if (answer := partial_answer(raw)) is not None:
        return answer, ()
    found = _TOOL_NAME.search(raw)
    prefix = found.group(1) if found else ""
    candidates = [name for name in tool_names if name.startswith(prefix)]
    if not candidates and NO_TOOL.startswith(prefix):
        return "", ()  # cut off before the answer began
    name = candidates[0] if candidates else prefix
    return "", (ToolCall(id=new_call_id(), name=name, arguments={INVALID_JSON_KEY: raw}),)


def partial_answer(raw: str) -> str | None:
    """The answer's text decoded so far, if `raw` starts as an answer, else None.

    Call it on the output so far to stream an answer as it decodes.
    """
    if (start := _ANSWER_START.match(raw)) is None:
        return None
    body = '"' + raw[start.end() :]
    try:
        return cast("str", json.JSONDecoder(strict=False).raw_decode(body)[0])
    except ValueError:
        pass
    for end in range(len(body), max(len(body) - 7, 0), -1):  # drop an escape cut in half
        try:
            return cast("str", json.loads(body[:end] + '"', strict=False))
        except ValueError:
            continue
    return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Limits:
    """The bounds of one decision's strings."""

    default: int
    """The `maxLength` of a string without one."""
    longest: int
    """The most any string may hold."""


def _tool_branch(definition: ToolDefinition, limits: _Limits, definitions: dict[str, Any]) -> dict[str, Any]:
    """The `{"tool", "arguments"}` alternative of one tool; its `$defs` move to the root."""
    parameters, prefix = deepcopy(dict(definition.parameters)), f"{definition.name}."
    own = cast("dict[str, Any]", parameters.pop("$defs", {}) | parameters.pop("definitions", {}))
    _bound([parameters, *own.values()], limits, prefix)
    definitions.update((prefix + key, value) for key, value in own.items())
    return _closed_object({"tool": {"const": definition.name}, "arguments": parameters})


def _bound(node: Any, limits: _Limits, ref_prefix: str) -> None:
    """Bound strings, arrays and pattern repetitions, and point `$ref`s at the moved `$defs`, in place."""
    if isinstance(node, list):
        for item in cast("list[Any]", node):
            _bound(item, limits, ref_prefix)
    elif isinstance(node, dict):
        node = cast("dict[str, Any]", node)
        ref = node.get("$ref")
        if isinstance(ref, str) and (found := _LOCAL_REF.match(ref)):
            node["$ref"] = "#/$defs/" + ref_prefix + ref[found.end() :]
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not _pattern_fits(pattern, limits.longest):
            del node["pattern"]  # validation after decoding still checks it
        if node.get("type") == "string" and not node.keys() & {"maxLength", "pattern", "format", "enum", "const"}:
            node["maxLength"] = limits.default
        _cap(node, "maxLength", "minLength", limits.longest)
        _cap(node, "maxItems", "minItems", _MAX_ITEMS)
        for key, value in node.items():
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                _bound(list(cast("dict[str, Any]", value).values()), limits, ref_prefix)
            elif key not in _NOT_A_SCHEMA_KEYS:
                _bound(value, limits, ref_prefix)


def _cap(node: dict[str, Any], most: str, least: str, limit: int) -> None:
    """Lower `node[most]` and `node[least]` to `limit` (numbers of other types are left alone)."""
    for key in (most, least):
        if isinstance(value := node.get(key), int) and value > limit:
            node[key] = limit


def _pattern_fits(pattern: str, longest: int) -> bool:
    """Whether the converter takes `pattern`: anchored, with no repetition count above `longest`."""
    if not (pattern.startswith("^") and pattern.endswith("$")):
        return False  # the converter takes anchored patterns only
    counts = (int(number) for found in _QUANTIFIER.finditer(pattern) for number in found.groups() if number)
    return all(count <= longest for count in counts)


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _describe_tools(request: ModelRequest) -> str:
    lines = ["You can call these tools:"]
    for definition in request.tools:
        parameters = json.dumps(definition.parameters, separators=(",", ":"))
        lines.append(f"- {definition.name}: {definition.description} Arguments: {parameters}")
    lines.append(
        'Reply with one JSON object: {"tool": "<tool name>", "arguments": {...}} to call a tool, or '
        f'{{"tool": "{NO_TOOL}", "answer": "..."}} to reply yourself. '
        "Call a tool only if the request is about what the tool does."
    )
    return "\n".join(lines)


def _render(message: Message, *, as_json: bool = True) -> tuple[str, str]:
    """Render a message; calls as the JSON the model writes, or, when it must answer in prose, as prose."""
    match message:
        case UserMessage():
            return "user", message.content
        case AssistantMessage():
            calls = (
                _json({"tool": call.name, "arguments": call.arguments})
                if as_json
                else f"(I called {call.name} with {_json(call.arguments)}.)"
                for call in message.tool_calls
            )
            return "assistant", "\n".join(part for part in (message.text, *calls) if part)
        case ToolResultMessage():
            return "user", f"Result of {message.tool_name}: {_json(message.result.payload())}"
        case _:
            assert_never(message)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
