"""Consent prompts: the client's handler decides, and its answer becomes a ConsentAnswer.

A handler gets the protocol's `ConsentRequestBody` (`tool_name`, `arguments`, `mode`, `reason`,
`description`, `allow_always`) and returns one of:

| returns | answer |
|---|---|
| `True` / `False` | allow / deny this call |
| `(allow, scope)` | with `scope` `"once"` or `"thread"` (every call of this tool in the thread) |
| `toolwire.policy.ConsentAnswer(allow, reason, scope=...)` | as the local agent's handlers do |
| `toolwire.protocol.ConsentAnswerBody` | as it is (its `id` is set to the request's) |

Without a handler every call is denied with the reason "no consent handler in this client".
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeAlias, cast

from anyio import to_thread

from ..policy import ConsentAnswer
from ..protocol import ConsentAnswerBody, ConsentRequestBody, ConsentScope

__all__ = ["ConsentPromptHandler", "NO_HANDLER", "ask"]

_log = logging.getLogger("toolwire.client")

ConsentPromptHandler: TypeAlias = Callable[[ConsentRequestBody], Any]
"""A sync or async function of the `ConsentRequestBody`; sync ones run in a worker thread (they may
prompt in a terminal)."""
NO_HANDLER = "no consent handler in this client"


async def ask(handler: ConsentPromptHandler | None, request: ConsentRequestBody) -> ConsentAnswerBody:
    """Ask `handler` about `request`; a failing or odd handler denies, and says why."""
    if handler is None:
        return ConsentAnswerBody(id=request.id, allow=False, reason=NO_HANDLER)
    try:
        if inspect.iscoroutinefunction(handler):
            value = await handler(request)
        else:
            value = await to_thread.run_sync(handler, request)
            if inspect.isawaitable(value):
                value = await value
    except Exception as exc:
        _log.exception("the consent handler failed for %s", request.tool_name)
        return ConsentAnswerBody(id=request.id, allow=False, reason=f"the consent handler failed: {exc}")
    return _answer(request, value)


def _answer(request: ConsentRequestBody, value: Any) -> ConsentAnswerBody:
    match value:
        case ConsentAnswerBody():
            answer = replace(value, id=request.id)
        case ConsentAnswer(allow=allow, reason=reason, scope=scope):
            answer = ConsentAnswerBody(id=request.id, allow=allow, scope=scope, reason=reason)
        case (bool() as allow, "once" | "thread" as scope):
            answer = ConsentAnswerBody(id=request.id, allow=allow, scope=cast(ConsentScope, scope))
        case bool() as allow:
            answer = ConsentAnswerBody(id=request.id, allow=allow)
        case _:
            reason = f"the consent handler returned {type(value).__name__}, not a bool or an answer"
            _log.warning("%s", reason)
            return ConsentAnswerBody(id=request.id, allow=False, reason=reason)
    if answer.allow and answer.scope == "thread" and not request.allow_always:
        answer = replace(answer, scope="once")  # the server would not honour it
    if not answer.allow and answer.reason is None:
        answer = replace(answer, reason="the user said no")
    return answer
