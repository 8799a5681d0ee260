"""A run's events as AI SDK UI message stream parts (`ai` 7, `uiMessageChunkSchema`): `PartMapper`, pure.

| toolwire event | parts |
|---|---|
| `ModelRequestStarted` | the open step ends (`text-end` if text was open, `finish-step`); `start-step` |
| `TextDelta` | `text-start` (first delta of a turn), `text-delta` |
| `ToolCallStarted` | `text-end` if text was open; `tool-input-start`, `tool-input-delta`, `tool-input-available` |
| `ConsentRequested` | the call's `tool-input-*` as above, `tool-approval-request` (id `approval-<callId>`) |
| `ToolCallFinished` success | `tool-output-available` (`output`: the tool's value) |
| `ToolCallFinished` denied | `tool-output-denied` |
| `ToolCallFinished` error, timeout, canceled | `tool-output-error` (`errorText`) |
| `RunFinished` | the open step ends |
| `ToolProgress` | nothing yet |

A call asked about is announced once: `LiveRun` does not pass on its `ToolCallStarted`. The
response ends while the question waits (`finish`, `finishReason: "tool-calls"`, as `streamText` ends
a step whose calls wait for approval); the answer comes back as the part's `approval-responded`
state (`ui_messages`), and the call's outcome is streamed in the next response, before its step.

A step is a model turn and the results of its calls, as the AI SDK's own servers stream them: the
client's `lastAssistantMessageIsCompleteWithToolCalls` looks at the tool parts of the last step
only, so the answer after a front-end call's output must start a step of its own (or `useChat`'s
`sendAutomaticallyWhen` sends the output again, and again). A response ends its open step too.

The caller leaves out `ToolCallFinished` of a front-end call the front end answered (it has the
output). `tool-input-start` and `tool-input-available` carry `toolMetadata.toolwire`: `execution`
(`server` or `client`) and `mode` (the call's `ToolMode`, for a front end to show risk);
`tool-approval-request` carries the policy's `reason` (the SDK keeps it as `approval.requestReason`).

A response's first and last parts belong to the request: `start`, then `finish` (`finishReason`
`stop`, or `tool-calls` when front-end calls or approvals wait) or `error`; `encode` writes a part as SSE and
`DONE` ends the stream.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection
from typing import Any, Final

from ...envelopes import ResultType, ToolCall, ToolResult
from ...events import ModelRequestStarted, RunEvent, RunFinished
from ...models import TextDelta
from ...modes import ToolMode
from ...pipeline import ConsentRequested, ToolCallFinished, ToolCallStarted

__all__ = [
    "APPROVAL_PREFIX",
    "DONE",
    "HEADER",
    "METADATA_KEY",
    "Part",
    "PartMapper",
    "approval_response",
    "encode",
    "error",
    "error_text",
    "finish",
    "start",
]

Part = dict[str, Any]
"""One UI message stream part (a chunk), as JSON."""

HEADER: Final = ("x-vercel-ai-ui-message-stream", "v1")
"""The response header that says the body is a UI message stream."""
DONE: Final = "data: [DONE]\n\n"
"""The stream's last SSE event."""
METADATA_KEY: Final = "toolwire"
"""The key of toolwire's own fields in a tool part's `toolMetadata`."""
APPROVAL_PREFIX: Final = "approval-"
"""A `tool-approval-request`'s `approvalId` is this and the id of the call it asks about."""


