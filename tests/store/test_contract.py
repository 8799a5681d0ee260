"""The `Store` contract: every implementation behaves like `MemoryStore`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from toolwire import ToolCall, ToolResult
from toolwire.envelopes import arguments_hash
from toolwire.errors import UsageError
from toolwire.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState, LedgerEntry, RunRecord, Store
from toolwire.store.memory import MemoryStore
from toolwire.store.sqlite import SqliteStore

LOOKUP = ToolCall(id="call_1", name="lookup", arguments={"query": "weather in Paris", "limit": 3})
DELETE = ToolCall(id="call_2", name="delete_note", arguments={"note_id": "n-7"})
HASH_A = arguments_hash({"path": "a.txt"})
HASH_B = arguments_hash({"path": "b.txt"})


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    implementation: Store = MemoryStore() if request.param == "memory" else SqliteStore.in_directory(tmp_path / "data")
    try:
        yield implementation
    finally:
        await implementation.aclose()


def entry(
    call: ToolCall, thread_id: str = "t1", *, state: CallState = CallState.PENDING, mode: str = "external"
) -> LedgerEntry:
    return LedgerEntry(thread_id=thread_id, call=call, request_index=0, state=state, mode=mode)


def call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name="lookup", arguments={"id": call_id})


# -- threads and transcripts -------------------------------------------------------------------


async def test_create_thread_is_idempotent_and_keeps_the_first_principal(store: Store) -> None:
    assert await store.create_thread("t1", principal="alice") is True
    assert await store.create_thread("t1", principal="mallory") is False
    assert await store.thread_exists("t1")
    assert await store.thread_principal("t1") == "alice"


async def test_count_threads_counts_the_threads_a_principal_owns(store: Store) -> None:
    for thread_id, principal in (("t1", "alice"), ("t2", "bob"), ("t3", "alice"), ("t4", None)):
        await store.create_thread(thread_id, principal=principal)
    await store.create_thread("t1", principal="alice")  # not created twice
    assert [await store.count_threads(who) for who in ("alice", "bob", "carol")] == [2, 1, 0]


async def test_unknown_thread_does_not_exist_and_has_no_principal_or_messages(store: Store) -> None:
    await store.create_thread("t1", principal="alice")
    assert not await store.thread_exists("t2")
    assert await store.thread_principal("t2") is None
    assert await store.load_messages("t2") == []


async def test_messages_round_trip_in_order(store: Store) -> None:
    transcript: list[Message] = [
        UserMessage("Find the weather, then delete note n-7."),
        AssistantMessage("Let me do both.", (LOOKUP, DELETE)),
        ToolResultMessage("lookup", ToolResult.timeout(LOOKUP.id, 30_000, effect_unknown=True)),
        ToolResultMessage("delete_note", ToolResult.denied(DELETE.id, "delete_note", "the user refused")),
        AssistantMessage("The lookup timed out and the deletion was refused."),
    ]
    await store.create_thread("t1")
    await store.append_messages("t1", transcript[:2])
    await store.append_messages("t1", transcript[2:])
    loaded = await store.load_messages("t1")
    assert loaded == transcript
    assert isinstance(loaded[2], ToolResultMessage)
    assert loaded[2].result.payload() == {"timeout": {"durationMs": 30_000, "effectUnknown": True}}


async def test_any_text_a_model_sends_round_trips(store: Store) -> None:
    odd = [UserMessage('naïve 日本 \U0001f600 \ud800 \x00 "quoted"\n'), AssistantMessage("", (call("\ud800"),))]
    await store.append_messages("t1", odd)
    assert await store.load_messages("t1") == odd


async def test_transcripts_of_threads_are_separate(store: Store) -> None:
    await store.append_messages("t1", [UserMessage("one")])
    await store.append_messages("t2", [UserMessage("two")])
    await store.append_messages("t1", [AssistantMessage("three")])
    assert await store.load_messages("t1") == [UserMessage("one"), AssistantMessage("three")]
    assert await store.load_messages("t2") == [UserMessage("two")]


# -- the call ledger ---------------------------------------------------------------------------


async def test_ledger_entry_round_trips_every_field(store: Store) -> None:
    written = LedgerEntry(
        thread_id="t1",
        call=LOOKUP,
        request_index=4,
        execution="client",
        mode="read",
        deadline=1_900_000_000.25,
        request_id="req_" + "ab" * 16,
    )
    await store.record_calls([written])
    assert await store.get_call("t1", LOOKUP.id) == written


async def test_get_call_of_unknown_call_is_none(store: Store) -> None:
    await store.record_calls([entry(LOOKUP)])
    assert await store.get_call("t1", "nope") is None
    assert await store.get_call("t2", LOOKUP.id) is None


async def test_first_terminal_result_wins(store: Store) -> None:
    first = ToolResult.ok(LOOKUP.id, {"temperature": 21})
    late = ToolResult.canceled(LOOKUP.id, "run canceled", "system")
    await store.record_calls([entry(LOOKUP)])
    assert await store.complete_call("t1", LOOKUP.id, first) is True
    assert await store.complete_call("t1", LOOKUP.id, late) is False
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP).finished(first)


async def test_complete_call_of_unrecorded_call_is_refused(store: Store) -> None:
    assert await store.complete_call("t1", LOOKUP.id, ToolResult.ok(LOOKUP.id)) is False
    assert await store.get_call("t1", LOOKUP.id) is None


async def test_set_call_state_moves_an_open_call(store: Store) -> None:
    await store.record_calls([entry(LOOKUP)])
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.DISPATCHED


async def test_set_call_state_cannot_leave_terminal(store: Store) -> None:
    result = ToolResult.ok(LOOKUP.id, "done")
    await store.record_calls([entry(LOOKUP)])
    await store.complete_call("t1", LOOKUP.id, result)
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP).finished(result)


async def test_record_calls_keeps_existing_ids(store: Store) -> None:
    await store.record_calls([entry(LOOKUP, mode="read")])
    await store.record_calls([entry(LOOKUP, mode="destructive", state=CallState.DISPATCHED), entry(DELETE)])
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, mode="read")
    assert await store.get_call("t1", DELETE.id) == entry(DELETE)


async def test_open_calls_lists_only_non_terminal_calls_in_recording_order(store: Store) -> None:
    await store.record_calls([entry(call("c3")), entry(call("c1")), entry(call("c2"))])
    await store.record_calls([entry(call("c0")), entry(call("other"), thread_id="t2")])
    await store.set_call_state("t1", "c3", CallState.AWAITING_APPROVAL)
    await store.set_call_state("t1", "c2", CallState.DISPATCHED)
    await store.complete_call("t1", "c1", ToolResult.ok("c1"))
    open_calls = await store.open_calls("t1")
    assert [(item.call.id, item.state) for item in open_calls] == [
        ("c3", CallState.AWAITING_APPROVAL),
        ("c2", CallState.DISPATCHED),
        ("c0", CallState.PENDING),
    ]


# -- a batch's writes, each in one transaction ---------------------------------------------------


async def test_record_batch_appends_the_message_and_writes_the_calls_ahead(store: Store) -> None:
    asking = AssistantMessage("Looking it up", (LOOKUP, DELETE))
    await store.append_messages("t1", [UserMessage("Weather?")])
    await store.record_batch("t1", asking, [entry(LOOKUP), entry(DELETE)])
    assert await store.load_messages("t1") == [UserMessage("Weather?"), asking]
    assert [open_call.call.id for open_call in await store.open_calls("t1")] == [LOOKUP.id, DELETE.id]


async def test_record_batch_keeps_existing_ids(store: Store) -> None:
    await store.record_calls([entry(LOOKUP, mode="read")])
    await store.record_batch("t1", AssistantMessage("", (LOOKUP,)), [entry(LOOKUP, mode="destructive")])
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, mode="read")


async def test_complete_batch_records_results_and_appends_their_messages(store: Store) -> None:
    results = [ToolResult.ok(LOOKUP.id, {"temperature": 21}), ToolResult.error(DELETE.id, "no such note")]
    await store.record_calls([entry(LOOKUP), entry(DELETE)])
    appended = [ToolResultMessage(LOOKUP.name, results[0]), ToolResultMessage(DELETE.name, results[1])]
    assert await store.complete_batch("t1", [LOOKUP, DELETE], results) == appended
    assert await store.load_messages("t1") == appended
    assert await store.open_calls("t1") == []
    assert await store.get_call("t1", DELETE.id) == entry(DELETE).finished(results[1])


async def test_complete_batch_keeps_the_result_that_won_in_the_transcript(store: Store) -> None:
    first = ToolResult.ok(LOOKUP.id, {"temperature": 21})
    late = ToolResult.canceled(LOOKUP.id, "run canceled", "system")
    unrecorded = ToolResult.ok(DELETE.id, "deleted")
    await store.record_calls([entry(LOOKUP)])
    await store.complete_call("t1", LOOKUP.id, first)
    appended = [ToolResultMessage(LOOKUP.name, first), ToolResultMessage(DELETE.name, unrecorded)]
    assert await store.complete_batch("t1", [LOOKUP, DELETE], [late, unrecorded]) == appended
    assert await store.load_messages("t1") == appended
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP).finished(first)
    assert await store.get_call("t1", DELETE.id) is None


# -- approvals, grants, denials ----------------------------------------------------------------


async def test_approval_is_consumed_once(store: Store) -> None:
    await store.approve_once("t1", "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is True
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is False


async def test_approval_is_bound_to_thread_call_tool_and_arguments(store: Store) -> None:
    await store.approve_once("t1", "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c2", "write_file", HASH_A) is False
    assert await store.take_approval("t1", "c1", "write_file", HASH_B) is False
    assert await store.take_approval("t1", "c1", "delete_file", HASH_A) is False
    assert await store.take_approval("t2", "c1", "write_file", HASH_A) is False
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is True


async def test_grants_are_listed_and_revoked_per_thread(store: Store) -> None:
    await store.grant("t1", "shell_run")
    await store.grant("t1", "send_email", explicit=False)
    await store.grant("t2", "shell_run")
    assert [(g.thread_id, g.tool, g.explicit) for g in await store.grants("t1")] == [
        ("t1", "shell_run", True),
        ("t1", "send_email", False),
    ]
    assert await store.revoke("t1", "shell_run") is True
    assert await store.revoke("t1", "shell_run") is False
    assert await store.find_grant("t1", "shell_run") is None
    assert [g.tool for g in await store.grants("t1")] == ["send_email"]
    assert [g.tool for g in await store.grants("t2")] == ["shell_run"]


async def test_grant_is_found_as_returned(store: Store) -> None:
    granted = await store.grant("t1", "shell_run", explicit=False)
    assert await store.find_grant("t1", "shell_run") == granted


async def test_granting_again_replaces_the_grant_in_place(store: Store) -> None:
    await store.grant("t1", "shell_run", explicit=False)
    await store.grant("t1", "send_email")
    again = await store.grant("t1", "shell_run", explicit=True)
    assert await store.grants("t1") == [again, await store.find_grant("t1", "send_email")]


async def test_no_thread_grants_are_separate_from_real_threads(store: Store) -> None:
    await store.grant(None, "shell_run")
    await store.grant("t1", "send_email")
    assert [(g.thread_id, g.tool) for g in await store.grants(None)] == [(None, "shell_run")]
    assert await store.find_grant("t1", "shell_run") is None
    assert await store.find_grant(None, "send_email") is None


async def test_no_thread_approvals_are_separate_from_real_threads(store: Store) -> None:
    await store.approve_once(None, "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is False
    assert await store.take_approval(None, "c1", "write_file", HASH_A) is True


async def test_no_thread_denials_are_separate_from_real_threads(store: Store) -> None:
    await store.remember_denial(None, "shell_run", HASH_A, "not outside a thread")
    assert await store.find_denial("t1", "shell_run", HASH_A) is None
    assert await store.find_denial(None, "shell_run", HASH_A) == "not outside a thread"


async def test_denial_is_remembered_per_thread_tool_and_arguments(store: Store) -> None:
    await store.remember_denial("t1", "shell_run", HASH_A, "the user refused")
    assert await store.find_denial("t1", "shell_run", HASH_A) == "the user refused"
    assert await store.find_denial("t2", "shell_run", HASH_A) is None
    assert await store.find_denial("t1", "send_email", HASH_A) is None
    assert await store.find_denial("t1", "shell_run", HASH_B) is None


async def test_latest_denial_reason_is_kept(store: Store) -> None:
    await store.remember_denial("t1", "shell_run", HASH_A, "first")
    await store.remember_denial("t1", "shell_run", HASH_A, "second")
    assert await store.find_denial("t1", "shell_run", HASH_A) == "second"


async def test_set_call_state_refuses_terminal_without_a_result(store: Store) -> None:
    await store.create_thread("t1")
    await store.record_calls([LedgerEntry(thread_id="t1", call=LOOKUP, request_index=0)])
    with pytest.raises(UsageError, match="use complete_call"):
        await store.set_call_state("t1", LOOKUP.id, CallState.TERMINAL)
    assert [entry.call.id for entry in await store.open_calls("t1")] == [LOOKUP.id]


# -- client tool state -------------------------------------------------------------------------

CLIENT_STATE = {"groups": [{"name": "IDE", "tools": [{"name": "OpenFile"}]}], "expanded": ["IDE"]}


async def test_client_state_of_unknown_thread_is_none(store: Store) -> None:
    assert await store.load_client_state("t1") is None


async def test_client_state_round_trips(store: Store) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    assert await store.load_client_state("t1") == CLIENT_STATE


async def test_client_state_is_replaced_whole(store: Store) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    await store.save_client_state("t1", {"groups": []})
    assert await store.load_client_state("t1") == {"groups": []}


async def test_saving_none_deletes_the_client_state(store: Store) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    await store.save_client_state("t1", None)
    assert await store.load_client_state("t1") is None


async def test_client_states_of_threads_are_separate(store: Store) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    assert await store.load_client_state("t2") is None


async def test_saved_client_state_does_not_change_with_the_callers_dict(store: Store) -> None:
    state = {"expanded": ["IDE"]}
    await store.save_client_state("t1", state)
    state["expanded"].append("Page")
    assert await store.load_client_state("t1") == {"expanded": ["IDE"]}


# -- the server's protocol state -----------------------------------------------------------------

WIRE_STATE = {"role": "server", "conversationId": "t1", "nextStanza": 3, "lastSeen": 2, "outbox": [[2, "gqA="]]}


async def test_wire_state_round_trips_and_is_deleted_with_none(store: Store) -> None:
    assert await store.load_wire_state("t1") is None
    await store.save_wire_state("t1", WIRE_STATE)
    assert await store.load_wire_state("t1") == WIRE_STATE
    await store.save_wire_state("t1", None)
    assert await store.load_wire_state("t1") is None


def sequencing(next_stanza: int, last_seen: int, first: int, *, conversation: str = "t1") -> Sequencing:
    """A server's state whose outbox holds stanzas `first` .. `next_stanza - 1`."""
    outbox = tuple((stanza, f"frame {stanza}".encode()) for stanza in range(first, next_stanza))
    return Sequencing(
        role="server", conversation_id=conversation, next_stanza=next_stanza, last_seen=last_seen, outbox=outbox
    )


