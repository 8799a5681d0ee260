"""The real AI SDK client pieces (`ai`'s DefaultChatTransport, readUIMessageStream and AbstractChat, run by node)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving import ALICE, run_node

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "node_modules" / "ai"
PICK_COLOR = {
    "name": "pick_color",
    "description": "Ask the user to pick a color",
    "inputSchema": {"type": "object", "properties": {"options": {"type": "array", "items": {"type": "string"}}}},
}


@dataclass
class Reply:
    """What the client saw of one request: the parts and the messages it built, or the error it raised."""

    output: dict[str, Any]

    @property
    def types(self) -> list[str]:
        return [chunk["type"] for chunk in self.output["chunks"]]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.output["messages"]

    @property
    def parts(self) -> list[dict[str, Any]]:
        """The parts of the last (assistant) message."""
        return self.messages[-1]["parts"]

    @property
    def status(self) -> int | None:
        return self.output.get("status")

    @property
    def code(self) -> str | None:
        payload = self.output.get("payload")
        return payload.get("code") if isinstance(payload, dict) else None

    def tool_part(self, name: str) -> dict[str, Any]:
        """The last message's part of tool `name` (type `tool-<name>`)."""
        [part] = [part for part in self.parts if part["type"] == f"tool-{name}"]
        return part


@dataclass
class Client:
    """Runs `tests/aisdk/run_chat.mjs` (one useChat request) against the server."""

    url: str

    def flow(self, chat_id: str, flow: str, *, token: str | None = ALICE, **given: Any) -> Flow:
        """A conversation with the real chat class (`run_flow.mjs`)."""
        return chat_flow(self.url, chat_id, flow, token=token, **given)

    def send(
        self,
        chat_id: str,
        messages: list[dict[str, Any]],
        *,
        token: str | None = ALICE,
        tools: list[dict[str, Any]] | None = None,
    ) -> Reply:
        given: dict[str, Any] = {"url": self.url, "chatId": chat_id, "messages": messages, "tools": tools or []}
        if token is not None:
            given["token"] = token
        return Reply(run_node(HERE / "run_chat.mjs", given))


@dataclass
class Flow:
    """What the chat (`run_flow.mjs`) did: its requests (body, status, parts), its messages, its errors."""

    output: dict[str, Any]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.output["requests"]

    def types(self, index: int) -> list[str]:
        """The part types of request `index`'s response."""
        return [chunk["type"] for chunk in self.requests[index]["chunks"]]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.output["messages"]

    @property
    def errors(self) -> list[str]:
        return self.output["errors"]

    def tool_part(self, name: str) -> dict[str, Any]:
        """The last message's part of tool `name`."""
        [part] = [part for part in self.messages[-1]["parts"] if part["type"] == f"tool-{name}"]
        return part


def chat_flow(url: str, chat_id: str, flow: str, *, token: str | None = ALICE, **given: Any) -> Flow:
    """Run `tests/aisdk/run_flow.mjs` (`flow`: chat, reconnect, get) against the endpoint at `url`."""
    sent: dict[str, Any] = {"url": url, "chatId": chat_id, "flow": flow, **given}
    if token is not None:
        sent["token"] = token
    return Flow(run_node(HERE / "run_flow.mjs", sent))


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    """A user `UIMessage`."""
    return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}


def with_tool_output(
    messages: list[dict[str, Any]], call_id: str, output: Any = None, *, error_text: str | None = None
) -> list[dict[str, Any]]:
    """The messages after `addToolOutput`: the tool part's state and output (or errorText), as useChat sets them."""
    *before, last = json.loads(json.dumps(messages))
    for part in last["parts"]:
        if part.get("toolCallId") == call_id and error_text is None:
            part.update(state="output-available", output=output)
        elif part.get("toolCallId") == call_id:
            part.update(state="output-error", errorText=error_text)
    return [*before, last]


def with_approval(
    messages: list[dict[str, Any]], call_id: str, approved: bool, reason: str | None = None
) -> list[dict[str, Any]]:
    """The messages after `addToolApprovalResponse`: the tool part `approval-responded`, as the chat sets it."""
    *before, last = json.loads(json.dumps(messages))
    for part in last["parts"]:
        if part.get("toolCallId") == call_id:
            answer = {"approved": approved} if reason is None else {"approved": approved, "reason": reason}
            part.update(state="approval-responded", approval={**part["approval"], **answer})
    return [*before, last]
