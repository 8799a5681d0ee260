"""The `ThreadStore` contract for a server's list of conversations: listing a principal's threads, deleting one."""

from __future__ import annotations

from contract_support import DELETE, LOOKUP, entry

from toolwire import ToolResult
from toolwire.envelopes import arguments_hash
from toolwire.messages import AssistantMessage, UserMessage
from toolwire.protocol import Sequencing
from toolwire.store import CallState, RunRecord, Store, ThreadStore


async def test_list_threads_lists_a_principals_threads_latest_activity_first(thread_store: ThreadStore) -> None:
    for thread_id, principal in (("t1", "alice"), ("t2", "bob"), ("t3", "alice"), ("t4", None), ("t5", "alice")):
        await thread_store.create_thread(thread_id, principal=principal)
    await thread_store.append_messages("t1", [UserMessage("Hello again")])
    listed = await thread_store.list_threads("alice")
    assert [info.thread_id for info in listed][0] == "t1"  # the latest activity
    assert {info.thread_id for info in listed} == {"t1", "t3", "t5"}
    assert all(info.principal == "alice" for info in listed)
    assert [info.thread_id for info in await thread_store.list_threads("bob")] == ["t2"]
    assert await thread_store.list_threads("alice", limit=1) == listed[:1]
    assert await thread_store.list_threads("alice", limit=5) == listed
    assert await thread_store.list_threads("carol") == []


async def test_thread_info_tells_the_owner_and_when_it_was_last_active(thread_store: ThreadStore) -> None:
    await thread_store.create_thread("t1", principal="alice")
    created = await thread_store.thread_info("t1")
    assert created is not None and created.principal == "alice" and created.updated_at == created.created_at
    await thread_store.record_batch("t1", AssistantMessage("", (LOOKUP,)), [entry(LOOKUP)])
    batched = await thread_store.thread_info("t1")
    assert batched is not None and batched.created_at == created.created_at
    assert batched.updated_at >= created.updated_at
    await thread_store.complete_batch("t1", [LOOKUP], [ToolResult.ok(LOOKUP.id, {"celsius": 21})])
    completed = await thread_store.thread_info("t1")
    assert completed is not None and completed.updated_at >= batched.updated_at
    assert await thread_store.thread_info("t2") is None


async def test_delete_thread_removes_the_thread_and_its_ledger(thread_store: ThreadStore) -> None:
    for thread_id in ("t1", "t2"):
        await thread_store.create_thread(thread_id, principal="alice")
        await thread_store.record_batch(thread_id, AssistantMessage("", (LOOKUP,)), [entry(LOOKUP, thread_id)])
        await thread_store.save_run(thread_id, RunRecord(closed_at=1, resume_attempts=2))
    assert await thread_store.delete_thread("t1") is True
    assert not await thread_store.thread_exists("t1")
    assert await thread_store.thread_info("t1") is None
    assert await thread_store.load_messages("t1") == []
    assert await thread_store.get_call("t1", LOOKUP.id) is None
    assert await thread_store.open_calls("t1") == []
    assert await thread_store.load_run("t1") == RunRecord()
    assert [info.thread_id for info in await thread_store.list_threads("alice")] == ["t2"]
    assert await thread_store.count_threads("alice") == 1
    # The other thread keeps everything.
    assert len(await thread_store.load_messages("t2")) == 1
    assert [e.call.id for e in await thread_store.open_calls("t2")] == [LOOKUP.id]
    assert await thread_store.load_run("t2") == RunRecord(closed_at=1, resume_attempts=2)
    assert await thread_store.delete_thread("t1") is False  # gone already
    assert await thread_store.delete_thread("nope") is False


async def test_a_deleted_thread_id_starts_afresh(thread_store: ThreadStore) -> None:
    await thread_store.create_thread("t1", principal="alice")
    await thread_store.append_messages("t1", [UserMessage("first life")])
    await thread_store.delete_thread("t1")
    assert await thread_store.create_thread("t1", principal="bob") is True
    assert await thread_store.thread_principal("t1") == "bob"
    assert await thread_store.load_messages("t1") == []


async def test_delete_thread_removes_approvals_grants_client_and_protocol_state(whole_store: Store) -> None:
    digest = arguments_hash(DELETE.arguments)
    for thread_id in ("t1", "t2"):
        await whole_store.create_thread(thread_id, principal="alice")
        await whole_store.record_calls([entry(DELETE, thread_id, state=CallState.PENDING)])
        await whole_store.approve_once(thread_id, DELETE.id, DELETE.name, digest)
        await whole_store.grant(thread_id, "lookup")
        await whole_store.remember_denial(thread_id, DELETE.name, digest, "the user refused")
        await whole_store.save_client_state(thread_id, {"groups": [{"name": "IDE"}]})
        state = Sequencing(role="server", conversation_id=thread_id)
        await whole_store.save_wire_state(thread_id, state.to_dict())
    await whole_store.grant(None, "lookup")  # outside any thread: not the thread's
    assert await whole_store.delete_thread("t1")
    assert not await whole_store.take_approval("t1", DELETE.id, DELETE.name, digest)
    assert await whole_store.find_grant("t1", "lookup") is None and await whole_store.grants("t1") == []
    assert await whole_store.find_denial("t1", DELETE.name, digest) is None
    assert await whole_store.load_client_state("t1") is None
    assert await whole_store.load_wire_state("t1") is None
    # The other thread's, and those outside any thread, stay.
    assert await whole_store.take_approval("t2", DELETE.id, DELETE.name, digest)
    assert await whole_store.find_grant("t2", "lookup") is not None
    assert await whole_store.find_grant(None, "lookup") is not None
    assert await whole_store.find_denial("t2", DELETE.name, digest) == "the user refused"
    assert await whole_store.load_client_state("t2") == {"groups": [{"name": "IDE"}]}
    assert await whole_store.load_wire_state("t2") is not None
