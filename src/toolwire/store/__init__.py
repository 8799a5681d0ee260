"""The store interfaces, split by owner, and `Store`, their union.

The loop, the policy, the client tools and the server keep their state through these small
Protocols, so that a thread can continue in another process and nothing is lost in a crash:

| Interface          | Owner                 | Holds                                                   |
|--------------------|-----------------------|---------------------------------------------------------|
| `ThreadStore`      | the loop              | threads, transcripts, the call ledger, run records      |
| `ApprovalStore`    | the permission policy | one-time approvals, "always" grants, remembered denials |
| `ClientStateStore` | the client tools      | each thread's registered client tools (a JSON object)   |
| `WireStateStore`   | the server            | each conversation's protocol state (a JSON object)      |
| `LeaseStore`       | the server            | which replica writes each conversation (a lease, epoch) |
| `Store`            | `Agent(store=)`       | all of the above, and `aclose()`                        |

The call ledger: every call is recorded PENDING *before* it runs (write-ahead) and ends TERMINAL
with its result; the first terminal result written wins, later ones are refused; a client call is
DISPATCHED once its request is durably on its way, and ANSWERED once the client's answer is saved
(before it is acknowledged to the client).

Each interface has its contract suite (`tests/store/contracts/`), which every backend runs: a
new backend can be built and tested one interface at a time, then offered as a `Store`. Where
two interfaces write in one transaction, one backend implements both: `WireStateStore.save_wire_state`
moves ledger entries (`dispatched=`, `answered=`) in the transaction that saves the protocol
state, so it belongs to the backend of the `ThreadStore`.

Implementations: `MemoryStore` (one process, bounded, the default: `memory_store()`), `SqliteStore` (one
file, WAL), `PostgresStore` (shared by several server replicas). Each is also a `LeaseStore`;
only `PostgresStore` fences its writes with the leases it holds (`toolwire.errors.Fenced`).
Code outside this package types its parameters with these interfaces; only the entry
points that open a store (the CLI, `toolwire serve`, the operator's `conversations` commands) import one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from ..envelopes import ToolCall, ToolResult
from ..messages import Message, ToolResultMessage
from ..policy import ApprovalStore as ApprovalStore
from .records import CALL_STATE_ORDER as CALL_STATE_ORDER
from .records import COMES_WITH as COMES_WITH
from .records import CallState as CallState
from .records import Lease as Lease
from .records import LedgerEntry as LedgerEntry
from .records import RunRecord as RunRecord
from .records import ThreadInfo as ThreadInfo

__all__ = [
    "CALL_STATE_ORDER",
    "COMES_WITH",
    "ApprovalStore",
    "CallState",
    "ClientStateStore",
    "Lease",
    "LeaseStore",
    "LedgerEntry",
    "RunRecord",
    "Store",
    "ThreadInfo",
    "ThreadStore",
    "WireStateStore",
    "memory_store",
]


class ThreadStore(Protocol):
    """Threads, their transcripts, the call ledger and how each thread's last run stands.

    Every method is safe to call from the event loop; each write is atomic. Messages, ledger
    entries and run records may be written for a thread before `create_thread` (it only records
    the owner).
    """

    async def create_thread(self, thread_id: str, *, principal: str | None = None) -> bool:
        """Create the thread if it does not exist; True if it was created now."""
        ...

    async def thread_principal(self, thread_id: str) -> str | None:
        """Return the principal that owns the thread (None for none or an unknown thread)."""
        ...

    async def thread_exists(self, thread_id: str) -> bool:
        """Tell whether the thread exists."""
        ...

    async def count_threads(self, principal: str) -> int:
        """Return how many threads `principal` owns (a server caps new conversations with it)."""
        ...

    async def list_threads(self, principal: str, *, limit: int | None = None) -> list[ThreadInfo]:
        """Return the threads `principal` owns, the latest activity first, at most `limit` (None: all).

        A server lists a principal's conversations with it (`GET /conversations`).
        """
        ...

    async def thread_info(self, thread_id: str) -> ThreadInfo | None:
        """Return the thread's owner and times (None for an unknown thread)."""
        ...

    async def delete_thread(self, thread_id: str) -> bool:
        """Delete the thread and everything kept of it, atomically; True if it existed.

        Its transcript, ledger and run record go, and, in a backend that implements the other
        interfaces too (a `Store`), its one-time approvals, grants and remembered denials, its
        client tool state and its protocol state. A lease is kept (an epoch never repeats).
        Whoever serves the conversation must have stopped first: the store does not know.

        Call it to give a finished thread's memory (or rows) back: the persistent stores keep a
        thread until then; `MemoryStore` also drops finished threads by itself past its bound
        (`max_threads`).
        """
        ...

    async def load_messages(self, thread_id: str) -> list[Message]:
        """Return the thread's transcript, oldest first (empty for a new thread)."""
        ...

    async def append_messages(self, thread_id: str, messages: Sequence[Message]) -> None:
        """Append messages to the thread's transcript, atomically."""
        ...

    async def record_calls(self, entries: Sequence[LedgerEntry]) -> None:
        """Write calls to the ledger before they run (write-ahead); existing ids are kept."""
        ...

    async def record_batch(self, thread_id: str, message: Message, entries: Sequence[LedgerEntry]) -> None:
        """Append the message that asks for a batch of calls and write the calls to the ledger, atomically.

        `append_messages(thread_id, [message])` and `record_calls(entries)` in one transaction:
        the loop's write-ahead before a batch runs.
        """
        ...

    async def complete_batch(
        self, thread_id: str, calls: Sequence[ToolCall], results: Sequence[ToolResult]
    ) -> list[ToolResultMessage]:
        """Record each call's result and append one `ToolResultMessage` per call, atomically.

        For each call in order: `complete_call` with its result (the first terminal result wins);
        the message carries the result that won in the ledger (this one, or an earlier writer's;
        this one when the call was never recorded).

        Returns:
            The messages appended, in the calls' order.
        """
        ...

    async def set_call_state(self, thread_id: str, call_id: str, state: CallState) -> None:
        """Move a call forward (e.g. to DISPATCHED); a call never moves back, nor out of TERMINAL.

        Raises:
            UsageError: `state` is ANSWERED or TERMINAL: those come with the answer (by
                `WireStateStore.save_wire_state`) or the result (by `complete_call`).
        """
        ...

    async def complete_call(self, thread_id: str, call_id: str, result: ToolResult) -> bool:
        """Record the call's result; True if this was the first terminal result (it wins)."""
        ...

    async def get_call(self, thread_id: str, call_id: str) -> LedgerEntry | None:
        """Return the ledger entry of a call (TERMINAL with its result once it has one)."""
        ...

    async def open_calls(self, thread_id: str) -> list[LedgerEntry]:
        """Return the thread's calls that are not TERMINAL, in the order they were recorded."""
        ...

    async def load_run(self, thread_id: str) -> RunRecord:
        """Return how the thread's last run stands (`RunRecord()` when nothing was saved)."""
        ...

    async def save_run(self, thread_id: str, record: RunRecord) -> None:
        """Replace how the thread's last run stands (the thread's owner, if any, is kept)."""
        ...


