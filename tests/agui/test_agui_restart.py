"""A server stopped while a run waits for the front end: the next server takes the answer.

The first request leaves a front-end call (or a consent question) open and the server stops
(SIGINT: the run is parked, the ledger keeps the call). A new server on the same data directory
gets the next request with the answer: it resumes the run (`Agent.resume`), which takes it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path

from agui_client import CLIENT, HERE, PICK_COLOR, Client, approval, tool_message, user

from serving import Server, serve_front_end, transcript_of
from toolwire.messages import ToolResultMessage
from toolwire.testing import validate_transcript


def client_of(server: Server) -> Client:
    return Client(server.url.replace("ws://", "http://").removesuffix("/ws") + "/agui")


def served(tmp_path: Path) -> AbstractContextManager[Server]:
    return serve_front_end(tmp_path, HERE / "agui_app.py", "make_agent", "--agui", CLIENT)


def test_a_front_end_result_after_a_restart_completes_the_call(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        first = client_of(server).run("restarted", [user("pick")], tools=[PICK_COLOR])
    with served(tmp_path) as server:
        answer = tool_message(first.last_call_id(), "blue")
        second = client_of(server).run("restarted", [*first.messages, answer], tools=[PICK_COLOR])
        transcript = transcript_of(server.data_dir, "restarted")
    assert second.messages[-1]["content"] == 'Got {"pick_color": "blue"}'
    validate_transcript(transcript)


def test_the_resumed_run_does_not_announce_the_call_again(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        first = client_of(server).run("announced", [user("run")])
    with served(tmp_path) as server:
        resume = [approval(first.last_call_id(), {"approved": True})]
        second = client_of(server).run("announced", first.messages, resume=resume)
    assert "TOOL_CALL_START" not in second.types  # the client would add its arguments to the call's again


def test_an_approval_after_a_restart_runs_the_call(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        first = client_of(server).run("asked", [user("run")])
    with served(tmp_path) as server:
        resume = [approval(first.last_call_id(), {"approved": True})]
        client_of(server).run("asked", first.messages, resume=resume)
        transcript = transcript_of(server.data_dir, "asked")
    validate_transcript(transcript)
    assert [m.result.data for m in transcript if isinstance(m, ToolResultMessage)] == ["ran ls"]
