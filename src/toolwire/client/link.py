"""`Link`: a conversation's connection to the server, across sockets (dial, handshake, read, reconnect).

The protocol's sans-I/O `Connection` does the numbering, the duplicates, the outbox and the
replay; a link only shuttles bytes. What arrives goes to `receive`, one envelope at a time, and is
acknowledged after `receive` returned for the whole frame: late (`AckTimer`: within `ACK_DELAY`,
or at the next turn once `ACK_SOON` stanzas wait), and always before `aclose()` closes the
socket. When the socket drops, the link dials
again with backoff and resumes the conversation: `Connection.resume(state)` and
`hello(conversation_id)`, after which the server replays what this end missed and this end
replays what the server has not seen. `failed` is called once, when the link gives up.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Awaitable, Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio

from .. import __version__
from ..protocol import DEFAULT_LIMITS, RUN_QUEUE, Connection, Envelope, ErrorCode, ErrorMessage, Limits, MessageBody
from .run_events import ConnectionClosed

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

__all__ = ["ACK_DELAY", "ACK_SOON", "HANDSHAKE_TIMEOUT", "AckTimer", "Link", "Reconnect"]

_log = logging.getLogger("toolwire.client")

HANDSHAKE_TIMEOUT: Final = 10.0
"""Seconds to wait for the WebSocket upgrade, and then for the server's Configuration."""
FEATURES: Final = ("clientTools", "consent", "runStatus", "resume", RUN_QUEUE)
ACK_DELAY: Final = 0.2
"""Seconds before this end acknowledges what it received (sooner once `ACK_SOON` stanzas wait)."""
ACK_SOON: Final = 16
"""Stanzas waiting for an Acknowledgement that make this end write one at once (half `ack_every`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconnect:
    """How a client reconnects after its socket drops: at once, then after growing waits (with jitter)."""

    attempts: int = 8
    """Attempts before giving up with `ConnectionClosed` (about 10 to 20 s with the defaults)."""
    initial_delay: float = 0.1
    max_delay: float = 5.0
    factor: float = 2.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number `attempt` (from 1; the first does not wait)."""
        if attempt <= 1:
            return 0.0
        return min(self.max_delay, self.initial_delay * self.factor ** (attempt - 2)) * random.uniform(0.5, 1.0)


class AckTimer:
    """Acknowledges late: `delay` seconds after the first stanza that waits for an Acknowledgement.

    An Acknowledgement is one more frame each way (a `send` and a `recv`, the dearest part of a
    client tool's round trip); written late, one covers every stanza of a busy stretch. Once
    `ACK_SOON` stanzas wait, `soon()` writes it at the loop's next turn, after the work the
    stanzas started (before `Connection.receive()` would write one by itself, at `ack_every`).
    Nothing is lost by waiting: the peer keeps what is not acknowledged, and a resume replays
    only what this end has not seen (its `lastSequenceSeen`).

    Call `later()` (or `soon()`) after acting on what a frame delivered; run `run()` in a task for
    as long as the connection lives. `acknowledge` writes the Acknowledgement.
    """

    def __init__(self, acknowledge: Callable[[], Awaitable[None]], delay: float = ACK_DELAY) -> None:
        self.delay = delay
        self._acknowledge = acknowledge
        self._due = False
        self._hurry = False
        self._armed = anyio.Event()
        self._waiting: anyio.CancelScope | None = None

    def later(self) -> None:
        """Something waits for its Acknowledgement: write one within `delay`."""
        if not self._due:
            self._due = True
            self._armed.set()

    def soon(self) -> None:
        """Many stanzas wait: write the Acknowledgement at the loop's next turn."""
        self._hurry = True
        self.later()
        if self._waiting is not None:
            self._waiting.cancel()

    async def run(self) -> None:
        """Write the Acknowledgements as they come due (until cancelled)."""
        while True:
            await self._armed.wait()
            self._armed = anyio.Event()
            if not self._hurry:
                with anyio.move_on_after(self.delay) as self._waiting:
                    await anyio.sleep_forever()
                self._waiting = None
            self._due = self._hurry = False
            await self._acknowledge()