class ClientStateStore(Protocol):
    """Each thread's client tool state: the groups a client registered, what is expanded."""

    async def load_client_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the thread's client tool state as saved (None when there is none)."""
        ...

    async def save_client_state(self, thread_id: str, state: Mapping[str, Any] | None) -> None:
        """Replace the thread's client tool state (a JSON object) atomically; None deletes it.

        What is saved is a copy: later changes to `state` do not show in what is loaded.
        """
        ...


class WireStateStore(Protocol):
    """The server's protocol state of each conversation (numbering, frames not acknowledged yet).

    The state is a JSON object the server makes (and reads back) and the store keeps as it is:

    ```
    {"role": "server", "conversationId": "t1", "nextStanza": 9, "lastSeen": 5,
     "outbox": [[8, "<base64 frame>"]], ...}
    ```

    Between two saves of a conversation the outbox usually gains frames at its end and loses
    some at its start, so a backend may write only what changed (`SqliteStore` does); anything
    else in the object is kept whole.

    `save_wire_state` also moves calls of the thread's ledger (`dispatched=`, `answered=`) and
    appends to its transcript (`appended=`) in the same transaction, so a backend implements
    this interface together with `ThreadStore`, on the same database.
    """

    async def load_wire_state(self, thread_id: str) -> dict[str, Any] | None:
        """Return the conversation's protocol state as last saved (None when there is none)."""
        ...

    def release_wire_state(self, thread_id: str) -> None:
        """Drop what the store keeps in memory of the conversation's protocol state.

        Called when nothing in this process holds the state any more (its client left and its
        run ended). What is stored stays; the next save after a `load_wire_state` is a whole one.
        """
        ...

    async def save_wire_state(
        self,
        thread_id: str,
        state: Mapping[str, Any] | None,
        *,
        dispatched: Sequence[str] = (),
        answered: Mapping[str, Mapping[str, Any]] | None = None,
        appended: Sequence[Message] = (),
    ) -> frozenset[str]:
        """Replace the conversation's protocol state (a JSON object); None deletes it.

        The server saves it before it writes a frame, so nothing it sent is lost with the process,
        and before it acknowledges what it received; it is on the hot path of every frame.

        Args:
            thread_id: The conversation.
            state: The state to keep; what `load_wire_state` returns until the next save.
            dispatched: Calls whose requests `state`'s outbox holds: moved to DISPATCHED (as
                `ThreadStore.set_call_state`) in the same transaction.
            answered: Call id → the client's answer (a JSON object), for answers among what `state` has seen:
                each DISPATCHED call moves to ANSWERED with (a copy of) its answer, in the same
                transaction (a call in any other state keeps it: not dispatched yet, answered or
                settled already).
            appended: Messages appended to the thread's transcript in the same transaction: a
                user's message among what `state` has seen (a prompt the server acknowledges is
                in the transcript, even after kill -9; one it has not seen is sent again).

        Returns:
            The calls of `answered` whose answers were saved.

        Raises:
            EnvelopeError: The backend could not read `state` (e.g. an outbox that is not
                pairs of a stanza number and a base64 frame).
        """
        ...


