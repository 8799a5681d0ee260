"""kill -9 (and graceful stops) at each step of a client call's life, against a real `toolwire serve`.

Whatever the moment of the crash, after a restart: consent is asked where the policy says (a
prompt that was open is asked again, never skipped), a decided outcome (a denial, a refusal)
stays decided, a client that keeps no execution ledger runs each call at most once, and the
transcript has exactly one result per call.
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest
from crash_support import APP_SOURCE, LedgerlessClient
from server_support import TOKEN, stored_transcript

from serving import Server, serve_app
from toolwire.envelopes import ResultType
from toolwire.messages import AssistantMessage, ToolResultMessage
from toolwire.protocol import (
    ConsentAnswerBody,
    ConsentRequestBody,
    ControlStop,
    Envelope,
    ErrorMessage,
    MessageType,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from toolwire.testing import validate_transcript


def serve(tmp_path: Path, data_dir: Path | None = None):
    return serve_app(tmp_path, APP_SOURCE, "crashapp", token=TOKEN, data_dir=data_dir)


def is_finished(envelope: Envelope) -> bool:
    return isinstance(envelope.message, RunStatus) and envelope.message.status in ("finished", "failed")


def outcomes(server: Server, client: LedgerlessClient) -> dict[str, ResultType]:
    transcript = stored_transcript(server.data_dir, client.connection.conversation_id or "")
    validate_transcript(transcript)
    results = [m for m in transcript if isinstance(m, ToolResultMessage)]
    assert len({m.call_id for m in results}) == len(results)  # one result per call
    return {m.call_id: m.result.type for m in results}


async def test_a_consent_prompt_open_at_a_crash_is_asked_again_and_the_call_runs_only_once_allowed(
    tmp_path: Path,
) -> None:
    client = LedgerlessClient()
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "delete")
            prompt = await client.converse(socket, until=lambda e: isinstance(e.message, ConsentRequestBody))
            first.kill()  # while the person is being asked
    old = prompt.message
    assert isinstance(old, ConsentRequestBody)
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            again = await client.converse(
                socket, until=lambda e: isinstance(e.message, (ConsentRequestBody, ToolUseRequest))
            )
            assert isinstance(again.message, ConsentRequestBody)  # asked again, before anything runs
            assert again.message.id != old.id and again.message.call_id == "c_delete"
            await socket.send(ConsentAnswerBody(id=old.id, allow=True))  # the old prompt is gone
            error = await socket.until(MessageType.ERROR)
            assert isinstance(error.message, ErrorMessage) and error.message.code == 105
            await socket.send(ConsentAnswerBody(id=again.message.id, allow=True))
            client.allowed["c_delete"] += 1
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_delete": 1}
    assert client.ran_after_consent == {"c_delete": 1}  # it ran only once a person allowed it
    assert outcomes(second, client) == {"c_delete": ResultType.SUCCESS}


async def test_a_denial_and_a_refusal_stay_decided_across_a_crash(tmp_path: Path) -> None:
    client = LedgerlessClient()
    settled: set[str] = set()

    def after_both_settled(envelope: Envelope) -> bool:
        message = envelope.message
        if isinstance(message, ToolUseResult) and message.id in ("c_delete", "c_bad"):
            settled.add(message.id)  # the server's own outcome of a client call, shown to the client
        return settled == {"c_delete", "c_bad"}

    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "mixed")
            # The person refuses DeleteFile; OpenFile without a path is refused; c_open runs long.
            await client.converse(socket, until=after_both_settled, consent=lambda r: False, hold={"c_open"})
            first.kill()
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_open": 1}  # the denied and the invalid call were never sent
    assert outcomes(second, client) == {
        "c_delete": ResultType.DENIED,
        "c_bad": ResultType.ERROR,
        "c_open": ResultType.SUCCESS,
    }


async def test_a_result_the_server_acknowledged_is_not_asked_for_again_after_a_crash(tmp_path: Path) -> None:
    client = LedgerlessClient()
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "two")

            # c_open is answered at once; c_slow is still running on the client.
            await client.converse(socket, until=lambda e: client.executions["c_open"] == 1, hold={"c_slow"})
            await client.wait_acknowledged(socket)  # the client forgets its result now
            first.kill()
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_open": 1, "c_slow": 1}
    assert outcomes(second, client) == {"c_open": ResultType.SUCCESS, "c_slow": ResultType.SUCCESS}


@pytest.mark.parametrize("step", ["after dispatch", "after the result was sent"])
async def test_a_crash_at_any_later_step_runs_the_call_once(tmp_path: Path, step: str) -> None:
    client = LedgerlessClient()
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            if step == "after dispatch":
                await client.converse(socket, until=lambda e: isinstance(e.message, ToolUseRequest))
            else:  # the server may or may not have read the result: both must end the same
                await client.converse(socket, until=lambda e: client.executions["c_open"] == 1)
            first.kill()
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_open": 1}
    assert outcomes(second, client) == {"c_open": ResultType.SUCCESS}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_graceful_stop_keeps_a_running_client_call_for_the_next_start(
    tmp_path: Path, sig: signal.Signals
) -> None:
    client = LedgerlessClient()
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            sent = await client.converse(socket, until=lambda e: isinstance(e.message, ToolUseRequest))
            status, output = first.stop(sig)
    assert status == 0
    assert "Traceback" not in output and "Cancel" not in output, output
    # The client finishes the tool while the server is down; its result waits in its outbox.
    request = client.running.pop("c_open")
    assert request == sent.message
    client.executions["c_open"] += 1
    client.connection.send(ToolUseResult(id=request.id, success=True, result={"value": "ran c_open"}))
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            finished = await client.converse(socket, until=is_finished)
    refused = [e for e in socket.seen if isinstance(e.message, ErrorMessage)]
    assert refused == []
    assert isinstance(finished.message, RunStatus) and finished.message.output == "c_open=SUCCESS"
    assert client.executions == {"c_open": 1}
    assert outcomes(second, client) == {"c_open": ResultType.SUCCESS}


async def test_a_run_the_client_stopped_is_not_resumed_when_it_comes_back(tmp_path: Path) -> None:
    client = LedgerlessClient()
    with serve(tmp_path) as server:
        async with client.connect(server.url) as socket:
            await client.start(socket, "one")
            await client.converse(socket, until=lambda e: isinstance(e.message, ToolUseRequest))
            await socket.send(ControlStop(reason="the user pressed stop"))
            client.running.clear()  # the client stops its tool too
            stopped = await client.converse(socket, until=is_finished)
        assert isinstance(stopped.message, RunStatus) and stopped.message.reason == "canceled"
        async with client.resumed().connect(server.url) as socket:
            await socket.send(UserMessageBody(id="u2", content="one"))  # a new message, not a busy error
            await client.converse(socket, until=is_finished)
    started = [e for e in socket.seen if isinstance(e.message, RunStatus) and e.message.status == "started"]
    assert len(started) == 1 and not [e for e in socket.seen if isinstance(e.message, ErrorMessage)]


async def test_a_crash_right_after_the_write_ahead_asks_consent_when_the_run_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = LedgerlessClient()
    monkeypatch.setenv("CRASH_AT", "after the write-ahead")
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "delete")
            assert first.process.wait(timeout=30) == 137  # before anyone was asked
    monkeypatch.delenv("CRASH_AT")
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert [request.call_id for request in client.consents] == ["c_delete"]
    assert client.ran_after_consent == {"c_delete": 1}
    assert outcomes(second, client) == {"c_delete": ResultType.SUCCESS}


async def test_an_answer_the_server_died_reading_is_replayed_and_taken_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = LedgerlessClient()
    monkeypatch.setenv("CRASH_AT", "as the answer arrives")
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            await client.converse(socket, until=lambda e: isinstance(e.message, ToolUseRequest))
            await client.finish(socket, client.running.pop("c_open"))
            assert first.process.wait(timeout=30) == 137
    assert client.outbox()  # never acknowledged: the client still has its result
    monkeypatch.delenv("CRASH_AT")
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_open": 1}
    assert outcomes(second, client) == {"c_open": ResultType.SUCCESS}


async def test_a_prompt_whose_frame_was_saved_is_answered_after_a_crash_before_its_run_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The save that records the prompt's frame as seen stores the prompt too: the next process
    # answers it (before, the frame counted as seen and the prompt was nowhere: lost).
    client = LedgerlessClient()
    monkeypatch.setenv("CRASH_AT", "as the run begins")
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            assert first.process.wait(timeout=30) == 137
    monkeypatch.delenv("CRASH_AT")
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            await client.converse(socket, until=is_finished)
    assert client.executions == {"c_open": 1}
    assert outcomes(second, client) == {"c_open": ResultType.SUCCESS}


async def test_a_prompt_whose_run_a_graceful_stop_parked_before_it_began_is_answered_by_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = LedgerlessClient()
    monkeypatch.setenv("CRASH_AT", "held as the run begins")
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            await client.converse(socket, until=lambda e: isinstance(e.message, RunStatus))  # "started"
            status, _ = first.stop(signal.SIGTERM)
    assert status == 0
    monkeypatch.delenv("CRASH_AT")
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            finished = await client.converse(socket, until=is_finished)
    assert isinstance(finished.message, RunStatus) and finished.message.output == "c_open=SUCCESS"
    assert client.executions == {"c_open": 1}


@pytest.mark.parametrize(("point", "how"), [("as the run ends", "kill -9"), ("held as the run ends", "SIGTERM")])
async def test_a_run_that_ended_before_its_end_was_saved_is_announced_by_the_next_process_not_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, how: str
) -> None:
    # Its answer is in the transcript, its RunStatus "finished" nowhere: the next process says how it
    # ended (with the answer), and neither asks the model again nor leaves the client waiting.
    client = LedgerlessClient()
    monkeypatch.setenv("CRASH_AT", point)
    held = tmp_path / "held"
    monkeypatch.setenv("CRASH_MARK", str(held))
    with serve(tmp_path) as first:
        async with client.connect(first.url) as socket:
            await client.start(socket, "one")
            await client.converse(socket, until=lambda e: isinstance(e.message, ToolUseRequest))
            await client.finish(socket, client.running.pop("c_open"))
            if how == "kill -9":
                assert first.process.wait(timeout=30) == 137
            else:
                with anyio.fail_after(30):
                    while not held.exists():  # noqa: ASYNC110 (the server process marks it: polled)
                        await anyio.sleep(0.01)
                assert first.stop(signal.SIGTERM)[0] == 0
            assert not [e for e in socket.seen if is_finished(e)]
    monkeypatch.delenv("CRASH_AT")
    with serve(tmp_path, first.data_dir) as second:
        async with client.resumed().connect(second.url) as socket:
            finished = await client.converse(socket, until=is_finished)
    assert isinstance(finished.message, RunStatus) and finished.message.output == "c_open=SUCCESS"
    transcript = stored_transcript(second.data_dir, client.connection.conversation_id or "")
    assert [m.text for m in transcript if isinstance(m, AssistantMessage) and not m.tool_calls] == ["c_open=SUCCESS"]
    assert client.executions == {"c_open": 1}
