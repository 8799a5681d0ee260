"""The `LeaseStore` contract: one writer per conversation, by a lease with an epoch, on every backend."""

from __future__ import annotations

import time
from typing import Any

import pytest
from contract_support import Backend, missing_methods

from toolwire.store import Lease, LeaseStore

HOUR = 3600.0


@pytest.fixture
def store(backend: tuple[Backend, Any]) -> LeaseStore:
    return backend[1]


async def test_the_backend_has_every_method_of_the_interface(store: LeaseStore) -> None:
    assert missing_methods(store, LeaseStore) == []


async def test_a_free_lease_is_taken_at_epoch_one(store: LeaseStore) -> None:
    before = time.time()
    lease = await store.acquire("t1", "replica-a", HOUR)
    assert lease is not None
    assert (lease.conversation, lease.owner, lease.epoch) == ("t1", "replica-a", 1)
    assert before + HOUR - 60 < lease.expires_at < time.time() + HOUR + 60  # (the store's clock)
    assert await store.holder("t1") == lease


async def test_a_held_lease_is_refused_to_others_and_to_its_holder(store: LeaseStore) -> None:
    lease = await store.acquire("t1", "replica-a", HOUR)
    assert await store.acquire("t1", "replica-b", HOUR) is None
    assert await store.acquire("t1", "replica-a", HOUR) is None  # it renews instead
    assert await store.holder("t1") == lease


async def test_leases_of_conversations_are_separate(store: LeaseStore) -> None:
    assert await store.acquire("t1", "replica-a", HOUR) is not None
    other = await store.acquire("t2", "replica-b", HOUR)
    assert other is not None and other.epoch == 1
    assert await store.holder("t3") is None


async def test_an_expired_lease_is_taken_over_at_the_next_epoch(store: LeaseStore) -> None:
    first = await store.acquire("t1", "replica-a", 0)
    assert first is not None
    assert await store.holder("t1") is None  # expired: nobody holds it
    second = await store.acquire("t1", "replica-b", HOUR)
    assert second is not None and (second.owner, second.epoch) == ("replica-b", 2)
    assert await store.holder("t1") == second


async def test_only_the_holder_at_its_epoch_renews(store: LeaseStore) -> None:
    first = await store.acquire("t1", "replica-a", 0)
    assert first is not None
    second = await store.acquire("t1", "replica-b", 0)
    assert second is not None
    assert await store.renew(first, HOUR) is False  # its epoch moved on
    assert await store.renew(Lease("t1", "replica-a", second.epoch, 0.0), HOUR) is False  # not its owner
    assert await store.renew(second, HOUR) is True  # expired, but nobody took it over
    holder = await store.holder("t1")
    assert holder is not None and holder.epoch == second.epoch and holder.expires_at > time.time() + HOUR - 60
    assert await store.acquire("t1", "replica-a", HOUR) is None  # renewed: held again


async def test_a_released_lease_is_free_at_once_and_its_epoch_goes_on(store: LeaseStore) -> None:
    lease = await store.acquire("t1", "replica-a", HOUR)
    assert lease is not None
    await store.release(lease)
    assert await store.holder("t1") is None
    taken = await store.acquire("t1", "replica-b", HOUR)
    assert taken is not None and taken.epoch == 2


async def test_releasing_a_lease_that_moved_on_changes_nothing(store: LeaseStore) -> None:
    first = await store.acquire("t1", "replica-a", 0)
    assert first is not None
    second = await store.acquire("t1", "replica-b", HOUR)
    await store.release(first)
    assert await store.holder("t1") == second


async def test_only_leases_that_expired_unreleased_are_claimed_as_abandoned(store: LeaseStore) -> None:
    died = await store.acquire("t1", "replica-a", 0)
    released = await store.acquire("t2", "replica-a", HOUR)
    held = await store.acquire("t3", "replica-a", HOUR)
    assert died is not None and released is not None and held is not None
    await store.release(released)
    [claimed] = await store.claim_abandoned("replica-b", HOUR)
    assert (claimed.conversation, claimed.owner, claimed.epoch) == ("t1", "replica-b", 2)
    assert await store.holder("t1") == claimed
    assert await store.claim_abandoned("replica-c", HOUR) == []
    assert await store.holder("t3") == held


async def test_renewing_all_renews_the_leases_still_held_at_their_epochs(store: LeaseStore) -> None:
    kept = await store.acquire("t1", "replica-a", 0)
    lost = await store.acquire("t2", "replica-a", 0)
    assert kept is not None and lost is not None
    assert await store.acquire("t2", "replica-b", HOUR) is not None
    assert await store.renew_all([kept, lost], HOUR) == {"t1"}
    assert await store.renew_all([], HOUR) == set()
    holder = await store.holder("t1")
    assert holder is not None and holder.epoch == kept.epoch