class PartMapper:
    """Turns the events of one or more agent runs into UI message stream parts, in order (one per request).

    Args:
        client_tools: Names of the front end's tools (a call asked about is `execution: client`).
    """

    def __init__(self, client_tools: Collection[str] = ()) -> None:
        self._text_id: str | None = None
        self._in_step = False
        self._client_tools = frozenset(client_tools)

    def events(self, event: RunEvent) -> list[Part]:
        """The parts `event` stands for (often none)."""
        match event:
            case ModelRequestStarted():
                out = [*self.close(), {"type": "start-step"}]
                self._in_step = True
                return out
            case RunFinished():
                return self.close()
            case TextDelta(text=text) if text:
                out: list[Part] = []
                if self._text_id is None:
                    self._text_id = "txt_" + secrets.token_hex(8)
                    out.append({"type": "text-start", "id": self._text_id})
                out.append({"type": "text-delta", "id": self._text_id, "delta": text})
                return out
            case ConsentRequested(request=request) if not request.running:
                asked = {
                    "type": "tool-approval-request",
                    "approvalId": APPROVAL_PREFIX + request.call.id,
                    "toolCallId": request.call.id,
                    "reason": request.reason,
                }
                return [*self._tool_call(request.call, request.mode, request.tool in self._client_tools), asked]
            case ToolCallStarted(call=call, mode=mode, tool=tool):
                return self._tool_call(call, mode, tool is not None and tool.is_client)
            case ToolCallFinished(call=call, result=result):
                return [output(call.id, result)]
            case _:
                return []

    def _tool_call(self, call: ToolCall, mode: ToolMode | None, client: bool) -> list[Part]:
        metadata: dict[str, Any] = {"execution": "client" if client else "server"}
        if mode is not None:
            metadata["mode"] = mode.value
        common = {"toolCallId": call.id, "toolName": call.name, "toolMetadata": {METADATA_KEY: metadata}}
        return [
            *self._end_text(),
            {"type": "tool-input-start", **common},
            {
                "type": "tool-input-delta",
                "toolCallId": call.id,
                "inputTextDelta": json.dumps(call.arguments, ensure_ascii=False),
            },
            {"type": "tool-input-available", **common, "input": call.arguments},
        ]

    def close(self) -> list[Part]:
        """End the step that is open, if any, and its text part (a response's last parts before `finish`)."""
        out = self._end_text()
        if self._in_step:
            out.append({"type": "finish-step"})
            self._in_step = False
        return out

    def _end_text(self) -> list[Part]:
        if self._text_id is None:
            return []
        part = {"type": "text-end", "id": self._text_id}
        self._text_id = None
        return [part]


def output(call_id: str, result: ToolResult) -> Part:
    """The part a call's result is: `tool-output-available`, `tool-output-denied` or `tool-output-error`."""
    if result.type is ResultType.SUCCESS:
        return {"type": "tool-output-available", "toolCallId": call_id, "output": result.payload()}
    if result.type is ResultType.DENIED:
        return {"type": "tool-output-denied", "toolCallId": call_id}
    return {"type": "tool-output-error", "toolCallId": call_id, "errorText": error_text(result)}


def approval_response(call_id: str, approved: bool, reason: str | None) -> Part:
    """`tool-approval-response`: the front end's answer, as a replay tells it (the live client has it)."""
    part: Part = {"type": "tool-approval-response", "approvalId": APPROVAL_PREFIX + call_id, "approved": approved}
    return part if reason is None else {**part, "reason": reason}


def error_text(result: ToolResult) -> str:
    """A failure's text for a person: its message, else its outcome payload as JSON."""
    return result.error or result.message or json.dumps(result.payload(), ensure_ascii=False)


def start(message_id: str | None = None) -> Part:
    """`start`: a new assistant message (`message_id`), or the continuation of the client's last one (None)."""
    return {"type": "start"} if message_id is None else {"type": "start", "messageId": message_id}


def finish(waiting: bool) -> Part:
    """`finish`: `tool-calls` when front-end calls wait for their outputs (or calls for approval), else `stop`."""
    return {"type": "finish", "finishReason": "tool-calls" if waiting else "stop"}


def error(message: str) -> Part:
    """`error`: the run failed (the SDK shows `errorText`)."""
    return {"type": "error", "errorText": message}


def encode(part: Part) -> str:
    """One part as an SSE event."""
    return "data: " + json.dumps(part, ensure_ascii=False, separators=(",", ":")) + "\n\n"
