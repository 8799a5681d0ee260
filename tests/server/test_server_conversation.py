"""`ServerConversation.save`: a state is written once, however many tasks ask for it meanwhile."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

import anyio
import pytest

from toolwire import Agent
from toolwire.messages import Message
from toolwire.protocol import UserMessageBody
from toolwire.server.server_conversation import ServerConversation
from toolwire.store.memory import MemoryStore
from toolwire.testing import ScriptedModel


class SlowStore(MemoryStore):
    """Counts saves of the protocol state, each of which waits until `answering` is set (or fails)."""

    def __init__(self) -> None:
        super().__init__()
        self.saves: list[Mapping[str, Any] | None] = []
        self.answering = anyio.Event()
        self.fail_next = False

    async def save_wire_state(
        self,
        thread_id: str,
        state: Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
        appended: Sequence[Message] = (),
    ) -> frozenset[str]:
        self.saves.append(state)
        await self.answering.wait()
        if self.fail_next:
            self.fail_next = False
            raise OSError("disk full")
        return await super().save_wire_state(
            thread_id, state, dispatched=dispatched, answered=answered, appended=appended
        )


@pytest.fixture
def store() -> SlowStore:
    return SlowStore()


@pytest.fixture
def conversation(store: SlowStore) -> ServerConversation:
    conversation = ServerConversation(Agent(ScriptedModel(["hi"]), store=store), "t1", "alice", None)
    conversation.post(UserMessageBody(id="u1", content="hello"))  # a state that is not saved yet
    return conversation


async def concurrently(store: SlowStore, *saves: Callable[[], Coroutine[Any, Any, object]]) -> None:
    """Start the saves, let each reach the store or wait, then let the store answer."""
    async with anyio.create_task_group() as tasks:
        for save in saves:
            tasks.start_soon(save)
        await anyio.wait_all_tasks_blocked()
        store.answering.set()


async def test_a_state_being_saved_is_not_saved_again(store: SlowStore, conversation: ServerConversation) -> None:
    await concurrently(store, conversation.save, conversation.save)
    assert len(store.saves) == 1 and await store.load_wire_state("t1") is not None


async def test_a_waiter_saves_itself_when_the_save_it_waited_for_failed(
    store: SlowStore, conversation: ServerConversation
) -> None:
    store.fail_next = True

    async def failing() -> None:
        with pytest.raises(OSError, match="disk full"):
            await conversation.save()

    await concurrently(store, failing, conversation.save)
    assert len(store.saves) == 2 and await store.load_wire_state("t1") is not None


async def test_a_save_that_marks_calls_dispatched_is_never_skipped(
    store: SlowStore, conversation: ServerConversation
) -> None:
    store.answering.set()
    await conversation.save()
    await conversation.flush(dispatched=("call_1",))
    assert len(store.saves) == 2
