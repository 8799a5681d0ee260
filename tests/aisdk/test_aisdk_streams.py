"""A thread's last message as its responses streamed it (`toolwire.interop.aisdk.streams`), for replays."""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from toolwire.interop.aisdk.parts import Part
from toolwire.interop.aisdk.streams import PartLog, PartLogs

STARTED: Part = {"type": "start", "messageId": "m1"}
GOES_ON: Part = {"type": "start"}
STEP: Part = {"type": "start-step"}
FINISH: Part = {"type": "finish", "finishReason": "stop"}


def drained(stream: MemoryObjectReceiveStream[Part]) -> list[str]:
    """The types of the parts in `stream` now; closes it."""
    types: list[str] = []
    with stream:
        while True:
            try:
                types.append(stream.receive_nowait()["type"])
            except (anyio.WouldBlock, anyio.EndOfStream):
                return types


def test_replay_is_the_start_and_every_part_so_far() -> None:
    log = PartLog(STARTED)
    log.add(STEP)
    assert drained(log.follow(replay=True)) == ["start", "start-step"]
    log.close()


def test_a_follower_gets_the_parts_live_and_the_end() -> None:
    log = PartLog(STARTED)
    following = log.follow(replay=False)
    log.add(STEP)
    log.add(FINISH)
    assert drained(following) == ["start-step", "finish"]
    assert log.end == FINISH


def test_replay_of_an_ended_message_ends_with_its_end() -> None:
    log = PartLog(STARTED)
    log.add(STEP)
    log.add(FINISH)
    assert drained(log.follow(replay=True)) == ["start", "start-step", "finish"]


def test_a_continuation_goes_on_in_the_same_log_without_its_own_start_and_finish() -> None:
    logs = PartLogs()
    first, _ = logs.begin("t", STARTED)
    first.add(STEP)
    first.add({"type": "finish", "finishReason": "tool-calls"})
    again, continued = logs.begin("t", GOES_ON)
    again.record([{"type": "tool-approval-response", "approvalId": "approval-c1", "approved": True}])
    again.add({"type": "text-start", "id": "x"})
    again.add(FINISH)
    assert (again is first, continued) == (True, True)
    types = ["start", "start-step", "tool-approval-response", "text-start", "finish"]
    assert drained(again.follow(replay=True)) == types


def test_a_new_message_replaces_the_log() -> None:
    logs = PartLogs()
    first, _ = logs.begin("t", STARTED)
    first.add(FINISH)
    second, continued = logs.begin("t", {"type": "start", "messageId": "m2"})
    assert (second is not first, continued, logs.get("t") is second) == (True, False, True)


def test_a_continuation_without_the_messages_beginning_is_not_replayable() -> None:
    logs = PartLogs()
    logs.begin("t", GOES_ON)
    assert logs.get("t") is None


def test_past_the_cap_the_message_is_not_replayable() -> None:
    logs = PartLogs(max_parts=2)
    log, _ = logs.begin("t", STARTED)
    following = log.follow(replay=False)
    for _ in range(3):
        log.add(STEP)
    assert (logs.get("t"), log.parts) == (None, [])
    log.close()
    assert drained(following) == ["start-step"] * 3  # a client that follows still gets every part


def test_an_ended_log_expires() -> None:
    logs = PartLogs(keep_seconds=-1)
    log, _ = logs.begin("t", STARTED)
    log.add(FINISH)
    assert logs.get("t") is None


def test_a_follower_that_went_away_is_dropped() -> None:
    log = PartLog(STARTED)
    log.follow(replay=False).close()
    log.add(STEP)
    log.add(FINISH)
    assert log.end == FINISH


def test_a_stream_that_ends_without_an_end_part_ends_its_followers() -> None:
    log = PartLog(STARTED)
    following = log.follow(replay=False)
    log.close()
    assert (drained(following), log.end, log.ended_at is not None) == ([], None, True)
