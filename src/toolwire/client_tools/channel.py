"""The way to a client: `ClientChannel`, `ClientHub` and the disconnection strategies.

The hub correlates requests and responses; the strategies (`FallbackMessage`, `RetryWithBackoff`,
`FailFast`) say what a call does when its client is gone.

```
ClientHub.request(thread, request)
    the client drops (or dropped a moment ago) ──► wait up to `reconnect_grace` for it to come back
    no client back, or none attached at all ──► the disconnection strategy:
        FallbackMessage  Error client_disconnected with the template (the model may carry on)
        RetryWithBackoff wait for a client to attach again, re-send the same request id, up to max_retries
        FailFast         Error client_disconnected, and the run ends with `ClientDisconnected`
    a response for the request, from the thread's client ──► returned (exactly once)
ClientHub.deliver(thread, response)   unknown, foreign, repeated or late request id ──► refused, logged
                                      (a thread's first refusal, then how many more: every 10 s, and at detach)
ClientHub.claim(thread, request id) … save the response … ClientHub.settle(claim, response)
```

A channel is anything that can send a request to the client: the WebSocket server's connection,
`toolwire.testing.FakeClient`, or your own. The client's answers come back through
`ClientHub.deliver`, from whichever connection of the thread's client receives them; a server
that must save an answer before it acknowledges it (`ClientHub.claim`, then `settle`) keeps
the call from giving up, or the request from being sent again, while it saves.
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias, runtime_checkable

import anyio

from ..errors import ClientDisconnected, UsageError
from ..policy import ConsentAnswer, ConsentHandler, ConsentRequest

if TYPE_CHECKING:  # the definitions load pydantic models; the loop imports this module eagerly
    from ..protocol import ToolUseResult
    from .definitions import ClientToolRequest, ClientToolResponse

    ClientAnswer: TypeAlias = ClientToolResponse | ToolUseResult
    """A client's answer: a wire client's ToolUseResult, or an in-process channel's response."""

__all__ = [
    "DEFAULT_FALLBACK_TEMPLATE",
    "Claim",
    "ClientChannel",
    "ClientHub",
    "ClientToolsConfig",
    "ConsentChannel",
    "DisconnectionStrategy",
    "DurableChannel",
    "FailFast",
    "FallbackMessage",
    "RetryWithBackoff",
    "new_request_id",
]

_log = logging.getLogger("toolwire.client_tools")

DEFAULT_FALLBACK_TEMPLATE: Final = "Client disconnected. Tool '{0}' unavailable."
REFUSAL_SUMMARY_SECONDS: Final = 10.0
"""After a thread's first refused response, the hub logs how many more it refused at most this often."""
_MAX_TALLIES: Final = 1_024
"""Threads whose refusals the hub counts at once (the oldest count is logged and dropped beyond)."""


@runtime_checkable
class ClientChannel(Protocol):
    """Sends requests to the client that executes a thread's client tools."""

    async def send(self, request: ClientToolRequest) -> None:
        """Deliver `request` to the client.

        Raises:
            ClientDisconnected: The client cannot be reached (any `OSError` counts the same).
        """
        ...


@runtime_checkable
class ConsentChannel(Protocol):
    """A channel whose client also answers consent prompts (the person in front of it decides)."""

    async def consent(self, request: ConsentRequest) -> bool | ConsentAnswer:
        """Ask the client's user whether the call may run."""
        ...


@runtime_checkable
class DurableChannel(Protocol):
    """A channel that keeps each request durably and marks its call DISPATCHED in the same write.

    The WebSocket server's outbox does (it replays a request until it is acknowledged): the
    client toolset then does not write DISPATCHED again, in a transaction of its own.
    """

    @property
    def records_dispatch(self) -> bool:
        """True: a request sent here has its call marked DISPATCHED already."""
        ...


@dataclass(frozen=True, slots=True)
class _Templated:
    template: str = DEFAULT_FALLBACK_TEMPLATE
    """`{0}` is replaced by the tool's name."""

    def message(self, tool_name: str) -> str:
        """The result's message for a call of `tool_name`."""
        return self.template.replace("{0}", tool_name)


