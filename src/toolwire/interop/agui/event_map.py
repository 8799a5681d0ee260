"""A run's events as AG-UI events: `EventMapper`, pure and synchronous.

| toolwire event | AG-UI events |
|---|---|
| `ModelRequestStarted` | (a new assistant message id; an open text message ends) |
| `TextDelta` | `TEXT_MESSAGE_START` (first delta of a turn), `TEXT_MESSAGE_CONTENT` |
| `ConsentRequested` | the call's `TOOL_CALL_START`/`ARGS`/`END`, before its question (an interrupt at the end) |
| `ToolCallStarted` | `TEXT_MESSAGE_END` if text was open; `TOOL_CALL_START`/`ARGS`/`END` (metadata below) |
| `ToolCallFinished` | `TOOL_CALL_RESULT` (the caller leaves out a front-end call the front end answered) |
| `RunFinished` | `TEXT_MESSAGE_END` if text was open |
| (the response ends) | `STATE_SNAPSHOT` of the thread's client tools (`state_snapshot`), then `RUN_FINISHED` |
| `ToolProgress` | nothing yet |

A call asked about is announced once: `LiveRun` does not pass on its `ToolCallStarted`.

`TOOL_CALL_START` carries `metadata.toolwire`: `mode` (the call's `ToolMode`, for a front end to show
risk) and `execution` (`server`, or `client` for a front-end tool).

The run's start and end (`RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`) belong to the request, not to
the agent's run (a run that waits for a front-end tool spans two requests): `run_started`,
`run_finished` and `run_error` build them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ..._extras import import_extra

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import (  # noqa: E402
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ...envelopes import ResultType, ToolCall, ToolResult  # noqa: E402
from ...events import ModelRequestStarted, RunEvent, RunFinished, RunResult  # noqa: E402
from ...models import TextDelta  # noqa: E402
from ...modes import ToolMode  # noqa: E402
from ...pipeline import ConsentRequested, ToolCallFinished, ToolCallStarted  # noqa: E402

__all__ = [
    "METADATA_KEY",
    "EventMapper",
    "render_result",
    "run_error",
    "run_finished",
    "run_interrupted",
    "run_started",
    "state_snapshot",
]

METADATA_KEY = "toolwire"
"""The key of toolwire's own fields in an event's `metadata` (AG-UI reserves `ag-ui` for itself)."""


def render_result(result: ToolResult) -> str:
    """The text of a `TOOL_CALL_RESULT` (and of the tool message a client keeps): what the model sees.

    A success's value as it is when it is a string, else as JSON; a failure's outcome payload
    (`{"timeout": ...}`, `{"denied": ...}`, ...) as JSON.
    """
    payload = result.payload()
    if result.type is ResultType.SUCCESS and isinstance(payload, str):
        return payload
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


class EventMapper:
    """Turns the events of one or more agent runs into AG-UI events, in order.

    Keep one per request: it knows the text message that is open and the current model turn's
    assistant message id (the parent of that turn's tool calls).

    Args:
        client_tools: Names of the front end's tools (a call's `execution` is `client`).
    """

    def __init__(self, client_tools: Collection[str] = ()) -> None:
        self._message_id: str | None = None
        self._text_open = False
        self._client_tools = frozenset(client_tools)

    def events(self, event: RunEvent) -> list[BaseEvent]:
        """The AG-UI events `event` stands for (often none)."""
        match event:
            case ModelRequestStarted():
                out = self.close()
                self._message_id = None
                return out
            case TextDelta(text=text) if text:
                out: list[BaseEvent] = []
                if not self._text_open:
                    self._text_open = True
                    out.append(TextMessageStartEvent(message_id=self._assistant_id(), role="assistant"))
                out.append(TextMessageContentEvent(message_id=self._assistant_id(), delta=text))
                return out
            case ConsentRequested(request=request) if not request.running:
                return self._tool_call(request.call, request.mode, request.tool in self._client_tools)
            case ToolCallStarted(call=call):
                return self._tool_call(call, event.mode, event.tool is not None and event.tool.is_client)
            case ToolCallFinished(call=call, result=result):
                return [
                    ToolCallResultEvent(
                        message_id="msg_" + secrets.token_hex(8),
                        tool_call_id=call.id,
                        content=render_result(result),
                        role="tool",
                        metadata={METADATA_KEY: {"outcome": result.type.name.lower()}},
                    )
                ]
            case RunFinished():
                return self.close()
            case _:
                return []

    def _tool_call(self, call: ToolCall, mode: ToolMode | None, client: bool) -> list[BaseEvent]:
        metadata: dict[str, Any] = {"execution": "client" if client else "server"}
        if mode is not None:
            metadata["mode"] = mode.value
        return [
            *self.close(),
            ToolCallStartEvent(
                tool_call_id=call.id,
                tool_call_name=call.name,
                parent_message_id=self._assistant_id(),
                metadata={METADATA_KEY: metadata},
            ),
            ToolCallArgsEvent(tool_call_id=call.id, delta=json.dumps(call.arguments, ensure_ascii=False)),
            ToolCallEndEvent(tool_call_id=call.id),
        ]

    def close(self) -> list[BaseEvent]:
        """End the text message that is open, if any."""
        if not self._text_open:
            return []
        self._text_open = False
        return [TextMessageEndEvent(message_id=self._assistant_id())]

    def _assistant_id(self) -> str:
        if self._message_id is None:
            self._message_id = "msg_" + secrets.token_hex(8)
        return self._message_id


def run_started(thread_id: str, run_id: str) -> RunStartedEvent:
    """`RUN_STARTED`, declaring the protocol version (the package does not set it)."""
    return RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=PROTOCOL_VERSION)


def run_finished(
    thread_id: str, run_id: str, result: RunResult | None, pending: Sequence[str] = ()
) -> RunFinishedEvent:
    """`RUN_FINISHED`: success, naming the front-end tool calls left for the client to answer.

    `result` is the agent run that ended in this request, if one did: its output (a terminal
    result's message included, which is not a text message), why it ended, and the detail.
    """
    value: dict[str, Any] | None = None
    if result is not None:
        value = {"output": result.output, "reason": result.reason}
        if result.detail:
            value["detail"] = result.detail
    outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=list(pending)) if pending else None
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=value, outcome=outcome)


def state_snapshot(saved: Mapping[str, Any] | None, *, collapse: bool = True) -> StateSnapshotEvent:
    """`STATE_SNAPSHOT` of the thread's client tools (`ClientState.to_dict`'s form, as the store keeps it).

    `{"toolwire": {"clientTools": {"groups": [{"name", "tools", "collapsed"}], "skills", "hidden",
    "context"}}}`: the tools by name (a front end has their schemas: it sent them), whether each
    group is offered collapsed, the active skills, the hidden tools, the context items' keys.
    """
    groups: list[dict[str, Any]] = []
    view: dict[str, Any] = {"groups": groups, "skills": [], "hidden": [], "context": []}
    if saved is not None:
        expanded = set(saved.get("expanded", ()))
        for group in saved.get("groups", ()):
            collapsed = collapse and bool(group.get("startCollapsed")) and group["name"] not in expanded
            tools = [tool["name"] for tool in group.get("tools", ())]
            groups.append({"name": group["name"], "tools": tools, "collapsed": collapsed})
        view["skills"] = list(saved.get("skills", ()))
        view["hidden"] = list(saved.get("hidden", ()))
        view["context"] = [item["key"] for item in saved.get("context", ())]
    return StateSnapshotEvent(snapshot={METADATA_KEY: {"clientTools": view}})


def run_interrupted(thread_id: str, run_id: str, interrupts: Sequence[Interrupt]) -> RunFinishedEvent:
    """`RUN_FINISHED` with the `interrupt` outcome: the run waits for the answers to `interrupts`."""
    outcome = RunFinishedInterruptOutcome(interrupts=list(interrupts))
    return RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=outcome)


def run_error(message: str, code: str) -> RunErrorEvent:
    """`RUN_ERROR`: the run failed; `message` is for a person, `code` for a program."""
    return RunErrorEvent(message=message, code=code)
