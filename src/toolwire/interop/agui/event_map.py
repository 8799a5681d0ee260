"""A run's events as AG-UI events: `EventMapper`, pure and synchronous.

| toolwire event | AG-UI events |
|---|---|
| `ModelRequestStarted` | (a new assistant message id; an open text message ends) |
| `TextDelta` | `TEXT_MESSAGE_START` (first delta of a turn), `TEXT_MESSAGE_CONTENT` |
| `ToolCallStarted` | `TEXT_MESSAGE_END` if text was open; `TOOL_CALL_START`/`ARGS`/`END` (metadata below) |
| `ToolCallFinished` | `TOOL_CALL_RESULT` (the caller leaves out a front-end call the front end answered) |
| `RunFinished` | `TEXT_MESSAGE_END` if text was open |
| `ConsentRequested`, `ToolProgress` | nothing yet |

`TOOL_CALL_START` carries `metadata.toolwire`: `mode` (the call's `ToolMode`, for a front end to show
risk) and `execution` (`server`, or `client` for a front-end tool).

The run's start and end (`RUN_STARTED`, `RUN_FINISHED`, `RUN_ERROR`) belong to the request, not to
the agent's run (a run that waits for a front-end tool spans two requests): `run_started`,
`run_finished` and `run_error` build them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from ..._extras import import_extra

import_extra("ag_ui", "agui")  # a missing package fails here, naming the extra to install

from ag_ui.core import (  # noqa: E402
    PROTOCOL_VERSION,
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ...envelopes import ResultType, ToolResult  # noqa: E402
from ...events import ModelRequestStarted, RunEvent, RunFinished, RunResult  # noqa: E402
from ...models import TextDelta  # noqa: E402
from ...pipeline import ToolCallFinished, ToolCallStarted  # noqa: E402

__all__ = ["METADATA_KEY", "EventMapper", "render_result", "run_error", "run_finished", "run_started"]

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
    """

    def __init__(self) -> None:
        self._message_id: str | None = None
        self._text_open = False

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
            case ToolCallStarted(call=call, mode=mode, tool=tool):
                metadata: dict[str, Any] = {"execution": "client" if tool is not None and tool.is_client else "server"}
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


def run_error(message: str, code: str) -> RunErrorEvent:
    """`RUN_ERROR`: the run failed; `message` is for a person, `code` for a program."""
    return RunErrorEvent(message=message, code=code)