async def test_a_sequencing_is_saved_as_its_dict_form(store: Store) -> None:
    state = sequencing(4, 2, 2)
    await store.save_wire_state("t1", state)
    assert await store.load_wire_state("t1") == state.to_dict()


async def test_each_save_replaces_the_whole_wire_state(store: Store) -> None:
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
        await store.save_wire_state("t1", state)
        assert await store.load_wire_state("t1") == state.to_dict()
        assert Sequencing.from_dict(await store.load_wire_state("t1") or {}) == state
    assert await store.load_wire_state("t2") is None


async def test_saving_the_wire_state_can_mark_calls_dispatched(store: Store) -> None:
    await store.record_calls([entry(LOOKUP), entry(DELETE)])
    await store.complete_call("t1", DELETE.id, ToolResult.ok(DELETE.id))
    await store.save_wire_state("t1", sequencing(2, 0, 1), dispatched=[LOOKUP.id, DELETE.id, "unknown"])
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.DISPATCHED
    done = await store.get_call("t1", DELETE.id)
    assert done is not None and done.state is CallState.TERMINAL  # never out of TERMINAL


ANSWER = {"requestId": "req_1", "success": True, "content": [{"type": "text", "text": "21 degrees"}]}


async def test_saving_the_wire_state_saves_the_answers_of_dispatched_calls(store: Store) -> None:
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED), entry(DELETE)])
    saved = await store.save_wire_state("t1", sequencing(2, 1, 1), answered={LOOKUP.id: ANSWER, DELETE.id: ANSWER})
    assert saved == {LOOKUP.id}  # DELETE was never dispatched: its answer is not taken
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, state=CallState.DISPATCHED).answered(ANSWER)
    assert await store.get_call("t1", DELETE.id) == entry(DELETE)
    assert await store.load_wire_state("t1") == sequencing(2, 1, 1).to_dict()


