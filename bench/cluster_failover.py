"""bench/cluster_bench.py's failover client (`Resumer`) and its clock of a conversation's lease (`LeaseClock`).

Imported by cluster_bench.py after it put tests/ and tests/cluster/ on `sys.path`.
"""

from __future__ import annotations

import threading
import time
from typing import Final

import anyio
from cluster_harness import Haproxy
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from toolwire.client.link import FEATURES
from toolwire.protocol import (
    Connection,
    ErrorMessage,
    RegisterTools,
    RegisterToolsResult,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
)
from ws_bench import CONNECT_OPTIONS, GROUP, TOKEN

HELD_RUN: Final = 6
"""Turns of a failover unit's run; the client holds its answer to call number HELD (from 0)."""
HELD: Final = 2
RETRY: Final = 0.02
"""Seconds between a refused connection and the next attempt (haproxy's 503, a 1013 after --lease-wait)."""


# == the failover client ==========================================================================


class Refused(Exception):
    """The handshake did not open the conversation (a 1013 while a lease is held elsewhere, an ErrorMessage)."""


class Resumer:
    """ws_bench's client frames over a protocol state that survives its socket; it acknowledges each frame."""

    def __init__(self) -> None:
        self.connection = Connection("client")
        self.socket: ClientConnection | None = None
        self.requests = 0
        self.answered: set[str] = set()
        self.held: ToolUseRequest | None = None
        self.hold_at: int | None = None
        self.watching = False
        self.first_frame: float | None = None
        """time.time() of the first run frame (ToolUseRequest or RunStatus) once `watching`."""
        self.first_kind = ""

    @property
    def conversation_id(self) -> str:
        return self.connection.conversation_id or ""

    async def dial(self, url: str, within: float = 30) -> int:
        """Open a new conversation (or resume ours) through `url`, retrying while refused; the attempts made."""
        give_up = time.monotonic() + within
        attempts = 0
        while True:
            attempts += 1
            try:
                await self._dial(url)
                return attempts
            except (OSError, TimeoutError, WebSocketException, Refused) as exc:
                if time.monotonic() > give_up:
                    raise RuntimeError(f"could not open {self.conversation_id or 'a conversation'} at {url}") from exc
                await anyio.sleep(RETRY)

    async def _dial(self, url: str) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        socket_ = await connect(url, additional_headers=headers, open_timeout=15, **CONNECT_OPTIONS)
        try:
            self.connection = Connection("client", state=self.connection.state())
            await socket_.send(self.connection.hello(features=FEATURES))
            with anyio.fail_after(20):
                data = await socket_.recv()
            assert isinstance(data, bytes)
            received = self.connection.receive(data)
            refused = [e.message for e in received.messages if isinstance(e.message, ErrorMessage)]
            if refused or not self.connection.is_open:
                raise Refused(repr(refused or received.errors))
            for reply in received.replies:
                await socket_.send(reply)
        except BaseException:
            await socket_.close()
            raise
        self.socket = socket_

    async def register(self) -> None:
        await self._send(self.connection.send(RegisterTools(groups=(GROUP,))))
        if await self.pump() != "registered":
            raise RuntimeError("no RegisterToolsResult")

    async def ask(self, prompt: str) -> None:
        await self._send(self.connection.send(UserMessageBody(id=f"u_{time.time_ns()}", content=prompt)))

    async def answer_held(self) -> None:
        assert self.held is not None
        await self._answer(self.held)

    async def _answer(self, request: ToolUseRequest) -> None:
        self.answered.add(request.id)
        result = ToolUseResult(id=request.id, success=True, result={"value": request.arguments["text"]})
        await self._send(self.connection.send(result))

    async def _send(self, frame: bytes) -> None:
        assert self.socket is not None
        await self.socket.send(frame)

    async def pump(self) -> str:
        """Read until the run holds (`hold_at`), finishes, or the registration is answered; which."""
        assert self.socket is not None
        while True:
            data = await self.socket.recv()
            assert isinstance(data, bytes)
            if outcome := await self._handle(data, time.time()):
                return outcome

    async def wait_closed(self) -> float:
        """Read (and act on) frames until the socket closes; time.time() then."""
        assert self.socket is not None
        try:
            while True:
                data = await self.socket.recv()
                assert isinstance(data, bytes)
                await self._handle(data, time.time())
        except ConnectionClosed:
            return time.time()

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()

    async def _handle(self, data: bytes, now: float) -> str:
        received = self.connection.receive(data)
        for reply in received.replies:
            await self._send(reply)
        outcome = ""
        for envelope in received.messages:
            message = envelope.message
            if type(message) is ToolUseRequest and message.execution == "client":
                self._first(now, "ToolUseRequest")
                if message.id in self.answered or (self.held is not None and message.id == self.held.id):
                    continue  # sent again (the run resumed): answered once already, or held
                self.requests += 1
                if self.hold_at is not None and self.requests - 1 == self.hold_at and self.held is None:
                    self.held, outcome = message, "held"
                    continue
                await self._answer(message)
            elif type(message) is RunStatus:
                self._first(now, f"RunStatus {message.status}")
                if message.status in ("finished", "failed"):
                    outcome = message.status
            elif type(message) is RegisterToolsResult:
                outcome = "registered"
        if (ack := self.connection.ack()) is not None:
            await self._send(ack)
        if received.close:
            raise RuntimeError(f"the server closed the conversation: {received.errors!r}")
        return outcome

    def _first(self, now: float, kind: str) -> None:
        if self.watching and self.first_frame is None:
            self.first_frame, self.first_kind = now, kind


