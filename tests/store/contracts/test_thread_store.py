"""The `ThreadStore` contract: threads, transcripts, the call ledger and run records, on every backend."""

from __future__ import annotations

import pytest
from contract_support import DELETE, LOOKUP, call, entry, missing_methods

from toolwire import ToolResult
from toolwire.errors import UsageError
from toolwire.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from toolwire.store import CallState, LedgerEntry, RunRecord, ThreadStore


@pytest.fixture
def store(thread_store: ThreadStore) -> ThreadStore:
    return thread_store


async def test_the_backend_has_every_method_of_the_interface(store: ThreadStore) -> None:
    assert missing_methods(store, ThreadStore) == []


# -- threads and transcripts -------------------------------------------------------------------


async def test_create_thread_is_idempotent_and_keeps_the_first_principal(store: ThreadStore) -> None:
    assert await store.create_thread("t1", principal="alice") is True
    assert await store.create_thread("t1", principal="mallory") is False
    assert await store.thread_exists("t1")
    assert await store.thread_principal("t1") == "alice"


async def test_count_threads_counts_the_threads_a_principal_owns(store: ThreadStore) -> None:
    for thread_id, principal in (("t1", "alice"), ("t2", "bob"), ("t3", "alice"), ("t4", None)):
        await store.create_thread(thread_id, principal=principal)
    await store.create_thread("t1", principal="alice")  # not created twice
    assert [await store.count_threads(who) for who in ("alice", "bob", "carol")] == [2, 1, 0]


async def test_unknown_thread_does_not_exist_and_has_no_principal_or_messages(store: ThreadStore) -> None:
    await store.create_thread("t1", principal="alice")
    assert not await store.thread_exists("t2")
    assert await store.thread_principal("t2") is None
    assert await store.load_messages("t2") == []


async def test_messages_round_trip_in_order(store: ThreadStore) -> None:
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


async def test_any_text_a_model_sends_round_trips(store: ThreadStore) -> None:
    odd = [UserMessage('naïve 日本 \U0001f600 \ud800 \x00 "quoted"\n'), AssistantMessage("", (call("\ud800"),))]
    await store.append_messages("t1", odd)
    assert await store.load_messages("t1") == odd


async def test_transcripts_of_threads_are_separate(store: ThreadStore) -> None:
    await store.append_messages("t1", [UserMessage("one")])
    await store.append_messages("t2", [UserMessage("two")])
    await store.append_messages("t1", [AssistantMessage("three")])
    assert await store.load_messages("t1") == [UserMessage("one"), AssistantMessage("three")]
    assert await store.load_messages("t2") == [UserMessage("two")]


# -- the call ledger ---------------------------------------------------------------------------


async def test_ledger_entry_round_trips_every_field(store: ThreadStore) -> None:
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


async def test_get_call_of_unknown_call_is_none(store: ThreadStore) -> None:
    await store.record_calls([entry(LOOKUP)])
    assert await store.get_call("t1", "nope") is None
    assert await store.get_call("t2", LOOKUP.id) is None


async def test_first_terminal_result_wins(store: ThreadStore) -> None:
    first = ToolResult.ok(LOOKUP.id, {"temperature": 21})
    late = ToolResult.canceled(LOOKUP.id, "run canceled", "system")
    await store.record_calls([entry(LOOKUP)])
    assert await store.complete_call("t1", LOOKUP.id, first) is True
    assert await store.complete_call("t1", LOOKUP.id, late) is False
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP).finished(first)


async def test_complete_call_of_unrecorded_call_is_refused(store: ThreadStore) -> None:
    assert await store.complete_call("t1", LOOKUP.id, ToolResult.ok(LOOKUP.id)) is False
    assert await store.get_call("t1", LOOKUP.id) is None


async def test_set_call_state_moves_an_open_call(store: ThreadStore) -> None:
    await store.record_calls([entry(LOOKUP)])
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    found = await store.get_call("t1", LOOKUP.id)
    assert found is not None and found.state is CallState.DISPATCHED


