"""The real AG-UI client (`@ag-ui/client`'s HttpAgent, run by node) and what the tests send with it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving import ALICE, run_node

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "node_modules" / "@ag-ui" / "client"
PICK_COLOR = {
    "name": "pick_color",
    "description": "Ask the user to pick a color",
    "parameters": {"type": "object", "properties": {"options": {"type": "array", "items": {"type": "string"}}}},
}


@dataclass
class Run:
    """What the client saw of one run: its events and messages, or the error it raised."""

    output: dict[str, Any]

    @property
    def types(self) -> list[str]:
        return [event["type"] for event in self.output["events"]]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.output["messages"]

    @property
    def pending(self) -> list[str]:
        return self.output["finished"]["pending"]

    @property
    def interrupts(self) -> list[dict[str, Any]]:
        return self.output["finished"]["interrupts"]

    @property
    def error(self) -> str | None:
        return self.output.get("error")

    @property
    def status(self) -> int | None:
        return self.output.get("status")

    def last_call_id(self) -> str:
        return self.messages[-1]["toolCalls"][0]["id"]


@dataclass
class Client:
    """Runs `tests/agui/run_agent.mjs` (one HttpAgent run) against the server."""

    url: str

    def run(
        self,
        thread_id: str,
        messages: list[dict[str, Any]],
        *,
        token: str | None = ALICE,
        tools: list[dict[str, Any]] | None = None,
        resume: list[dict[str, Any]] | None = None,
    ) -> Run:
        given: dict[str, Any] = {"url": self.url, "threadId": thread_id, "messages": messages, "tools": tools or []}
        if resume is not None:
            given["resume"] = resume
        if token is not None:
            given["token"] = token
        return Run(run_node(HERE / "run_agent.mjs", given))


def user(text: str, message_id: str = "u1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def tool_message(call_id: str, content: str, message_id: str = "t1") -> dict[str, Any]:
    return {"id": message_id, "role": "tool", "toolCallId": call_id, "content": content}


def approval(call_id: str, payload: dict[str, Any] | None = None, *, status: str = "resolved") -> dict[str, Any]:
    """A resume entry answering the consent question about `call_id`."""
    entry: dict[str, Any] = {"interruptId": "approval-" + call_id, "status": status}
    if payload is not None:
        entry["payload"] = payload
    return entry
