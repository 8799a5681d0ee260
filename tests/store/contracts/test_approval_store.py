"""The `ApprovalStore` contract: one-time approvals, "always" grants and remembered denials, on every backend."""

from __future__ import annotations

import pytest
from contract_support import missing_methods

from toolwire.envelopes import arguments_hash
from toolwire.store import ApprovalStore

HASH_A = arguments_hash({"path": "a.txt"})
HASH_B = arguments_hash({"path": "b.txt"})


@pytest.fixture
def store(approval_store: ApprovalStore) -> ApprovalStore:
    return approval_store


async def test_the_backend_has_every_method_of_the_interface(store: ApprovalStore) -> None:
    assert missing_methods(store, ApprovalStore) == []


async def test_approval_is_consumed_once(store: ApprovalStore) -> None:
    await store.approve_once("t1", "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is True
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is False


async def test_approval_is_bound_to_thread_call_tool_and_arguments(store: ApprovalStore) -> None:
    await store.approve_once("t1", "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c2", "write_file", HASH_A) is False
    assert await store.take_approval("t1", "c1", "write_file", HASH_B) is False
    assert await store.take_approval("t1", "c1", "delete_file", HASH_A) is False
    assert await store.take_approval("t2", "c1", "write_file", HASH_A) is False
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is True


async def test_grants_are_listed_and_revoked_per_thread(store: ApprovalStore) -> None:
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


async def test_grant_is_found_as_returned(store: ApprovalStore) -> None:
    granted = await store.grant("t1", "shell_run", explicit=False)
    assert await store.find_grant("t1", "shell_run") == granted


async def test_granting_again_replaces_the_grant_in_place(store: ApprovalStore) -> None:
    await store.grant("t1", "shell_run", explicit=False)
    await store.grant("t1", "send_email")
    again = await store.grant("t1", "shell_run", explicit=True)
    assert await store.grants("t1") == [again, await store.find_grant("t1", "send_email")]


async def test_no_thread_grants_are_separate_from_real_threads(store: ApprovalStore) -> None:
    await store.grant(None, "shell_run")
    await store.grant("t1", "send_email")
    assert [(g.thread_id, g.tool) for g in await store.grants(None)] == [(None, "shell_run")]
    assert await store.find_grant("t1", "shell_run") is None
    assert await store.find_grant(None, "send_email") is None


async def test_no_thread_approvals_are_separate_from_real_threads(store: ApprovalStore) -> None:
    await store.approve_once(None, "c1", "write_file", HASH_A)
    assert await store.take_approval("t1", "c1", "write_file", HASH_A) is False
    assert await store.take_approval(None, "c1", "write_file", HASH_A) is True


async def test_no_thread_denials_are_separate_from_real_threads(store: ApprovalStore) -> None:
    await store.remember_denial(None, "shell_run", HASH_A, "not outside a thread")
    assert await store.find_denial("t1", "shell_run", HASH_A) is None
    assert await store.find_denial(None, "shell_run", HASH_A) == "not outside a thread"


async def test_denial_is_remembered_per_thread_tool_and_arguments(store: ApprovalStore) -> None:
    await store.remember_denial("t1", "shell_run", HASH_A, "the user refused")
    assert await store.find_denial("t1", "shell_run", HASH_A) == "the user refused"
    assert await store.find_denial("t2", "shell_run", HASH_A) is None
    assert await store.find_denial("t1", "send_email", HASH_A) is None
    assert await store.find_denial("t1", "shell_run", HASH_B) is None


async def test_latest_denial_reason_is_kept(store: ApprovalStore) -> None:
    await store.remember_denial("t1", "shell_run", HASH_A, "first")
    await store.remember_denial("t1", "shell_run", HASH_A, "second")
    assert await store.find_denial("t1", "shell_run", HASH_A) == "second"