@dataclass(frozen=True, slots=True)
class FallbackMessage(_Templated):
    """The call gets an Error result (`client_disconnected`) that the model can react to."""


@dataclass(frozen=True, slots=True)
class RetryWithBackoff:
    """Wait for the client to come back and re-send the same request; then fall back.

    The waits grow from `initial_delay` by `factor` up to `max_delay`; the call's deadline
    (`invoke_timeout`) still applies and ends the wait with a Timeout.
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    factor: float = 2.0
    fallback: FallbackMessage = field(default_factory=FallbackMessage)
    """The result once the retries are used up."""

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.initial_delay < 0 or self.max_delay < self.initial_delay or self.factor < 1:
            raise UsageError("RetryWithBackoff needs max_retries >= 0, 0 <= initial_delay <= max_delay, factor >= 1")

    def delay(self, attempt: int) -> float:
        """Seconds to wait for the client before retry number `attempt` (from 1)."""
        return min(self.max_delay, self.initial_delay * self.factor ** (attempt - 1))


@dataclass(frozen=True, slots=True)
class FailFast(_Templated):
    """The run ends with `ClientDisconnected`; the call still gets its Error result first."""


DisconnectionStrategy = FallbackMessage | RetryWithBackoff | FailFast
"""What a call to a client tool does when the client is not there (seed 004)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientToolsConfig:
    """How an `Agent` treats client tools (seed 004's `WithClientTools` options)."""

    collapse_client_tools: bool = True
    """Offer groups with `start_collapsed` as one container tool until they are expanded."""
    client_tools_instructions: str = ""
    """Joins the system prompt whenever the thread has client tool groups."""
    invoke_timeout: float = 30.0
    """Seconds a client may take to answer a call before it ends as a Timeout."""
    reconnect_grace: float = 10.0
    """Seconds a call waits for its client to come back after the connection dropped, before the
    disconnection strategy applies: a page reload or a network blip loses no result. 0 applies
    the strategy at once. The call's deadline (`invoke_timeout`) still applies."""
    disconnection: DisconnectionStrategy = field(default_factory=FallbackMessage)
    validate_schema_on_registration: bool = True
    """Check every parameters schema (limits, safe patterns, valid JSON Schema) when it is registered."""

    def __post_init__(self) -> None:
        if not self.invoke_timeout > 0:
            raise UsageError("ClientToolsConfig.invoke_timeout must be a positive number of seconds")
        if not self.reconnect_grace >= 0:
            raise UsageError("ClientToolsConfig.reconnect_grace must be 0 or a positive number of seconds")


class _Pending:
    """A request in flight: where it was sent and, once it came, its response.

    It stays in the hub after its caller gave up (`waiting` False) until the caller's call is
    settled (`ClientHub.forget`), so that an answer arriving meanwhile is refused at once rather
    than taken for the answer of a call nobody waits for.
    """

    __slots__ = ("channel", "changed", "claimed", "request", "response", "sent", "thread_id", "waiting")

    def __init__(self, thread_id: str, request: ClientToolRequest | None) -> None:
        self.thread_id = thread_id
        self.request = request
        """None for a claim made before any call asked for the request (see `ClientHub.claim`)."""
        self.channel: ClientChannel | None = None
        self.response: ClientAnswer | None = None
        self.changed = anyio.Event()
        self.claimed = False
        """A response arrived and is being saved (`ClientHub.claim`); nothing is sent meanwhile."""
        self.waiting = request is not None
        """A call awaits the response."""
        self.sent = False
        """The request reached a client (which may have left since)."""


class Claim:
    """A response being saved before it is taken (see `ClientHub.claim`)."""

    __slots__ = ("pending", "request_id")

    def __init__(self, request_id: str, pending: _Pending) -> None:
        self.request_id = request_id
        self.pending = pending
        """The hub's record of the request (its own business)."""

    @property
    def request(self) -> ClientToolRequest | None:
        """The request in flight; None when no call has asked for it in this process (yet)."""
        return self.pending.request