async def held_run(url: str) -> Resumer:
    """A new conversation at `url` whose run of HELD_RUN turns waits for the client's answer to call HELD."""
    client = Resumer()
    await client.dial(url)
    await client.register()
    client.hold_at = HELD
    await client.ask(f"turns {HELD_RUN}")
    if (outcome := await client.pump()) != "held":
        raise RuntimeError(f"the run ended ({outcome}) before call {HELD}")
    return client


async def resume_and_finish(client: Resumer) -> None:
    """Answer the held call on the new socket and serve the run to its end, timing its first frame."""
    client.watching = True
    await client.answer_held()
    if (outcome := await client.pump()) != "finished":
        raise RuntimeError(f"the resumed run ended {outcome}")
    await client.close()


def lease_of(dsn: str, conversation: str) -> tuple[str, int, float] | None:
    """(owner, epoch, expires_at as epoch seconds) of a conversation's lease, or None."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as db:
        row = db.execute(
            "SELECT owner, epoch, extract(epoch FROM expires_at) FROM toolwire.leases WHERE conversation = %s",
            (conversation,),
        ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]), float(row[2]))


class LeaseClock:
    """Samples a conversation's lease (and, given, haproxy's view of a replica) every 10 ms, in a thread."""

    def __init__(self, dsn: str, conversation: str, ttl: float, balancer: Haproxy | None, replica: str) -> None:
        self.dsn, self.conversation, self.ttl = dsn, conversation, ttl
        self.balancer, self.replica = balancer, replica
        self.taken: dict[int, tuple[str, float]] = {}
        """epoch → (owner, when it was taken: expires_at − ttl at its first sample)."""
        self.down: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> LeaseClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _sample(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as db:
            while not self._stop.wait(0.01):
                row = db.execute(
                    "SELECT owner, epoch, extract(epoch FROM expires_at) FROM toolwire.leases WHERE conversation = %s",
                    (self.conversation,),
                ).fetchone()
                if row is not None and int(row[1]) not in self.taken:
                    self.taken[int(row[1])] = (str(row[0]), float(row[2]) - self.ttl)
                if self.balancer is not None and self.down is None:
                    if self.balancer.status(self.replica).startswith("DOWN"):
                        self.down = time.time()
