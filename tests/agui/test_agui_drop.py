"""A client that goes away in the middle of a run (`POST /agui`): the run goes on, the endpoint keeps serving.

The model calls `wait_gate`, a server tool that holds the run until the test's FIFO is opened;
the client reads `RUN_STARTED` and closes the connection; then the gate opens and the run ends
with no one listening. Its last events, which have nowhere to go, must not take the endpoint down.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import httpx
from agui_client import Client, user

from serving import ALICE, Server, transcript_of
from toolwire.messages import AssistantMessage
from toolwire.testing import validate_transcript


def wait_answered(server: Server, thread: str) -> None:
    """Wait until the thread's transcript ends with the run's answer (the run ended)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        transcript = transcript_of(server.data_dir, thread)
        if transcript and isinstance(transcript[-1], AssistantMessage) and transcript[-1].text:
            return
        time.sleep(0.05)
    raise AssertionError(f"the run of {thread} did not end")


def test_a_client_that_goes_away_mid_run_leaves_the_endpoint_serving(
    server: Server, client: Client, tmp_path: Path
) -> None:
    fifo = tmp_path / "gate"
    os.mkfifo(fifo)
    thread = "thread-" + uuid.uuid4().hex
    body = {
        "threadId": thread,
        "runId": "r1",
        "state": {},
        "messages": [user(f"slow {fifo}")],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    headers = {"Authorization": f"Bearer {ALICE}", "Accept": "text/event-stream"}
    with httpx.stream("POST", client.url, json=body, headers=headers, timeout=20) as response:
        assert '"RUN_STARTED"' in next(response.iter_lines())
    fifo.write_text("opened")  # the run goes on, with no one listening
    wait_answered(server, thread)
    validate_transcript(transcript_of(server.data_dir, thread))
    after = client.run("thread-" + uuid.uuid4().hex, [user("hi")])
    assert after.messages[-1]["content"] == "Hello!"