async def test_a_saved_answer_does_not_change_with_the_callers_dict(store: Store) -> None:
    answer = {"requestId": "req_1", "success": True, "content": []}
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.save_wire_state("t1", sequencing(2, 1, 1), answered={LOOKUP.id: answer})
    answer["success"] = False
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.answer == {"requestId": "req_1", "success": True, "content": []}


async def test_a_call_is_answered_once_and_its_result_comes_after(store: Store) -> None:
    final = ToolResult.ok(LOOKUP.id, "21 degrees, filtered")
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    assert await store.save_wire_state("t1", sequencing(2, 1, 1), answered={LOOKUP.id: ANSWER}) == {LOOKUP.id}
    again = await store.save_wire_state("t1", sequencing(2, 2, 1), answered={LOOKUP.id: {**ANSWER, "success": False}})
    assert again == frozenset()
    assert await store.complete_call("t1", LOOKUP.id, final) is True
    done = await store.get_call("t1", LOOKUP.id)
    assert done is not None and (done.state, done.answer, done.result) == (CallState.TERMINAL, ANSWER, final)
    assert await store.open_calls("t1") == []


async def test_a_settled_call_takes_no_answer(store: Store) -> None:
    result = ToolResult.timeout(LOOKUP.id, 30_000, True)
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.complete_call("t1", LOOKUP.id, result)
    saved = await store.save_wire_state("t1", sequencing(2, 1, 1), answered={LOOKUP.id: ANSWER})
    assert saved == frozenset()
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, state=CallState.DISPATCHED).finished(result)


