"""The conversations of a data directory, for an operator (`toolwire conversations list | cancel`).

```
toolwire conversations list   [--data-dir DIR]            every conversation and how its last run stands
toolwire conversations cancel ID [--data-dir DIR] [--reason TEXT]
                              close its unfinished run: open calls end Canceled by `system`
```

(A principal's own conversations are listed, shown and deleted through a running server:
`toolwire conversations list | show | delete --url`, `toolwire.server.conversations_http`.)

`list` only reads and works beside a running server. `cancel` writes, so it needs the data
directory to itself (a running `toolwire serve` holds it; stop it first): it is how an operator
ends a run that keeps failing before the server gives up on it by itself
(`Agent(max_resume_attempts=)`), or that nobody will come back to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from .client_tools.toolset import answered_result
from .ledger import close_run, run_is_open
from .messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from .store import RunRecord
from .store.sqlite import SqliteStore

__all__ = ["ConversationSummary", "LastRunState", "cancel_conversation", "last_run", "summarize", "title_of"]

TITLE_LENGTH = 60
"""Characters of a conversation's title (its first prompt), the ellipsis included."""

LastRunState = Literal["answered", "closed", "unfinished", "empty"]
"""How a conversation's last run stands: it answered; it ended without an answer (canceled, a
limit, closed by an operator); it stopped with the process (the next start resumes it); or it
has no messages."""


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """One conversation as `toolwire conversations list` shows it."""

    thread_id: str
    principal: str | None
    messages: int
    run: LastRunState
    open_calls: int
    """Calls in the ledger without their result."""
    resume_attempts: int
    """Times a restarted server began to resume the run without finishing it."""


def last_run(history: Sequence[Message], record: RunRecord) -> LastRunState:
    """How a conversation's last run stands, from its transcript and run record."""
    if not history:
        return "empty"
    if run_is_open(history, record):
        return "unfinished"
    return "answered" if isinstance(history[-1], AssistantMessage) else "closed"


def title_of(history: Sequence[Message]) -> str | None:
    """A conversation's title: its first prompt on one line, shortened (None before the first prompt)."""
    prompt = next((message.content for message in history if isinstance(message, UserMessage)), None)
    if prompt is None:
        return None
    line = " ".join(prompt.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


async def summarize(store: SqliteStore) -> list[ConversationSummary]:
    """Every conversation of the store, oldest first."""
    summaries: list[ConversationSummary] = []
    for thread_id in await store.thread_ids():
        history = await store.load_messages(thread_id)
        record = await store.load_run(thread_id)
        run = last_run(history, record)
        summaries.append(
            ConversationSummary(
                thread_id=thread_id,
                principal=await store.thread_principal(thread_id),
                messages=len(history),
                run=run,
                open_calls=len(await store.open_calls(thread_id)),
                resume_attempts=record.resume_attempts,
            )
        )
    return summaries


async def cancel_conversation(store: SqliteStore, thread_id: str, reason: str) -> list[ToolResultMessage] | None:
    """Close a conversation's unfinished run: its open calls end Canceled by `system` with `reason`.

    Returns:
        The results added to the transcript; None when the run was not unfinished (nothing done).
    """
    history = await store.load_messages(thread_id)
    if not run_is_open(history, await store.load_run(thread_id)):
        return None
    return await close_run(store, thread_id, reason, answered=answered_result)
