"""A front end that does not come back before its call's deadline: the call ends as a Timeout."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from agui_client import CLIENT, HERE, PICK_COLOR, Client, Run, tool_message, user

from serving import Server, serve_front_end, transcript_of, transcript_reaching
from toolwire import ResultType
from toolwire.messages import Message, ToolResultMessage
from toolwire.testing import validate_transcript


@pytest.fixture(scope="module")
def impatient(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp_path = tmp_path_factory.mktemp("agui-deadline")
    with serve_front_end(tmp_path, HERE / "agui_app.py", "make_impatient_agent", "--agui", CLIENT) as running:
        yield running


def answered(server: Server, thread: str) -> list[Message]:
    """Wait until the thread's run ended on its own (its answer is stored); its transcript."""
    return transcript_reaching(server.data_dir, thread, 4)  # user, the call, its result, the answer


@pytest.fixture(scope="module")
def timed_out(impatient: Server) -> tuple[Server, str, Run]:
    client = Client(impatient.url.replace("ws://", "http://").removesuffix("/ws") + "/agui")
    first = client.run("late-thread", [user("pick")], tools=[PICK_COLOR])
    answered(impatient, "late-thread")
    late = client.run("late-thread", [*first.messages, tool_message(first.last_call_id(), "blue")], tools=[PICK_COLOR])
    return impatient, "late-thread", late


def test_call_past_its_deadline_ends_as_timeout(timed_out: tuple[Server, str, Run]) -> None:
    server, thread, _ = timed_out
    transcript = transcript_of(server.data_dir, thread)
    validate_transcript(transcript)
    [result] = [message.result for message in transcript if isinstance(message, ToolResultMessage)]
    assert result.type is ResultType.TIMEOUT


def test_result_after_the_deadline_is_refused(timed_out: tuple[Server, str, Run]) -> None:
    _, _, late = timed_out
    assert (late.status, late.output["payload"]["code"]) == (409, "tool_call_settled")
