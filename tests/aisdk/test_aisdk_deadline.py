"""A front end that never sends its tool's output: the call ends as a Timeout at its deadline."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aisdk_client import CLIENT, HERE, PICK_COLOR, Client, Reply, user, with_tool_output

from serving import Server, serve_front_end, transcript_reaching
from toolwire import ResultType
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


@pytest.fixture(scope="module")
def timed_out(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Reply]]:
    """A front-end call left unanswered past its deadline (1 s), then answered late."""
    tmp_path = tmp_path_factory.mktemp("aisdk-deadline")
    with serve_front_end(tmp_path, HERE / "aisdk_app.py", "make_impatient_agent", "--ai-sdk", CLIENT) as server:
        client = Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/ai-sdk/chat")
        first = client.send("late-chat", [user("pick")], tools=[PICK_COLOR])
        transcript_reaching(server.data_dir, "late-chat", 4)  # the run ended on its own
        call_id = first.tool_part("pick_color")["toolCallId"]
        late = client.send("late-chat", with_tool_output(first.messages, call_id, "blue"), tools=[PICK_COLOR])
        yield server, late


def test_call_past_its_deadline_ends_as_timeout(timed_out: tuple[Server, Reply]) -> None:
    server, _ = timed_out
    transcript = transcript_reaching(server.data_dir, "late-chat", 4)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.type is ResultType.TIMEOUT


def test_output_after_the_deadline_is_refused(timed_out: tuple[Server, Reply]) -> None:
    _, late = timed_out
    assert (late.status, late.code) == (409, "tool_call_settled")
