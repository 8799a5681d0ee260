"""The `WireStateStore` contract: the server's protocol state, and the ledger moves saved with it, on every backend."""

from __future__ import annotations

import pytest
from contract_support import DELETE, LOOKUP, LedgerWireStore, entry, missing_methods

from toolwire import ToolResult
from toolwire.messages import UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState


@pytest.fixture
def store(wire_state_store: LedgerWireStore) -> LedgerWireStore:
    return wire_state_store


async def test_the_backend_has_every_method_of_the_interface(store: LedgerWireStore) -> None:
    assert missing_methods(store, LedgerWireStore) == []


WIRE_STATE = {"role": "server", "conversationId": "t1", "nextStanza": 3, "lastSeen": 2, "outbox": [[2, "gqA="]]}


async def test_wire_state_round_trips_and_is_deleted_with_none(store: LedgerWireStore) -> None:
    assert await store.load_wire_state("t1") is None
    await store.save_wire_state("t1", WIRE_STATE)
    assert await store.load_wire_state("t1") == WIRE_STATE
    await store.save_wire_state("t1", None)
    assert await store.load_wire_state("t1") is None


def sequencing(next_stanza: int, last_seen: int, first: int, *, conversation: str = "t1") -> Sequencing:
    """A server's state whose outbox holds stanzas `first` .. `next_stanza - 1` (saved as its `to_dict()`)."""
    outbox = tuple((stanza, f"frame {stanza}".encode()) for stanza in range(first, next_stanza))
    return Sequencing(
        role="server", conversation_id=conversation, next_stanza=next_stanza, last_seen=last_seen, outbox=outbox
    )


async def test_a_server_state_is_loaded_as_it_was_saved(store: LedgerWireStore) -> None:
    state = sequencing(4, 2, 2)
    await store.save_wire_state("t1", state.to_dict())
    assert await store.load_wire_state("t1") == state.to_dict()


async def test_each_save_replaces_the_whole_wire_state(store: LedgerWireStore) -> None:
    states = [
        sequencing(1, 0, 1),  # nothing sent yet
        sequencing(2, 0, 1),  # a frame
        sequencing(2, 1, 1),  # the client's stanza seen, nothing sent
        sequencing(4, 1, 1),  # two more frames
        sequencing(4, 2, 3),  # the first two acknowledged
        sequencing(6, 3, 3),
        sequencing(6, 3, 6),  # everything acknowledged
        sequencing(8, 4, 7),
        sequencing(9, 5, 8),  # a frame sent, the one before it acknowledged (the steady state)
        sequencing(9, 5, 9),
        sequencing(3, 1, 2),  # an older state again (a restored copy): replaces the newer one
        sequencing(5, 4, 2, conversation="t1-renamed"),
    ]
    for state in states:
        await store.save_wire_state("t1", state.to_dict())
        assert await store.load_wire_state("t1") == state.to_dict()
        assert Sequencing.from_dict(await store.load_wire_state("t1") or {}) == state
    assert await store.load_wire_state("t2") is None


async def test_a_saved_state_does_not_change_with_the_callers_dict(store: LedgerWireStore) -> None:
    state = {"role": "server", "conversationId": "t1", "nextStanza": 3, "lastSeen": 0, "outbox": [[2, "Ag=="]]}
    await store.save_wire_state("t1", state)
    state["outbox"].append([3, "Aw=="])
    state["outbox"][0][1] = "/w=="
    state["lastSeen"] = 2
    assert await store.load_wire_state("t1") == WIRE_STATE | {"nextStanza": 3, "lastSeen": 0, "outbox": [[2, "Ag=="]]}


async def test_a_frame_saved_again_under_its_stanza_with_other_bytes_is_replaced(store: LedgerWireStore) -> None:
    first = {
        "role": "server",
        "conversationId": "t1",
        "nextStanza": 3,
        "lastSeen": 0,
        "outbox": [[1, "AQ=="], [2, "Ag=="]],
    }
    again = {**first, "outbox": [[1, "AQ=="], [2, "/w=="]]}
    await store.save_wire_state("t1", first)
    await store.save_wire_state("t1", again)
    assert await store.load_wire_state("t1") == again