async def test_a_call_never_moves_back(store: Store) -> None:
    await store.record_calls([entry(LOOKUP, state=CallState.DISPATCHED)])
    await store.save_wire_state("t1", sequencing(2, 1, 1), answered={LOOKUP.id: ANSWER})
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    await store.save_wire_state("t1", sequencing(3, 1, 1), dispatched=[LOOKUP.id])
    await store.set_call_state("t1", LOOKUP.id, CallState.PENDING)
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.ANSWERED


@pytest.mark.parametrize("state", [CallState.ANSWERED, CallState.TERMINAL])
async def test_set_call_state_refuses_states_that_come_with_a_value(store: Store, state: CallState) -> None:
    await store.record_calls([entry(LOOKUP)])
    with pytest.raises(UsageError):
        await store.set_call_state("t1", LOOKUP.id, state)


# -- how a thread's last run stands --------------------------------------------------------------


async def test_a_thread_without_a_saved_run_record_has_the_default(store: Store) -> None:
    await store.create_thread("t1")
    assert await store.load_run("t1") == RunRecord()
    assert await store.load_run("unknown") == RunRecord()


async def test_run_records_round_trip_per_thread(store: Store) -> None:
    await store.create_thread("t1", principal="alice")
    await store.save_run("t1", RunRecord(closed_at=4, resume_attempts=2))
    assert await store.load_run("t1") == RunRecord(closed_at=4, resume_attempts=2)
    assert await store.load_run("t2") == RunRecord()
    assert await store.thread_principal("t1") == "alice"  # the thread is kept as it was
