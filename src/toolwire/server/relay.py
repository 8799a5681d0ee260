"""`Relay`: turns one server run's events into the protocol messages its client is sent.

A server tool's call is mirrored (ToolUseRequest with `execution="server"`, then its result), a
client call the server settled without the client's answer is withdrawn (ToolUseCancel) or
shown with its outcome, streamed text becomes StartAnswer and AssistantSentence frames, and
the run's end an AssistantMessage (when not streamed) and RunStatus `finished`.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup

from ..events import ModelRequestStarted, RunEvent, RunFinished
from ..models import TextDelta
from ..pipeline import ToolCallFinished, ToolCallStarted
from ..protocol import (
    AssistantMessageBody,
    AssistantSentence,
    RunState,
    RunStatus,
    StartAnswer,
    ToolUseCancel,
    ToolUseRequest,
    result_message,
)

if TYPE_CHECKING:
    from .server_conversation import ServerConversation

__all__ = ["Relay"]


class Relay:
    """Turns one run's events into messages for the client."""

    def __init__(self, conversation: ServerConversation, run_id: str, group: TaskGroup, message_id: str | None) -> None:
        self.conversation = conversation
        self.run_id = run_id
        self.group = group
        self.message_id = message_id
        self.answer_id: str | None = None
        self.sentence = 0
        self.streaming = False
        """The model's current turn streamed text: if it ends the run, its answer was streamed."""
        self.server_calls: set[str] = set()
        """The calls of server tools shown to the client as started, whose results it is shown next."""

    def status(self, status: RunState, **fields: Any) -> RunStatus:
        """This run's RunStatus message."""
        return RunStatus(run_id=self.run_id, status=status, message_id=self.message_id, **fields)

    def event(self, event: RunEvent) -> None:
        """Post the messages an event stands for, and have them written soon."""
        if self._post(event):
            self.group.start_soon(self.conversation.flush_soon)

    def _post(self, event: RunEvent) -> bool:
        send = self.conversation.post
        match event:
            case ModelRequestStarted():
                self.streaming = False
                return False
            case TextDelta(text=text) if text:
                if self.answer_id is None:
                    self.answer_id = "msg_" + secrets.token_hex(8)
                    send(StartAnswer(message_id=self.answer_id, previous_id=self.message_id))
                send(AssistantSentence(message_id=self.answer_id, sequence=self.sentence, text=text))
                self.sentence += 1
                self.streaming = True
            case ToolCallStarted(call=call, mode=mode, tool=tool) if tool is not None and not tool.is_client:
                # A tool the server runs (a function tool, an MCP server's): shown, never run there.
                self.server_calls.add(call.id)
                mirrored = ToolUseRequest(
                    id=call.id,
                    tool_name=call.name,
                    arguments=dict(call.arguments),
                    execution="server",
                    call_id=call.id,
                    description=tool.description,
                    mode=None if mode is None else mode.value,
                )
                send(mirrored)
            case ToolCallStarted():
                return False
            case ToolCallFinished(call=call, result=result) if call.id in self.server_calls:
                self.server_calls.discard(call.id)
                send(result_message(result, call.id))
            case ToolCallFinished(call=call, result=result):
                # A client call the server settled without asking the client (the policy denied it,
                # its arguments were invalid, the tool is unknown, the run stopped first) is shown
                # to the client as a server call with its outcome, so its timeline misses no call.
                # Successes without a request are the runtime's own (a group expanded): not shown.
                conversation = self.conversation
                if (request_id := conversation.dispatched.pop(call.id, None)) is not None:
                    if call.id in conversation.answered:
                        conversation.answered.discard(call.id)
                        return False
                    # Settled without the client's answer (its deadline, a stop, the client gone):
                    # the client may still run it; it should stop, and send no result.
                    code = result.wire_code or "canceled"
                    send(ToolUseCancel(id=request_id, code=code, reason=result.error or result.message))
                    return True
                if result.success:
                    return False
                send(
                    ToolUseRequest(
                        id=call.id,
                        tool_name=call.name,
                        arguments=dict(call.arguments),
                        execution="server",
                        call_id=call.id,
                    )
                )
                send(result_message(result, call.id))
            case RunFinished(result=result):
                self.conversation.run_ended = len(result.transcript)  # saved with the RunStatus below
                if self.answer_id is not None:
                    send(AssistantSentence(message_id=self.answer_id, sequence=self.sentence, text="", is_final=True))
                # Streamed, the answer is not sent again as a whole (a client would show it twice),
                # unless the client asked for it (`wholeAnswers`). A terminal result's message was
                # never streamed: it is sent whole.
                streamed = self.streaming and result.reason == "answer"
                if result.output and (not streamed or self.conversation.whole_answers):
                    send(
                        AssistantMessageBody(
                            id="msg_" + secrets.token_hex(8), content=result.output, previous_id=self.message_id
                        )
                    )
                send(
                    self.status(
                        "finished", reason=result.reason, detail=result.detail or None, output=result.output or None
                    )
                )
            case _:
                return False
        return True
