"""A client from before AG-UI 1.0 (no `protocolVersion` in its input): no outcome, no questions.

Its schema knows neither `RUN_FINISHED.outcome` nor interrupts and `resume` (they came with 1.0), so
`/agui` leaves the outcome out (the client finds a pending call itself: a call without a result)
and answers a consent question no at once, as when no one can be asked. Sent here as raw HTTP: the
1.0 client always declares its version.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import pytest
from agui_client import PICK_COLOR, Client

from serving import ALICE, Server, transcript_of
from toolwire.envelopes import ResultType
from toolwire.interop.agui.endpoint import declares_1_0
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def post(client: Client, body: dict[str, Any]) -> list[dict[str, Any]]:
    """POST a RunAgentInput without `protocolVersion`; the SSE events it streamed."""
    request = urllib.request.Request(
        client.url,
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return [json.loads(line.removeprefix("data: ")) for line in text.splitlines() if line.startswith("data: ")]


def legacy_run(client: Client, prompt: str, tools: list[dict[str, Any]] | None = None) -> tuple[str, list[Any]]:
    thread = "thread-" + uuid.uuid4().hex
    body = {
        "threadId": thread,
        "runId": "r1",
        "messages": [{"id": "u1", "role": "user", "content": prompt}],
        "tools": tools or [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    return thread, post(client, body)


def test_a_pending_front_end_call_ends_without_an_outcome(client: Client) -> None:
    _, events = legacy_run(client, "pick", [PICK_COLOR])
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "outcome" not in events[-1]


def test_a_consent_question_is_answered_no_at_once(server: Server, client: Client) -> None:
    thread, events = legacy_run(client, "run")
    assert "outcome" not in events[-1]
    transcript = transcript_of(server.data_dir, thread)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.type is ResultType.DENIED


@pytest.mark.parametrize(
    ("version", "modern"), [(None, False), ("0.9", False), ("1.0", True), ("2.3", True), ("x", True)]
)
def test_which_versions_are_1_0_or_later(version: str | None, modern: bool) -> None:
    assert declares_1_0(version) is modern