class _RefusalLog:
    """The hub's log of refused responses: a thread's first at once, then how many followed.

    A client that sends refused responses again and again (a replay storm, a buggy or hostile
    client) would otherwise write one line each: thousands a second. The count is logged with
    the next refusal after `REFUSAL_SUMMARY_SECONDS`, and when the thread's client detaches.
    """

    __slots__ = ("_tallies",)

    def __init__(self) -> None:
        self._tallies: dict[str, list[float]] = {}
        """Thread → [refusals not logged yet, when the last line was written]."""

    def refused(self, thread_id: str, reason: str) -> None:
        """Count one refusal; log it if it is the thread's first (`reason` says what was refused)."""
        tally = self._tallies.get(thread_id)
        now = time.monotonic()
        if tally is None:
            if len(self._tallies) >= _MAX_TALLIES:
                self.flush(next(iter(self._tallies)))
            self._tallies[thread_id] = [0, now]
            _log.warning("refused a client response (thread %s): %s; more refusals are counted", thread_id, reason)
            return
        tally[0] += 1
        if now - tally[1] >= REFUSAL_SUMMARY_SECONDS:
            _log.warning(
                "refused %d more client responses (thread %s) in %.0f s; the latest: %s",
                tally[0],
                thread_id,
                now - tally[1],
                reason,
            )
            tally[:] = [0, now]

    def flush(self, thread_id: str) -> None:
        """Log what is still counted for the thread and forget it (its client left)."""
        tally = self._tallies.pop(thread_id, None)
        if tally is not None and tally[0]:
            seconds = time.monotonic() - tally[1]
            _log.warning("refused %d more client responses (thread %s) in %.0f s", tally[0], thread_id, seconds)


