"""The `ClientStateStore` contract: each thread's client tool state, on every backend."""

from __future__ import annotations

import pytest
from contract_support import missing_methods

from toolwire.store import ClientStateStore


@pytest.fixture
def store(client_state_store: ClientStateStore) -> ClientStateStore:
    return client_state_store


async def test_the_backend_has_every_method_of_the_interface(store: ClientStateStore) -> None:
    assert missing_methods(store, ClientStateStore) == []


CLIENT_STATE = {"groups": [{"name": "IDE", "tools": [{"name": "OpenFile"}]}], "expanded": ["IDE"]}


async def test_client_state_of_unknown_thread_is_none(store: ClientStateStore) -> None:
    assert await store.load_client_state("t1") is None


async def test_client_state_round_trips(store: ClientStateStore) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    assert await store.load_client_state("t1") == CLIENT_STATE


async def test_client_state_is_replaced_whole(store: ClientStateStore) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    await store.save_client_state("t1", {"groups": []})
    assert await store.load_client_state("t1") == {"groups": []}


async def test_saving_none_deletes_the_client_state(store: ClientStateStore) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    await store.save_client_state("t1", None)
    assert await store.load_client_state("t1") is None


async def test_client_states_of_threads_are_separate(store: ClientStateStore) -> None:
    await store.save_client_state("t1", CLIENT_STATE)
    assert await store.load_client_state("t2") is None


async def test_saved_client_state_does_not_change_with_the_callers_dict(store: ClientStateStore) -> None:
    state = {"expanded": ["IDE"]}
    await store.save_client_state("t1", state)
    state["expanded"].append("Page")
    assert await store.load_client_state("t1") == {"expanded": ["IDE"]}