async def test_set_call_state_cannot_leave_terminal(store: ThreadStore) -> None:
    result = ToolResult.ok(LOOKUP.id, "done")
    await store.record_calls([entry(LOOKUP)])
    await store.complete_call("t1", LOOKUP.id, result)
    await store.set_call_state("t1", LOOKUP.id, CallState.DISPATCHED)
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP).finished(result)


async def test_set_call_state_refuses_terminal_without_a_result(store: ThreadStore) -> None:
    await store.create_thread("t1")
    await store.record_calls([LedgerEntry(thread_id="t1", call=LOOKUP, request_index=0)])
    with pytest.raises(UsageError, match="use complete_call"):
        await store.set_call_state("t1", LOOKUP.id, CallState.TERMINAL)
    assert [entry.call.id for entry in await store.open_calls("t1")] == [LOOKUP.id]


@pytest.mark.parametrize("state", [CallState.ANSWERED, CallState.TERMINAL])
async def test_set_call_state_refuses_states_that_come_with_a_value(store: ThreadStore, state: CallState) -> None:
    await store.record_calls([entry(LOOKUP)])
    with pytest.raises(UsageError):
        await store.set_call_state("t1", LOOKUP.id, state)


async def test_record_calls_keeps_existing_ids(store: ThreadStore) -> None:
    await store.record_calls([entry(LOOKUP, mode="read")])
    await store.record_calls([entry(LOOKUP, mode="destructive", state=CallState.DISPATCHED), entry(DELETE)])
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, mode="read")
    assert await store.get_call("t1", DELETE.id) == entry(DELETE)


async def test_open_calls_lists_only_non_terminal_calls_in_recording_order(store: ThreadStore) -> None:
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


async def test_record_batch_appends_the_message_and_writes_the_calls_ahead(store: ThreadStore) -> None:
    asking = AssistantMessage("Looking it up", (LOOKUP, DELETE))
    await store.append_messages("t1", [UserMessage("Weather?")])
    await store.record_batch("t1", asking, [entry(LOOKUP), entry(DELETE)])
    assert await store.load_messages("t1") == [UserMessage("Weather?"), asking]
    assert [open_call.call.id for open_call in await store.open_calls("t1")] == [LOOKUP.id, DELETE.id]


async def test_record_batch_keeps_existing_ids(store: ThreadStore) -> None:
    await store.record_calls([entry(LOOKUP, mode="read")])
    await store.record_batch("t1", AssistantMessage("", (LOOKUP,)), [entry(LOOKUP, mode="destructive")])
    assert await store.get_call("t1", LOOKUP.id) == entry(LOOKUP, mode="read")


async def test_complete_batch_records_results_and_appends_their_messages(store: ThreadStore) -> None:
    results = [ToolResult.ok(LOOKUP.id, {"temperature": 21}), ToolResult.failed(DELETE.id, "no such note")]
    await store.record_calls([entry(LOOKUP), entry(DELETE)])
    appended = [ToolResultMessage(LOOKUP.name, results[0]), ToolResultMessage(DELETE.name, results[1])]
    assert await store.complete_batch("t1", [LOOKUP, DELETE], results) == appended
    assert await store.load_messages("t1") == appended
    assert await store.open_calls("t1") == []
    assert await store.get_call("t1", DELETE.id) == entry(DELETE).finished(results[1])


async def test_complete_batch_keeps_the_result_that_won_in_the_transcript(store: ThreadStore) -> None:
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


# -- how a thread's last run stands --------------------------------------------------------------


async def test_a_thread_without_a_saved_run_record_has_the_default(store: ThreadStore) -> None:
    await store.create_thread("t1")
    assert await store.load_run("t1") == RunRecord()
    assert await store.load_run("unknown") == RunRecord()


async def test_run_records_round_trip_per_thread(store: ThreadStore) -> None:
    await store.create_thread("t1", principal="alice")
    await store.save_run("t1", RunRecord(closed_at=4, resume_attempts=2))
    assert await store.load_run("t1") == RunRecord(closed_at=4, resume_attempts=2)
    assert await store.load_run("t2") == RunRecord()
    assert await store.thread_principal("t1") == "alice"  # the thread is kept as it was