class ClientHub:
    """Which client serves each thread, and the requests in flight to it.

    `attach` when a client (re)connects for a thread, `detach` when it leaves, `deliver` each
    response it sends (or `claim` and `settle` it, to save it first). `request` is what a client
    tool call awaits; `forget` a request once its call is settled.
    """

    def __init__(self) -> None:
        self._channels: dict[str, ClientChannel] = {}
        self._attached: dict[str, anyio.Event] = {}
        self._pending: dict[str, _Pending] = {}
        self._consenting: set[str] = set()
        self._durable: set[str] = set()
        self._left: dict[str, float] = {}
        """Threads whose client left, and when (`time.monotonic()`), until one attaches again."""
        self._refusals = _RefusalLog()

    def channel(self, thread_id: str) -> ClientChannel | None:
        """The client attached to the thread now, if any."""
        return self._channels.get(thread_id)

    def records_dispatch(self, thread_id: str) -> bool:
        """True when the thread's client is a `DurableChannel` that marks its calls DISPATCHED itself."""
        return thread_id in self._durable

    @property
    def consenting(self) -> set[str]:
        """Threads whose attached client answers consent prompts (a `ConsentChannel`)."""
        return self._consenting

    def attach(self, thread_id: str, channel: ClientChannel) -> None:
        """Make `channel` the thread's client (a reconnect replaces the old one)."""
        self._channels[thread_id] = channel
        if isinstance(channel, ConsentChannel):
            self._consenting.add(thread_id)
        else:
            self._consenting.discard(thread_id)
        if isinstance(channel, DurableChannel) and channel.records_dispatch:
            self._durable.add(thread_id)
        else:
            self._durable.discard(thread_id)
        self._left.pop(thread_id, None)
        if (event := self._attached.pop(thread_id, None)) is not None:
            event.set()

    def detach(self, thread_id: str, channel: ClientChannel) -> None:
        """The client behind `channel` left: its unanswered requests learn it now."""
        if self._channels.get(thread_id) is channel:
            del self._channels[thread_id]
            self._consenting.discard(thread_id)
            self._durable.discard(thread_id)
            self._left[thread_id] = time.monotonic()
        for pending in self._pending.values():
            if pending.thread_id == thread_id and pending.channel is channel and pending.response is None:
                pending.channel = None
                pending.changed.set()  # (a call whose answer is being saved waits for it all the same)
        self._refusals.flush(thread_id)

    def pending(self, thread_id: str) -> list[ClientToolRequest]:
        """The thread's requests a call still waits for (for re-delivery after a resume)."""
        return [
            pending.request
            for pending in self._pending.values()
            if pending.thread_id == thread_id and pending.waiting and pending.request is not None
        ]

    def deliver(self, thread_id: str, response: ClientToolResponse) -> bool:
        """Hand a client's response to the call waiting for it; False (and logged) if refused.

        A response is refused when its request id was never issued, was issued to another thread,
        or was already answered (or given up: timed out, canceled).
        """
        pending = self._open(thread_id, response.request_id)
        if pending is None:
            return False
        pending.response = response
        pending.changed.set()
        return True

    def claim(self, thread_id: str, request_id: str) -> Claim | None:
        """Reserve the answer to `request_id` while the caller saves it; None (logged) if refused.

        A server claims each result it receives, saves it (with what acknowledges it), then
        `settle`s the claim; meanwhile the request is not sent again and the call waiting for it
        does not give up. Refused as `deliver` refuses. A request no call of this process waits
        for yet (after a restart) is claimed too: the caller checks its ledger, and a call that
        asks for the request meanwhile waits for the claim instead of sending it.
        """
        if request_id not in self._pending:
            pending = self._pending[request_id] = _Pending(thread_id, None)
        elif (pending := self._open(thread_id, request_id)) is None:
            return None
        pending.claimed = True
        return Claim(request_id, pending)

    def settle(self, claim: Claim, response: ClientAnswer | None) -> None:
        """End a claim: `response` (saved) goes to the call waiting for it; None gives it up."""
        pending = claim.pending
        pending.claimed = False
        if response is not None:
            pending.response = response
        pending.changed.set()
        if not pending.waiting and self._pending.get(claim.request_id) is pending:
            del self._pending[claim.request_id]

    def ended(self, thread_id: str) -> None:
        """Forget that the thread's client left: nothing waits for it to return.

        Its run ended, or the server let go of a conversation with no run.
        """
        self._left.pop(thread_id, None)

    def forget(self, request_id: str) -> None:
        """The call of `request_id` is settled: an answer from now on is refused (and kept nowhere)."""
        pending = self._pending.get(request_id)
        if pending is not None and not pending.waiting and not pending.claimed:
            del self._pending[request_id]

    def _open(self, thread_id: str, request_id: str) -> _Pending | None:
        """The request a call still waits for, with no response yet; None (logged) otherwise."""
        pending = self._pending.get(request_id)
        if pending is None:
            self._refusals.refused(thread_id, f"unknown request id {request_id!r:.80}")
            return None
        if pending.thread_id != thread_id:
            self._refusals.refused(thread_id, "a response for a request of another thread")
            return None
        if pending.response is not None or pending.claimed or not pending.waiting:
            self._refusals.refused(thread_id, f"a second or late response for request {request_id!r:.80}")
            return None
        return pending

    async def request(
        self,
        thread_id: str,
        request: ClientToolRequest,
        *,
        retry: RetryWithBackoff | None = None,
        on_sent: Callable[[], Awaitable[object]] | None = None,
        answered: Callable[[], Awaitable[ClientAnswer | None]] | None = None,
        grace: float = 0.0,
    ) -> ClientAnswer | None:
        """Send `request` to the thread's client and return its response; None if the client is gone.

        When the client leaves (or left less than `grace` seconds ago), the call waits up to
        `grace` seconds for it to come back and asks again (a channel that knows its client has
        the request need not send it twice); then, with `retry`, waits for a client to attach
        again and re-sends the same request id, up to `retry.max_retries` times. Cancel the caller
        (a deadline) to give up; a response arriving later is refused. A response being saved
        when the caller is cancelled is still returned (it was decided first). `answered`, if
        given, is asked once before the first send (the request is registered by then, so no
        response can slip past): a response it returns (a saved one, after a restart) is returned
        without sending anything.
        """
        pending = self._pending.get(request.request_id)
        if pending is None or pending.thread_id != thread_id or pending.waiting:
            pending = self._pending[request.request_id] = _Pending(thread_id, request)
        else:  # a claim made before this call asked for the request: wait for it
            pending.request, pending.waiting = request, True
        try:
            if answered is not None and pending.response is None and not pending.claimed:
                pending.response = await answered()
            attempt = 0
            back_by = None if grace <= 0 else time.monotonic() + grace
            while True:
                if (response := await self._send_and_wait(pending, on_sent)) is not None:
                    return response
                if back_by is not None and self._went_away(pending) and time.monotonic() < back_by:
                    await self._wait_attached(thread_id, back_by - time.monotonic())
                    if pending.response is not None:
                        return pending.response
                    if thread_id in self._channels:
                        continue  # back within the grace period: ask again
                if retry is None or attempt >= retry.max_retries:
                    return None
                attempt += 1
                await self._wait_attached(thread_id, retry.delay(attempt))
                if pending.response is not None:  # delivered meanwhile (a result replayed on reconnect)
                    return pending.response
        except BaseException:
            # An answer taken (or being saved) before this interruption reached the call was
            # decided first: the call returns it, whatever interrupted it (a deadline, a stop).
            if pending.claimed:
                with anyio.CancelScope(shield=True):
                    while pending.claimed:
                        await pending.changed.wait()
                        pending.changed = anyio.Event()
            if pending.response is not None:
                return pending.response
            raise
        finally:
            pending.waiting = False
            if pending.response is not None and self._pending.get(request.request_id) is pending:
                del self._pending[request.request_id]  # answered: a second answer finds it unknown

    async def _send_and_wait(
        self, pending: _Pending, on_sent: Callable[[], Awaitable[object]] | None
    ) -> ClientAnswer | None:
        while pending.claimed:  # an answer is being saved: send nothing, wait for it
            await pending.changed.wait()
            pending.changed = anyio.Event()
        if pending.response is not None:
            return pending.response
        channel = self._channels.get(pending.thread_id)
        if channel is None:
            return None
        assert pending.request is not None
        pending.channel = channel
        pending.sent = True
        if pending.changed.is_set():  # a retry: the last attempt's event fired
            pending.changed = anyio.Event()
        try:
            await channel.send(pending.request)
        except (ClientDisconnected, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            _log.info("the client of thread %s is unreachable (%s)", pending.thread_id, type(exc).__name__)
            self.detach(pending.thread_id, channel)
        else:
            if on_sent is not None:
                await on_sent()
        while pending.response is None and (pending.channel is channel or pending.claimed):
            await pending.changed.wait()  # set by `deliver`, `settle` or `detach`, the only ways out
            pending.changed = anyio.Event()
        return pending.response

    def _went_away(self, pending: _Pending) -> bool:
        """True when the call's client left: after its request reached it, or a moment before."""
        return pending.sent or pending.thread_id in self._left

    async def _wait_attached(self, thread_id: str, seconds: float) -> None:
        """Wait up to `seconds` for a client to attach to the thread (at once if one is attached)."""
        if thread_id in self._channels:
            return
        event = self._attached.setdefault(thread_id, anyio.Event())
        try:
            with anyio.move_on_after(seconds if math.isfinite(seconds) else math.inf):
                await event.wait()
        finally:
            # Nobody waits any more: a thread whose client never comes back keeps no event here.
            if self._attached.get(thread_id) is event and not event.statistics().tasks_waiting:
                del self._attached[thread_id]

    def client_consent(self, thread_id: str) -> ConsentHandler | None:
        """Asks the person at the thread's client; None when its client cannot answer consent prompts.

        The application's own consent handler decides first (`PermissionPolicy(consent=...)`); the
        client is asked when the application has none, or leaves it to them (`request.ask_client()`).
        """
        if thread_id not in self._consenting:
            return None

        async def ask(request: ConsentRequest) -> bool | ConsentAnswer:
            channel = self._channels.get(thread_id)
            if isinstance(channel, ConsentChannel):
                return await channel.consent(request)
            return ConsentAnswer(False, "the client left before anyone answered")

        return ask


def new_request_id() -> str:
    """A request id with 128 random bits (ids are never guessable, RELIABILITY.md)."""
    return "req_" + secrets.token_hex(16)