async def test_saving_the_wire_state_can_mark_calls_dispatched(store: LedgerWireStore) -> None:
    await store.record_calls([entry(LOOKUP), entry(DELETE)])
    await store.complete_call("t1", DELETE.id, ToolResult.ok(DELETE.id))
    await store.save_wire_state("t1", sequencing(2, 0, 1).to_dict(), dispatched=[LOOKUP.id, DELETE.id, "unknown"])
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.DISPATCHED
    done = await store.get_call("t1", DELETE.id)
    assert done is not None and done.state is CallState.TERMINAL  # never out of TERMINAL


async def test_saving_the_wire_state_can_append_to_the_transcript(store: LedgerWireStore) -> None:
    await store.append_messages("t1", [UserMessage("first")])
    await store.save_wire_state("t1", sequencing(2, 1, 1).to_dict(), appended=[UserMessage("second")])
    assert await store.load_messages("t1") == [UserMessage("first"), UserMessage("second")]
    assert await store.load_wire_state("t1") == sequencing(2, 1, 1).to_dict()


ANSWER = {"requestId": "req_1", "success": True, "content": [{"type": "text", "text": "21 degrees"}]}


async def test_saving_the_wire_state_saves_the_answers_of_dispatched_calls(store: LedgerWireStore) -> None:
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED), entry(DELETE)])
    saved = await store.save_wire_state(
        "t1", sequencing(2, 1, 1).to_dict(), answered={LOOKUP.id: ANSWER, DELETE.id: ANSWER}
    )
    assert saved == {LOOKUP.id}  # DELETE was never dispatched: its answer is not taken
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, state=CallState.DISPATCHED).answered(ANSWER)
    assert await store.get_call("t1", DELETE.id) == entry(DELETE)
    assert await store.load_wire_state("t1") == sequencing(2, 1, 1).to_dict()


async def test_a_saved_answer_does_not_change_with_the_callers_dict(store: LedgerWireStore) -> None:
    answer = {"requestId": "req_1", "success": True, "content": []}
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.save_wire_state("t1", sequencing(2, 1, 1).to_dict(), answered={LOOKUP.id: answer})
    answer["success"] = False
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.answer == {"requestId": "req_1", "success": True, "content": []}


async def test_a_call_is_answered_once_and_its_result_comes_after(store: LedgerWireStore) -> None:
    final = ToolResult.ok(LOOKUP.id, "21 degrees, filtered")
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    assert await store.save_wire_state("t1", sequencing(2, 1, 1).to_dict(), answered={LOOKUP.id: ANSWER}) == {LOOKUP.id}
    again = await store.save_wire_state(
        "t1", sequencing(2, 2, 1).to_dict(), answered={LOOKUP.id: {**ANSWER, "success": False}}
    )
    assert again == frozenset()
    assert await store.complete_call("t1", LOOKUP.id, final) is True
    done = await store.get_call("t1", LOOKUP.id)
    assert done is not None and (done.state, done.answer, done.result) == (CallState.TERMINAL, ANSWER, final)
    assert await store.open_calls("t1") == []


async def test_a_settled_call_takes_no_answer(store: LedgerWireStore) -> None:
    result = ToolResult.timeout(LOOKUP.id, 30_000, True)
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.complete_call("t1", LOOKUP.id, result)
    saved = await store.save_wire_state("t1", sequencing(2, 1, 1).to_dict(), answered={LOOKUP.id: ANSWER})
    assert saved == frozenset()
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, state=CallState.DISPATCHED).finished(result)


async def test_a_call_never_moves_back(store: LedgerWireStore) -> None:
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.save_wire_state("t1", sequencing(2, 1, 1).to_dict(), answered={LOOKUP.id: ANSWER})
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    await store.save_wire_state("t1", sequencing(3, 1, 1).to_dict(), dispatched=[LOOKUP.id])
    await store.set_call_state("t1", LOOKUP.id, CallState.PENDING)
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.ANSWERED


async def test_a_save_after_the_state_was_released_continues_it(store: LedgerWireStore) -> None:
    await store.save_wire_state("t1", sequencing(4, 2, 2).to_dict())
    store.release_wire_state("t1")
    assert await store.load_wire_state("t1") == sequencing(4, 2, 2).to_dict()  # released is not deleted
    await store.save_wire_state("t1", sequencing(6, 3, 3).to_dict())
    assert await store.load_wire_state("t1") == sequencing(6, 3, 3).to_dict()


async def test_releasing_a_state_never_saved_does_nothing(store: LedgerWireStore) -> None:
    store.release_wire_state("unknown")
    assert await store.load_wire_state("unknown") is None
