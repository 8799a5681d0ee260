"""The connection to one MCP server: held open by a task of its own, reopened when it was lost.

The SDK's `mcp.Client` is an async context manager whose tasks one task must enter and exit,
while a toolset's calls run in the tasks of their runs. So `ServerConnection` keeps each client
in a task it owns, from `open()` (the toolset's setup) to `aclose()` (its teardown):

- `client()` hands out the open client; when the last one was lost (the server exited, the
  HTTP endpoint went away) it opens a new one first, which restarts a stdio server. Callers
  waiting together share one attempt; a failed attempt is tried again by the next caller.
  A client is lost when the server closes the transport (a stdio server that exited: its
  stdout ends, seen on the transport's read stream) or when its transport fails.
- `lose(client, why)` marks a client lost after a call saw its connection die, so the next
  `client()` reconnects. Nothing is ever sent by the connection itself: what was in flight on a
  lost client is not sent again.
- While a client is open, it watches the server's tool list and calls `on_change` (bursts
  coalesce into one call): on the 2025-11-25 generation the server sends
  `notifications/tools/list_changed` by itself; on 2026-07-28 a `subscriptions/listen` stream
  asks for them (re-opened, with a refetch, if the server drops it).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, cast

import anyio
import anyio.abc

from ..._extras import import_extra

if TYPE_CHECKING:
    import mcp.types
    from mcp.client import Transport
    from mcp.client._transport import ReadStream, TransportStreams
    from mcp.client.session import IncomingMessage, MessageHandlerFnT
    from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
    from mcp.shared.message import SessionMessage

    import mcp
else:
    mcp = import_extra("mcp", "mcp")
    _subscriptions = import_extra("mcp.client.subscriptions", "mcp")
    ListenNotSupportedError = _subscriptions.ListenNotSupportedError
    SubscriptionLost = _subscriptions.SubscriptionLost

__all__ = ["ConnectionLost", "ServerConnection", "describe"]

_log = logging.getLogger("toolwire.interop.mcp")


class ConnectionLost(Exception):
    """The server cannot be reached now; the message says why (raised by `ServerConnection.client`)."""


@dataclass(eq=False)
class _Attempt:
    """One connection: its client while open, and why it ended."""

    ready: anyio.Event = field(default_factory=anyio.Event)
    """Set once the client is open and its tools are listed, or the attempt failed."""
    release: anyio.Event = field(default_factory=anyio.Event)
    """Set to close the client (lost, or the toolset is torn down)."""
    changed: anyio.Event = field(default_factory=anyio.Event)
    """Set when the server said its tool list changed; replaced by the watcher when it re-lists."""
    closed: anyio.Event = field(default_factory=anyio.Event)
    """Set when the server closed the transport (a stdio server exited)."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    client: mcp.Client | None = None
    failure: Exception | None = None
    """Why the client could not be opened."""
    ended: str | None = None
    """Why an opened client is no longer usable."""