class _Redact(logging.Filter):
    """Hide credentials in the `websockets` debug log (it writes request headers and paths)."""

    _SECRET = re.compile(r"(?i)(authorization:\s*\S+\s+|[?&]token=)[^\s&]+")

    def filter(self, record: logging.LogRecord) -> bool:
        # Format first: a header's name and value come as separate arguments.
        record.msg, record.args = self._SECRET.sub(r"\1[redacted]", record.getMessage()), None
        return True


_socket_log = logging.getLogger("toolwire.client.websockets")
_socket_log.addFilter(_Redact())


class _Transient(Exception):
    """The server could not be reached this time; another attempt may succeed."""


class Link:
    """One conversation's connection to a toolwire server; `Client` drives it.

    Args:
        url: The WebSocket endpoint.
        token: Sent as `Authorization: Bearer <token>`; never logged.
        receive: Called with each new message, in order; must not block.
        failed: Called once when the link gives up (or is closed).
        reconnect: How to reconnect; None to give up when the socket drops.
        limits: What a frame from the server may contain.
        client_version: Sent in the handshake and as the User-Agent.
    """

    def __init__(
        self,
        url: str,
        *,
        token: str,
        receive: Callable[[Envelope], None],
        failed: Callable[[ConnectionClosed], None],
        reconnect: Reconnect | None = None,
        limits: Limits = DEFAULT_LIMITS,
        client_version: str = f"toolwire-python/{__version__}",
    ) -> None:
        self.url = url
        self.reconnect = reconnect
        self.limits = limits
        self.client_version = client_version
        self.failure: ConnectionClosed | None = None
        """Why the link gave up, once it has."""
        self.on_stanza: Callable[[int], None] | None = None
        """Told the stanza id of each new numbered message from the server, in order, before it is acted
        on (replayed duplicates are dropped before): a test can check the numbering has no gap or repeat."""
        self._token = token
        self._receive = receive
        self._failed = failed
        self._connection = Connection("client", limits=limits)
        self._socket: ClientConnection | None = None
        self._send_lock = anyio.Lock()
        self._closing = False
        self._acks = AckTimer(self._acknowledge)

    @property
    def conversation_id(self) -> str:
        """The conversation bound by the last handshake ("" before the first)."""
        return self._connection.conversation_id or ""

    @property
    def connected(self) -> bool:
        """True while a socket is open and its handshake done."""
        return self._socket is not None

    async def open(self, conversation: str | None) -> ClientConnection:
        """Dial and open (or resume) `conversation`; then hand the socket to `run()`.

        Raises:
            ConnectionClosed: The server cannot be reached or refused.
        """
        try:
            socket = await self._dial(conversation)
            await self._handshake(socket, conversation)
        except _Transient as exc:
            raise ConnectionClosed(str(exc)) from None
        return socket

    async def run(self, socket: ClientConnection) -> None:
        """Read until the socket drops, then reconnect and go on; returns once the link gave up."""
        async with anyio.create_task_group() as group:
            group.start_soon(self._acks.run)
            try:
                await self._run(socket)
            finally:
                group.cancel_scope.cancel()

    async def _run(self, socket: ClientConnection) -> None:
        from websockets.exceptions import ConnectionClosed as SocketClosed

        while True:
            try:
                await self._read(socket)
            except ConnectionClosed as exc:
                await _abort(socket)
                self._fail(exc)
                return
            except (SocketClosed, OSError) as exc:
                _log.info("the connection dropped (%s)", type(exc).__name__)
            except Exception as exc:  # a bug: end the link with an error, not the caller's task group
                _log.exception("the connection failed")
                await _abort(socket)
                self._fail(ConnectionClosed(f"the client failed: {exc!r}"))
                return
            if self._socket is socket:
                self._socket = None
            if self._closing:
                return
            try:
                socket = await self._resume()
            except ConnectionClosed as exc:
                self._fail(exc)
                return

    async def post(self, message: MessageBody, *, numbered: Callable[[int], None] | None = None) -> None:
        """Number and send a message; it stays in the outbox (replayed on resume) until acknowledged.

        Args:
            message: What to send.
            numbered: Called with the message's stanza id before it is written (an answer to it
                may name it as `originatingId`).

        Raises:
            ConnectionClosed: The link gave up before.
        """
        from websockets.exceptions import ConnectionClosed as SocketClosed

        if self.failure is not None:
            raise self.failure
        async with self._send_lock:
            frame = self._connection.send(message)  # b"" while reconnecting: it waits for the replay
            if numbered is not None:
                state = self._connection.state()
                numbered(0 if state is None else state.next_stanza - 1)
            socket = self._socket
            if frame and socket is not None:
                with suppress(SocketClosed, OSError):  # the reader reconnects; the outbox replays it
                    await socket.send(frame)

    async def aclose(self) -> None:
        """Close the socket and stop reconnecting."""
        from websockets.exceptions import ConnectionClosed as SocketClosed

        self._closing = True
        socket, self._socket = self._socket, None
        if socket is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                # What was acted on is acknowledged, so that a later resume does not replay it.
                if (ack := self._connection.ack()) is not None:
                    with suppress(SocketClosed, OSError):
                        await self._write(socket, (ack,))
                await socket.close()
        self._fail(ConnectionClosed("the client was closed"))

    # -- internals -------------------------------------------------------------------------------

    async def _dial(self, conversation: str | None) -> ClientConnection:
        """Open a socket to `url`, naming `conversation` in it (`?conversation=`: a load balancer's hint)."""
        from websockets.asyncio.client import connect as open_websocket
        from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

        where = self.url.split("?", 1)[0]  # a browser-style ?token= never reaches a log
        try:
            return await open_websocket(
                hinted_url(self.url, conversation),
                additional_headers={"Authorization": f"Bearer {self._token}"},
                max_size=self.limits.max_frame_bytes,
                compression=None,
                open_timeout=HANDSHAKE_TIMEOUT,
                user_agent_header=self.client_version,
                logger=_socket_log,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            if status in (401, 403):
                message = f"{where} refused the connection (HTTP {status}): check the token (and the Origin)"
                raise ConnectionClosed(message, code=ErrorCode.UNAUTHENTICATED) from None
            raise _Transient(f"{where} answered HTTP {status}") from None
        except InvalidURI as exc:
            raise ConnectionClosed(f"not a WebSocket URL: {exc}") from None
        except (OSError, TimeoutError, InvalidHandshake) as exc:
            raise _Transient(f"cannot reach {where}: {exc or type(exc).__name__}") from None

    async def _handshake(self, socket: ClientConnection, conversation: str | None) -> None:
        """Open the conversation on `socket`: hello, the server's Configuration, both replays."""
        from websockets.exceptions import ConnectionClosed as SocketClosed

        try:
            # Under the lock: nothing is written between the replay and the socket going live.
            async with self._send_lock:
                state = self._connection.state()
                self._connection = Connection("client", state=state, limits=self.limits)
                hello = self._connection.hello(conversation, client_version=self.client_version, features=FEATURES)
                await socket.send(hello)
                with anyio.fail_after(HANDSHAKE_TIMEOUT):
                    data = await socket.recv()
                received = self._connection.receive(_as_bytes(data))
                for envelope in received.messages:
                    if isinstance(error := envelope.message, ErrorMessage):
                        raise ConnectionClosed(f"the server refused: {error.message}", code=error.code)
                if not self._connection.is_open:
                    problem = received.errors[0] if received.errors else None
                    message = problem.message if problem is not None else "the handshake did not complete"
                    raise ConnectionClosed(message, code=problem.code if problem is not None else None)
                for frame in received.replies:  # what the server has not seen of our outbox
                    await socket.send(frame)
                self._socket = socket
        except ConnectionClosed:
            await _abort(socket)
            raise
        except (SocketClosed, OSError, TimeoutError) as exc:
            await _abort(socket)
            raise _Transient(f"the handshake failed: {exc or type(exc).__name__}") from None
        _log.info("connected to conversation %s", self.conversation_id)

    async def _resume(self) -> ClientConnection:
        if self.reconnect is None:
            raise ConnectionClosed("the connection dropped (reconnect is off)")
        last: Exception | None = None
        for attempt in range(1, self.reconnect.attempts + 1):
            await anyio.sleep(self.reconnect.delay(attempt))
            try:
                socket = await self._dial(self.conversation_id)
                await self._handshake(socket, self.conversation_id)
            except _Transient as exc:
                last = exc
                _log.info("reconnect attempt %d failed: %s", attempt, exc)
                continue
            return socket
        raise ConnectionClosed(f"gave up reconnecting after {self.reconnect.attempts} attempts: {last}")

    async def _read(self, socket: ClientConnection) -> None:
        connection = self._connection
        async for data in socket:
            received = connection.receive(_as_bytes(data))
            # Act before writing anything: a frame written meanwhile may acknowledge these
            # messages (`ackInMeta`), which must not happen before they are acted on.
            for envelope in received.messages:
                if self.on_stanza is not None and envelope.stanza_id:
                    self.on_stanza(envelope.stanza_id)
                try:
                    self._receive(envelope)
                except Exception:  # a message the client cannot act on must not end the conversation
                    _log.exception("acting on a %s failed", type(envelope.message).__name__)
            await self._write(socket, received.replies)
            if received.close:
                error = next((e.message for e in received.messages if isinstance(e.message, ErrorMessage)), None)
                text = error.message if error is not None else "a protocol error"
                code = error.code if error is not None else None
                raise ConnectionClosed(f"the server closed the conversation: {text}", code=code)
            # Acted on (a request is in the ledger, a prompt is being asked): acknowledge it, late.
            if connection.unacknowledged >= ACK_SOON:
                self._acks.soon()
            elif connection.unacknowledged:
                self._acks.later()

    async def _acknowledge(self) -> None:
        """Write an Acknowledgement of what was received (and acted on) so far, if the socket is up."""
        from websockets.exceptions import ConnectionClosed as SocketClosed

        socket = self._socket
        if socket is not None and (ack := self._connection.ack()) is not None:
            with suppress(SocketClosed, OSError):  # the reader sees the socket drop and reconnects
                await self._write(socket, (ack,))

    async def _write(self, socket: ClientConnection, frames: Iterable[bytes]) -> None:
        async with self._send_lock:
            for frame in frames:
                await socket.send(frame)

    def _fail(self, failure: ConnectionClosed) -> None:
        self._socket = None
        if self.failure is None:
            self.failure = failure
            if not self._closing:
                _log.warning("%s", failure)
            self._failed(failure)


def _as_bytes(data: str | bytes) -> bytes:
    # A text frame is passed on as bytes, so the protocol answers it like any other bad frame.
    return data.encode() if isinstance(data, str) else data


async def _abort(socket: ClientConnection) -> None:
    with anyio.CancelScope(shield=True):
        socket.transport.abort()
        with anyio.move_on_after(1):
            await socket.wait_closed()


def hinted_url(url: str, conversation: str | None) -> str:
    """`url` naming `conversation` in its `conversation` query parameter (unchanged without one).

    A hint a load balancer may hash on, so that a reconnect lands on the replica that holds the
    conversation (docs/deployment.md); the server reads the conversation from the handshake.
    """
    if not conversation:
        return url
    parts = urlsplit(url)
    query = [(key, value) for key, value in parse_qsl(parts.query, keep_blank_values=True) if key != "conversation"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("conversation", conversation)])))