class LeaseStore(Protocol):
    """One writer per conversation: a lease with an epoch, taken, renewed and released by server replicas.

    A replica takes a conversation's lease when it is free or expired (the epoch goes up by one),
    renews it well before it expires, and releases it when it hands the conversation over. A
    shared store (`PostgresStore`) also *fences* the writes that depend on owning a conversation
    whose lease it took: once another replica took the lease over (a newer epoch), such a write
    raises `toolwire.errors.Fenced` and keeps nothing. In one process (`MemoryStore`,
    `SqliteStore`: one server per data directory) leases live in memory and fence nothing.

    Expiry is by the store's clock (the database server's for `PostgresStore`), so replicas'
    clocks need not agree. A `ttl` of 0 takes a lease that has expired already (tests).
    """

    async def acquire(self, conversation: str, owner: str, ttl: float) -> Lease | None:
        """Take the conversation's lease for `ttl` seconds if it is free or expired; None while another holds it.

        The new lease's epoch is the last one's plus one (1 for the first). A holder that asks
        again before its lease expired gets None too: it renews instead.
        """
        ...

    async def renew(self, lease: Lease, ttl: float) -> bool:
        """Extend a lease to `ttl` seconds from now; False when it is no longer this holder's at this epoch.

        A lease that expired but that nobody took over is renewed (nobody wrote under a newer epoch).
        """
        ...

    async def renew_all(self, leases: Sequence[Lease], ttl: float) -> set[str]:
        """`renew` each lease (one round trip for all); return the conversations whose leases were renewed."""
        ...

    async def release(self, lease: Lease) -> None:
        """Give the lease up (it expires now; its epoch stays): the next `acquire` takes it at once.

        Nothing happens when the lease moved on already. A fencing store keeps fencing this
        store's writes of the conversation with the released epoch.
        """
        ...

    async def holder(self, conversation: str) -> Lease | None:
        """Return the conversation's lease while someone holds it (None when free or expired)."""
        ...

    async def claim_abandoned(self, owner: str, ttl: float, *, limit: int = 16) -> list[Lease]:
        """Take over up to `limit` leases that expired without being released (their holder died or stalled).

        A released lease (its holder let go of the conversation) is not taken: only one whose
        holder stopped renewing it while it served. Replicas that claim at the same time get
        different conversations (`FOR UPDATE SKIP LOCKED` in `PostgresStore`). Each is taken as
        by `acquire`, at the next epoch.
        """
        ...

    async def ask_handover(self, conversation: str) -> None:
        """Ask the conversation's holder, wherever it runs, to hand it over (a wake-up: see `listen`)."""
        ...

    async def listen(self, wake: Callable[[str, str], None]) -> None:
        """Call `wake(kind, conversation)` for each wake-up of any replica, until cancelled.

        `kind` is `"handover"` (someone asked for the conversation: its holder should hand it
        over) or `"released"` (its lease was just released: a replica waiting for it may take
        it). Wake-ups carry ids only and may be lost (a connection dropped): waiters poll too.

        Raises:
            Exception: The store's connection failed (call it again after a pause).
        """
        ...


class Store(ThreadStore, ApprovalStore, ClientStateStore, WireStateStore, Protocol):
    """Every store interface in one backend: what `Agent(store=)` and the server take.

    Every method is safe to call from the event loop.
    """

    async def aclose(self) -> None:
        """Release the store's resources."""
        ...


def memory_store() -> Store:
    """Return a new `MemoryStore` (the `Agent` default): the latest 1,000 threads, in process memory.

    Past 1,000 threads, the least recently used finished ones are dropped (see `MemoryStore`).
    """
    global _memory_store
    if _memory_store is None:  # the interfaces load no implementation until one is asked for
        from .memory import MemoryStore

        _memory_store = MemoryStore
    return _memory_store()


_memory_store: Callable[[], Store] | None = None
