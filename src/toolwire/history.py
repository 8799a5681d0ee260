"""Fitting a transcript into a model's context budget without separating a call from its result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .errors import UsageError
from .messages import Message, UserMessage

__all__ = ["HistoryStrategy", "TrimHistory", "estimate_tokens"]


class HistoryStrategy(Protocol):
    """Fits a transcript into the model's context budget before each request."""

    async def __call__(self, messages: Sequence[Message]) -> Sequence[Message]:
        """Return the messages to send: the newest ones, never a call without its result."""
        ...


def estimate_tokens(message: Message) -> int:
    """A rough token count (four characters a token) of a message, for budgets."""
    return len(str(message.to_dict())) // 4 + 4


class TrimHistory:
    """Drop the oldest turns until the transcript fits `max_tokens` (a rough estimate).

    An assistant message and the results of its calls are dropped together, the kept part always
    starts with a user message, and the current turn (from the last user message on) is always
    kept, even when it alone is over the budget.
    """

    def __init__(self, max_tokens: int, *, estimate: Callable[[Message], int] = estimate_tokens) -> None:
        if max_tokens < 1:
            raise UsageError("TrimHistory needs max_tokens >= 1")
        self.max_tokens = max_tokens
        self._estimate = estimate

    async def __call__(self, messages: Sequence[Message]) -> Sequence[Message]:
        """Return the newest whole turns that fit the budget."""
        starts = [index for index, message in enumerate(messages) if isinstance(message, UserMessage)]
        if not starts:
            return messages
        total = sum(self._estimate(message) for message in messages)
        for start in starts:
            if total <= self.max_tokens or start == starts[-1]:
                return messages[start:]
            following = next((later for later in starts if later > start), len(messages))
            total -= sum(self._estimate(message) for message in messages[start:following])
        return messages  # pragma: no cover - the loop always returns at the last user message