class ServerConnection:
    """Connections to one MCP server, one at a time (see the module docstring).

    Args:
        transport: A new transport to the server (`servers.Stdio.transport`, ...), for each connection.
        connect: A new, unopened client over the given transport, with the message handler to install.
        on_open: Called with each client once it is open, before anyone gets it (list the tools);
            an exception fails the attempt.
        on_change: Called when the server's tool list changed (re-list the tools); an exception
            is logged.
    """

    def __init__(
        self,
        transport: Callable[[], Transport],
        connect: Callable[[Transport, MessageHandlerFnT], mcp.Client],
        *,
        on_open: Callable[[mcp.Client], Awaitable[None]],
        on_change: Callable[[mcp.Client], Awaitable[None]],
    ) -> None:
        self._transport = transport
        self._connect = connect
        self._on_open = on_open
        self._on_change = on_change
        self._tasks: anyio.abc.TaskGroup | None = None
        self._attempt: _Attempt | None = None
        self._open: set[_Attempt] = set()

    @property
    def current(self) -> mcp.Client | None:
        """The open client, if there is one and it is not known to be lost."""
        attempt = self._attempt
        return attempt.client if attempt is not None and attempt.ended is None else None

    async def open(self) -> None:
        """Start holding connections, and open the first one; call `aclose()` when done.

        Raises:
            Exception: What opening the first connection raised (its listing too).
        """
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        try:
            await self.client()
        except ConnectionLost as lost:
            await self.aclose()
            raise lost.__cause__ or lost from None
        except BaseException:
            await self.aclose()
            raise

    async def client(self) -> mcp.Client:
        """The open client; opens a new one (restarting a stdio server) when the last was lost.

        Raises:
            ConnectionLost: The connection is closed, or a new one could not be opened.
        """
        attempt = self._attempt
        if attempt is None or attempt.ended is not None:
            if self._tasks is None:
                raise ConnectionLost("the toolset is not set up")
            attempt = self._attempt = _Attempt()
            self._open.add(attempt)
            self._tasks.start_soon(self._hold, attempt)
        await attempt.ready.wait()
        if attempt.client is None:
            failure = attempt.failure
            detail = describe(failure) if failure is not None else attempt.ended
            raise ConnectionLost(f"the server could not be reached ({detail})") from failure
        return attempt.client

    def lose(self, client: mcp.Client, why: str) -> None:
        """Mark `client` lost (a call saw its connection die): the next `client()` reconnects."""
        for attempt in self._open:
            if attempt.client is client and attempt.ended is None:
                attempt.ended = why
                attempt.release.set()

    async def aclose(self) -> None:
        """Close the open connection (the SDK stops a stdio server) and stop holding any."""
        tasks, self._tasks = self._tasks, None
        for attempt in self._open:
            attempt.ended = attempt.ended or "the toolset was torn down"
            attempt.release.set()
            if not attempt.ready.is_set():
                attempt.scope.cancel()  # a server that never answers must not hold the teardown
        if tasks is not None:
            await tasks.__aexit__(None, None, None)

    async def _hold(self, attempt: _Attempt) -> None:
        try:
            with attempt.scope:
                transport = _watched(self._transport(), attempt.closed)
                client = self._connect(transport, lambda message: self._notice(attempt, message))
                async with client, anyio.create_task_group() as watchers:
                    watchers.start_soon(self._end_when_closed, attempt)
                    await watchers.start(self._listen, attempt, client)  # before listing: no change is missed
                    await self._on_open(client)
                    attempt.client = client
                    attempt.ready.set()
                    watchers.start_soon(self._refresh, attempt, client)
                    await attempt.release.wait()
                    watchers.cancel_scope.cancel()
        except Exception as exc:  # the server could not be started, or its transport broke
            if attempt.client is None:
                attempt.failure = exc
            else:
                attempt.ended = attempt.ended or f"the connection was lost ({describe(exc)})"
        finally:
            attempt.ended = attempt.ended or "the connection was closed"
            attempt.client = None
            attempt.ready.set()
            self._open.discard(attempt)

    async def _end_when_closed(self, attempt: _Attempt) -> None:
        await attempt.closed.wait()
        attempt.ended = attempt.ended or "the server closed the connection (a stdio server exited)"
        attempt.release.set()

    async def _notice(self, attempt: _Attempt, message: IncomingMessage) -> None:
        if isinstance(message, mcp.types.ToolListChangedNotification):
            attempt.changed.set()
        await anyio.lowlevel.checkpoint()

    async def _refresh(self, attempt: _Attempt, client: mcp.Client) -> None:
        while True:
            await attempt.changed.wait()
            attempt.changed = anyio.Event()  # a change announced while listing lists again
            try:
                await self._on_change(client)
            except Exception as exc:
                if attempt.ended is None:  # else the connection's end says it all
                    _log.warning("MCP server's new tool list could not be read: %s", describe(exc))

    async def _listen(self, attempt: _Attempt, client: mcp.Client, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Ask a 2026-07-28 server for its tool list's changes (a 2025-11-25 one sends them unasked).

        Started (`task_status`) once the server acknowledged the stream, or it will not stream.
        """
        started = False
        try:
            while True:
                try:
                    async with client.listen(tools_list_changed=True) as subscription:
                        if not started:
                            started = True
                            task_status.started()
                        if not (subscription.honored and subscription.honored.tools_list_changed):
                            return
                        async for _ in subscription:
                            attempt.changed.set()
                        return  # the server closed the stream
                except SubscriptionLost:
                    attempt.changed.set()  # changes may have been missed: re-list, and listen again
        except ListenNotSupportedError:
            pass
        except Exception as exc:  # a failed stream must not end the connection its calls use
            _log.info("MCP server: no stream of tool list changes: %s", describe(exc))
        finally:
            if not started:
                task_status.started()


def describe(problem: BaseException) -> str:
    """A failure in a few words: the one exception inside a task group's group, its message or its type."""
    while len(inner := _inside(problem)) == 1:
        problem = inner[0]
    return str(problem) or type(problem).__name__


def _inside(problem: BaseException) -> tuple[BaseException, ...]:
    if isinstance(problem, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", problem)
        return group.exceptions
    return ()


@asynccontextmanager
async def _watched(transport: Transport, closed: anyio.Event) -> AsyncGenerator[TransportStreams]:
    """`transport`, its read stream setting `closed` when the server closes it."""
    async with transport as (read_stream, write_stream):
        yield _ReadEnd(read_stream, closed), write_stream


class _ReadEnd:
    """A transport's read stream, unchanged but for setting `closed` at its end."""

    def __init__(self, stream: ReadStream[SessionMessage | Exception], closed: anyio.Event) -> None:
        self._stream = stream
        self._closed = closed

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last message, for the SDK's dispatcher (as the stream has it)."""
        context: contextvars.Context | None = getattr(self._stream, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        """The next message, or `anyio.EndOfStream` once the server closed the stream."""
        try:
            return await self._stream.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._closed.set()
            raise

    def __aiter__(self) -> _ReadEnd:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Close the stream."""
        await self._stream.aclose()

    async def __aenter__(self) -> _ReadEnd:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> bool | None:
        return await self._stream.__aexit__(exc_type, exc_val, exc_tb)
