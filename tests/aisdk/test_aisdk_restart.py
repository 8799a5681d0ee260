"""A server stopped while a consent question waits over `/ai-sdk/chat`: the next server takes the answer.

The first request leaves the question open and the server stops (SIGINT: the run is parked, the
ledger keeps the call AWAITING_APPROVAL). A new server on the same data directory gets the
messages with the part `approval-responded`: it resumes the run, which asks again and takes the
answer; the call is not announced again (the chat has it).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from aisdk_client import CLIENT, HERE, Client, with_approval

from serving import Server, serve_front_end, transcript_of
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def client_of(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/ai-sdk/chat")


def served(tmp_path: Path) -> AbstractContextManager[Server]:
    return serve_front_end(tmp_path, HERE / "aisdk_app.py", "make_agent", "--ai-sdk", CLIENT)


def test_an_approval_after_a_restart_runs_the_call_without_announcing_it_again(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        first = client_of(server).flow("asked", "chat", prompt="run")
    call_id = first.tool_part("run_command")["toolCallId"]
    with served(tmp_path) as server:
        second = client_of(server).send("asked", with_approval(first.messages, call_id, True))
        transcript = transcript_of(server.data_dir, "asked")
    assert second.types == [
        "start",
        "tool-output-available",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "finish-step",
        "finish",
    ]
    assert second.tool_part("run_command")["state"] == "output-available"
    validate_transcript(transcript)
    assert [m.result.data for m in transcript if isinstance(m, ToolResultMessage)] == ["ran ls"]


def test_a_refusal_after_a_restart_denies_the_call(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        first = client_of(server).flow("refused", "chat", prompt="run")
    call_id = first.tool_part("run_command")["toolCallId"]
    with served(tmp_path) as server:
        second = client_of(server).send("refused", with_approval(first.messages, call_id, False, "no"))
    assert second.tool_part("run_command")["state"] == "output-denied"


def test_a_message_begun_before_the_restart_is_not_replayed(tmp_path: Path) -> None:
    """The replay would be the message's end without its beginning, which the chat cannot rebuild: 204."""
    with served(tmp_path) as server:
        first = client_of(server).flow("replayed", "chat", prompt="run")
    call_id = first.tool_part("run_command")["toolCallId"]
    with served(tmp_path) as server:
        client_of(server).send("replayed", with_approval(first.messages, call_id, True))
        again = client_of(server).flow("replayed", "get")
    assert again.requests[0]["status"] == 204
