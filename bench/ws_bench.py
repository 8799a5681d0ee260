"""WebSocket benchmarks: TW-11 … TW-14 of BENCHMARKS.md, toolwire's server against a `websockets` echo.

Every server runs in its own child process on loopback (this script with `--server KIND`); the
clients run in this process, in one event loop (`anyio.run`, asyncio backend), with the same
`websockets` library (its asyncio client, permessage-deflate off, client pings off):

- `echo-ws`: the baseline, a bare `websockets` server echoing each binary frame (deflate off).
- `echo-commit`: the second floor (BENCHMARKS.md, revisions): the same echo server, which for each
  binary frame first commits it durably to SQLite (one `BEGIN IMMEDIATE` / INSERT of the frame's
  bytes / `COMMIT` on a WAL file with `synchronous = NORMAL`, as `SqliteStore` writes), then echoes
  it: one durable commit per round trip, nothing more. TW-11 and TW-12 are gated on it.
- `echo-asgi` (diagnostic): the same echo as a Starlette endpoint under uvicorn, configured like
  `toolwire serve`, so the ASGI stack's share of toolwire's figures can be told apart.
- `toolwire`: the real thing: `create_app` and its `/ws` route, `ServerConversation`, the agent's
  `ClientHub`, a `SqliteStore` in a temporary data directory, under uvicorn with the `uvicorn.Config`
  of `toolwire serve` (`toolwire/server/serve.py`), the loop set explicitly. The agent comes from
  this module's `make_agent` (an `--app` factory): a `FunctionModel` that either drives client
  tool calls through the hub directly (`hub N`: TW-11, TW-12) or calls the client tool once per
  turn (`turns N`: TW-13). The listening socket is `toolwire.server.serve.listen`'s.
- `toolwire-memory` (diagnostic, TW-11 and TW-13): the same with a `MemoryStore`, so SQLite's
  share can be told apart (`toolwire serve` always uses SQLite).

The toolwire client of TW-11 and TW-12 is the shipped Python client (`toolwire.client.connect`,
reconnect off) with a handler for the benchmark's tool (`ShippedClient`), as the revisions ask.
The minimal client (`ToolClient`) measures TW-11 too, as a diagnostic (`tw11/toolwire-minimal`), and
drives TW-13, TW-14, the memory rounds and `--profile`: the sans-I/O `Connection("client")` over a
`websockets` connection; it answers each ToolUseRequest (`execution="client"`) with a ToolUseResult of the
same id, and acknowledges as the Python client does (docs/protocol.md): late, within
`ACK_DELAY` of the first unacknowledged stanza (`toolwire.client.link.AckTimer`), or once
`ACK_SOON` (16) stanzas wait, after the frame's work (its ToolUseResult written).

What is measured (wall clock `time.perf_counter_ns`; server CPU is the server process's CPU clock,
`clock_getcpuclockid`, read from this process):

- TW-11: 10,000 sequential round trips per unit. Echo: the client's time from `send` to the echo's
  `recv`. toolwire: the client-side time between one ToolUseRequest's arrival and the next one's,
  while the server's driver calls `ClientHub.request` back to back (the calls' ledger entries
  written ahead, all at once): one full cycle of request (numbered, persisted with the call marked
  dispatched, written), the client's answer, and the server taking the result (decoded, saved as
  the call's answer with the protocol state before anything acknowledges it, delivered to the
  waiting call; both ends acknowledge late). Gated on that
  period, ÷ the echo + commit floor's send-to-recv of the same round (the `websockets` echo ratios
  are reported, not gated). Also reported: the server-side `await hub.request(...)` duration (caller's view), the
  client's own work per request, server CPU per round trip.
- TW-12: 100 connected clients, each doing sequential round trips (50 per client per unit);
  throughput and server CPU per round trip over the window from 10 % to 90 % of the unit's round
  trips (all clients busy), the CPU gated ÷ the echo + commit floor's (÷ the echo: reported), the
  throughput ÷ the echo's; server memory per idle connection: RSS of a fresh server process with
  100 connected, handshaken (toolwire: Configuration exchanged; echo: one echo) idle clients
  minus without them, ÷ 100.
- TW-13: a fresh conversation per run (handshake and registration not timed): wall time from
  the UserMessage to RunStatus "finished", a 20-turn run (one client tool call per turn) and a
  0-turn run; per-turn µs = (t20 − t0) ÷ 20, per round. Limit (BENCHMARKS.md, revisions): the
  spec's reference round trip, 1.3 × the echo + durable SQLite commit floor when this run measures
  it (`ECHO_COMMIT_UNIT`), else 1.3 × the `websockets` echo, in the same round, + TW-1's goal, 10 ×
  the loop floor (`bench/loop_common.py`, CPU µs per call) measured in this process in the same
  round (`tw13_limit`); not toolwire's own TW-11.
- TW-14 (report only, when `uvloop` imports): TW-11 with uvloop in the servers and the client.

Rounds are interleaved (each round runs every unit once, in an order rotated per round); figures
are computed per round and summarised as median and p25-p75; a gate passes on its median
(BENCHMARKS.md, revisions): the quartiles are reported, never the reason for a pass.

    .venv/bin/python bench/ws_bench.py [--rounds N] [--count N] [--clients N] [--per-client N] [--runs N]
        [--mem-rounds N] [--tw14-count N] [--only tw11,tw12,tw13,mem,tw14] [--json PATH]
        [--markdown PATH | --no-markdown] [--note TEXT] [--strict]
    .venv/bin/python bench/ws_bench.py --profile PATH [--profile-scenario tw11|tw13] [--count N]
"""

from __future__ import annotations

import argparse
import array
import ctypes
import ctypes.util
import gc
import importlib.util
import json
import math
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Final, Protocol

import anyio
from websockets.asyncio.client import ClientConnection, connect

from toolwire.client import Client
from toolwire.client import connect as client_connect
from toolwire.client.link import ACK_SOON, AckTimer
from toolwire.protocol import (
    Configuration,
    Connection,
    Envelope,
    RegisterTools,
    RegisterToolsResult,
    RunStatus,
    ToolUseRequest,
    ToolUseResult,
    UserMessageBody,
    encode,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from invoke_overhead import machine
from loop_common import FloorModel, check_floor, floor_run, floor_script, floor_tools, summary, write_section

ROOT: Final = Path(__file__).resolve().parent.parent
DEFAULT_MARKDOWN: Final = ROOT / "docs" / "benchmarks.md"
RESULTS_DIR: Final = ROOT / "bench" / "results"
MIN_ROUNDS: Final = 7
BEGIN: Final = "<!-- ws_bench:begin (generated by bench/ws_bench.py; do not edit by hand) -->"
END: Final = "<!-- ws_bench:end -->"
TOKEN: Final = "bench-token-0123456789abcdef"
KINDS: Final = ("echo-ws", "echo-asgi", "toolwire")
"""The servers whose idle connections are weighed; `echo-commit`'s are `echo-ws`'s (the same server)."""
SERVERS: Final = ("echo-ws", "echo-commit", "echo-asgi", "toolwire", "toolwire-memory")
"""The servers of the timed rounds; `toolwire-memory` (a `MemoryStore` instead of SQLite) is a diagnostic."""
COMMIT_FILE: Final = "echo-commit.sqlite3"
TURNS: Final = 20
FLOOR_RUNS: Final = 40
MAX_FRAME_BYTES: Final = 1024 * 1024
KEEPALIVE_SECONDS: Final = 5.0

# The client tool every scenario calls: one parameter, a short text the client echoes back.
TOOL: Final = "Echo"
TOOL_TEXT: Final = "the quick brown fox jumps over the lazy dog, 0123456789"
TOOL_ARGUMENTS: Final = {"text": TOOL_TEXT}
TOOL_DESCRIPTION: Final = "Echo a text back (the benchmark's client tool)"
GROUP: Final[dict[str, Any]] = {
    "name": "Bench",
    "description": "The benchmark's client tools",
    "startCollapsed": False,
    "tools": [
        {
            "name": TOOL,
            "description": TOOL_DESCRIPTION,
            "parametersSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        }
    ],
}


# == the server side (child processes) ============================================================


def make_agent(store: Any, *, disconnection: Any = None) -> Any:
    """The `--app` factory of the toolwire server: an agent whose model drives the client tool.

    `disconnection` is the client tools' `DisconnectionStrategy` (default: toolwire's).

    The user message says what to do:

    - `hub N THREAD PATH`: call the client tool N times through the agent's `ClientHub`, back to
      back (as the client tools layer does, without the ledger and the pipeline), timing each
      `await hub.request(...)` into PATH (int64 ns; `-` to keep nothing); then answer.
    - `turns N`: call the client tool once per turn for N turns (the whole agent loop); then answer.
    """
    from toolwire import Agent, ToolCall
    from toolwire.client_tools import ClientToolsConfig
    from toolwire.client_tools.channel import new_request_id
    from toolwire.client_tools.definitions import ClientToolRequest
    from toolwire.messages import UserMessage
    from toolwire.models import ModelRequest
    from toolwire.protocol.results import tool_result
    from toolwire.store import LedgerEntry
    from toolwire.testing import FunctionModel

    class Unrecorded(list[ModelRequest]):
        """`FunctionModel.requests` that keeps nothing (it would keep every request of every run)."""

        def append(self, item: ModelRequest, /) -> None:
            pass

    async def hub_calls(thread_id: str, n: int, path: str) -> None:
        hub = agent.clients
        samples = array.array("q")
        clock = time.perf_counter_ns
        requests = [
            ClientToolRequest(
                request_id=new_request_id(),
                thread_id=thread_id,
                call_id=f"call_{index}_{secrets.token_hex(4)}",
                tool_name=TOOL,
                arguments=dict(TOOL_ARGUMENTS),
                description=TOOL_DESCRIPTION,
                mode="read",
            )
            for index in range(n)
        ]
        # The server takes a client's answer only for a call its ledger has as dispatched: write
        # the calls' entries ahead, all at once (a batch's write-ahead is TW-13's, not TW-11's).
        await agent.store.record_calls(
            [
                LedgerEntry(
                    thread_id=thread_id,
                    call=ToolCall(id=request.call_id, name=TOOL, arguments=request.arguments),
                    request_index=0,
                    execution="client",
                    request_id=request.request_id,
                )
                for request in requests
            ]
        )
        for index, request in enumerate(requests):
            started = clock()
            response = await hub.request(thread_id, request)
            samples.append(clock() - started)
            if response is None or not response.success:
                raise RuntimeError(f"the client did not answer request {index}: {response!r}")
            message = response if isinstance(response, ToolUseResult) else response.to_message(request.request_id)
            tool_result(message, call_id=request.call_id)  # the result, applied
        if path != "-":
            await anyio.Path(path).write_bytes(samples.tobytes())

    async def script(request: ModelRequest) -> Any:
        prompt = next(m for m in reversed(request.messages) if isinstance(m, UserMessage)).content
        words = str(prompt).split()
        if words[0] == "hub":
            await hub_calls(words[2], int(words[1]), words[3])
            return "done"
        if request.request_index < int(words[1]):
            call_id = f"c{request.request_index}_{secrets.token_hex(4)}"
            return [ToolCall(id=call_id, name=TOOL, arguments=dict(TOOL_ARGUMENTS))]
        return "done"

    model = FunctionModel(script, name="ws-bench")
    model.requests = Unrecorded()
    options: dict[str, Any] = {} if disconnection is None else {"disconnection": disconnection}
    agent = Agent(model, store=store, client_tools=ClientToolsConfig(invoke_timeout=60, **options))
    return agent


def _uvicorn_config(app: Any, loop: str) -> Any:
    """`toolwire serve`'s `uvicorn.Config` (serve.py), with the event loop chosen explicitly."""
    import uvicorn

    from toolwire.server.serve import KEEPALIVE_SECONDS, MAX_FRAME_BYTES, SHUTDOWN_SECONDS

    return uvicorn.Config(
        app,
        ws_max_size=MAX_FRAME_BYTES,
        ws_ping_interval=KEEPALIVE_SECONDS,
        ws_ping_timeout=KEEPALIVE_SECONDS,
        ws_per_message_deflate=False,
        lifespan="off",
        log_level="info",
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        loop=loop,
    )


def serve_child(kind: str, loop: str, data_dir: Path, profile: Path | None) -> int:
    """Serve `kind` on a free loopback port until SIGINT/SIGTERM; print the URL first."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if kind in ("echo-ws", "echo-commit"):
        run = _echo_ws(loop, data_dir / COMMIT_FILE if kind == "echo-commit" else None)
    else:
        import uvicorn

        from toolwire.server.serve import listen

        listener = listen("127.0.0.1", 0)  # as `toolwire serve` listens
        host, port = listener.getsockname()[:2]
        print(f"listening ws://{host}:{port}/ws", flush=True)
        if kind == "echo-asgi":
            app = _echo_asgi_app()
        else:
            from toolwire.server import TokenAuth, create_app
            from toolwire.server.serve import load_agent
            from toolwire.store.memory import MemoryStore
            from toolwire.store.sqlite import SqliteStore

            store = SqliteStore.in_directory(data_dir) if kind == "toolwire" else MemoryStore()
            agent = load_agent("ws_bench:make_agent", store, None)
            app = create_app(agent, auth=TokenAuth.single(TOKEN))
        server = uvicorn.Server(_uvicorn_config(app, loop))

        def run() -> None:
            server.run(sockets=[listener])

    profiler = None
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        run()
    except KeyboardInterrupt:
        pass
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
    return 0


def _echo_ws(loop: str, commit_to: Path | None = None) -> Callable[[], None]:
    """The bare `websockets` echo server; it binds its own socket (asyncio sets TCP_NODELAY).

    With `commit_to` (`echo-commit`), each frame is first committed durably to that SQLite file: one
    `BEGIN IMMEDIATE` / INSERT / `COMMIT` per frame, on the event loop, with `SqliteStore`'s
    durability settings (WAL, `synchronous = NORMAL`; SQLite's own WAL autocheckpoint).
    """
    import sqlite3

    from websockets.asyncio.server import ServerConnection, serve

    db: sqlite3.Connection | None = None
    if commit_to is not None:
        db = sqlite3.connect(commit_to, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS frames (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")

    async def echo(connection: ServerConnection) -> None:
        async for message in connection:
            await connection.send(message)

    async def echo_commit(connection: ServerConnection) -> None:
        assert db is not None
        execute = db.execute
        async for message in connection:
            if isinstance(message, bytes):  # one durable commit per round trip, then the echo
                execute("BEGIN IMMEDIATE")
                execute("INSERT INTO frames (body) VALUES (?)", (message,))
                execute("COMMIT")
            await connection.send(message)

    async def main() -> None:
        async with serve(
            echo if db is None else echo_commit,
            "127.0.0.1",
            0,
            compression=None,
            max_size=MAX_FRAME_BYTES,
            ping_interval=KEEPALIVE_SECONDS,
            ping_timeout=KEEPALIVE_SECONDS,
        ) as server:
            host, port = next(iter(server.sockets)).getsockname()[:2]
            print(f"listening ws://{host}:{port}/ws", flush=True)
            await server.serve_forever()

    return lambda: anyio.run(main, backend="asyncio", backend_options={"use_uvloop": loop == "uvloop"})


def _echo_asgi_app() -> Any:
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.websockets import WebSocket

    async def echo(websocket: WebSocket) -> None:
        await websocket.accept()
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            await websocket.send_bytes(message.get("bytes") or b"")

    return Starlette(routes=[WebSocketRoute("/ws", echo)])


# == the parent: server processes, their CPU and memory ===========================================

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")
_PAGE: Final = os.sysconf("SC_PAGE_SIZE")


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user + system, all threads) that process `pid` used so far.

    The process's CPU clock (`clock_getcpuclockid`, ns resolution); `/proc/<pid>/stat`'s ticks
    (10 ms) where that is not available.
    """
    clock = ctypes.c_int()
    if _libc.clock_getcpuclockid(pid, ctypes.byref(clock)) == 0:
        try:
            return time.clock_gettime(clock.value)
        except OSError:
            pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def process_rss_kib(pid: int) -> float:
    """Resident set of process `pid` in KiB (`/proc/<pid>/statm`)."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE / 1024


@dataclass
class Server:
    """A server child process."""

    kind: str
    loop: str
    process: subprocess.Popen[bytes]
    url: str
    data_dir: Path
    log: Path
    drain: threading.Thread | None = None
    """Reads (and at the end closes) the child's stdout."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu(self) -> float:
        return process_cpu(self.pid)

    def rss_kib(self) -> float:
        return process_rss_kib(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.drain is not None:
            self.drain.join(timeout=5)
        elif self.process.stdout is not None:
            self.process.stdout.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _drain(stream: IO[bytes]) -> None:
    with stream:
        stream.read()


def start_server(kind: str, loop: str = "asyncio", *, profile: Path | None = None) -> Server:
    """Start `kind` in a child process and wait for its URL."""
    return start_servers((kind,), loop, profile=profile)[kind]


def start_servers(kinds: Sequence[str], loop: str = "asyncio", *, profile: Path | None = None) -> dict[str, Server]:
    """Start a child process per kind (all at once), then wait for their URLs."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    servers: dict[str, Server] = {}
    try:
        for kind in kinds:
            data_dir = Path(tempfile.mkdtemp(prefix=f"ws-bench-{kind}-"))
            command = [sys.executable, str(Path(__file__).resolve()), "--server", kind, "--loop", loop]
            command += ["--data-dir", str(data_dir), *(["--profile", str(profile)] if profile is not None else [])]
            with (data_dir / "server.log").open("wb") as err:
                process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT / "bench")
            started[kind] = process, data_dir
        for kind, (process, data_dir) in started.items():
            assert process.stdout is not None
            line = process.stdout.readline().decode()
            log = data_dir / "server.log"
            servers[kind] = Server(kind, loop, process, line.split()[1] if line else "", data_dir, log)
            if not line.startswith("listening "):
                raise RuntimeError(f"the {kind} server did not start:\n{log.read_text()[-3000:]}")
            drain = servers[kind].drain = threading.Thread(target=_drain, args=(process.stdout,), daemon=True)
            drain.start()  # never let a full pipe block the server
    except BaseException:
        for kind, (process, data_dir) in started.items():
            servers.get(kind, Server(kind, loop, process, "", data_dir, data_dir)).stop()
        raise
    return servers


# == the clients ==================================================================================

CONNECT_OPTIONS: Final[dict[str, Any]] = {"compression": None, "ping_interval": None, "max_size": MAX_FRAME_BYTES}


def echo_payload() -> bytes:
    """An echo frame the size of the mean of a ToolUseRequest and a ToolUseResult frame of TW-11."""
    request, result = sample_frames()
    return secrets.token_bytes((len(request) + len(result)) // 2)


def sample_frames() -> tuple[bytes, bytes]:
    """The TW-11 ToolUseRequest (server) and ToolUseResult (client) frames as toolwire encodes them."""
    conversation = "conv_" + secrets.token_hex(16)
    request = ToolUseRequest(
        id="req_" + secrets.token_hex(16),
        tool_name=TOOL,
        arguments=dict(TOOL_ARGUMENTS),
        execution="client",
        timeout_ms=60_000,
        call_id="call_1234",
        description=TOOL_DESCRIPTION,
        mode="read",
    )
    result = ToolUseResult(id=request.id, success=True, result={"value": TOOL_TEXT})
    return encode(Envelope(-1234, conversation, request)), encode(Envelope(1234, conversation, result))


class Meter(Protocol):
    """What a `Window` reads the servers' CPU from: a `Server`, or several processes summed."""

    def cpu(self) -> float: ...


@dataclass
class Window:
    """Counts round trips of a TW-12 unit; records time and CPU at 10 % and 90 % of the total."""

    total: int
    server: Meter
    count: int = 0
    marks: list[tuple[int, float, float, float]] = field(default_factory=list[tuple[int, float, float, float]])

    def tick(self) -> None:
        self.count += 1
        if self.count == max(1, self.total // 10) or self.count == max(2, self.total * 9 // 10):
            self.marks.append((self.count, time.perf_counter(), self.server.cpu(), time.process_time()))

    def figures(self) -> dict[str, float]:
        if len(self.marks) < 2:
            raise RuntimeError(f"the window saw {self.count} of {self.total} round trips")
        (n0, t0, s0, c0), (n1, t1, s1, c1) = self.marks[0], self.marks[-1]
        n = n1 - n0
        return {
            "rt_per_s": n / (t1 - t0),
            "server_cpu_us": (s1 - s0) / n * 1e6,
            "client_cpu_us": (c1 - c0) / n * 1e6,
        }


async def echo_round_trips(socket_: ClientConnection, payload: bytes, n: int, window: Window | None = None) -> Any:
    """`n` sequential echoes; the wall ns of each (send to recv)."""
    samples = array.array("q")
    clock = time.perf_counter_ns
    for _ in range(n):
        started = clock()
        await socket_.send(payload)
        await socket_.recv()
        samples.append(clock() - started)
        if window is not None:
            window.tick()
    return samples


class ToolClient:
    """The minimal toolwire client: `Connection("client")` over a `websockets` connection."""

    def __init__(self, socket_: ClientConnection, connection: Connection, conversation_id: str) -> None:
        self.socket = socket_
        self.connection = connection
        self.conversation_id = conversation_id
        self.arrivals = array.array("q")
        """perf_counter_ns at each ToolUseRequest's arrival (of the last `run`)."""
        self.work = array.array("q")
        """ns from a request's arrival to its result written (the client's own work)."""
        self.window: Window | None = None
        self.acks = AckTimer(self._acknowledge)

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str) -> AsyncIterator[ToolClient]:
        """Connect with the bearer token and complete the handshake (a new conversation)."""
        connection = Connection("client")
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with connect(url, additional_headers=headers, **CONNECT_OPTIONS) as socket_:
            await socket_.send(connection.hello())
            data = await socket_.recv()
            assert isinstance(data, bytes)
            received = connection.receive(data)
            hello = next((e.message for e in received.messages if isinstance(e.message, Configuration)), None)
            if hello is None:
                raise RuntimeError(f"no Configuration from the server: {received!r}")
            for reply in received.replies:
                await socket_.send(reply)
            client = cls(socket_, connection, hello.conversation_id)
            async with anyio.create_task_group() as group:
                group.start_soon(client.acks.run)
                yield client
                group.cancel_scope.cancel()

    async def _acknowledge(self) -> None:
        if (ack := self.connection.ack()) is not None:
            await self.socket.send(ack)

    async def register(self) -> None:
        await self.socket.send(self.connection.send(RegisterTools(groups=(GROUP,))))
        await self._pump(registration=True)

    async def run(self, prompt: str) -> None:
        """Send a UserMessage and serve client tool requests until the run finishes."""
        self.arrivals = array.array("q")
        self.work = array.array("q")
        await self.socket.send(self.connection.send(UserMessageBody(id="u_" + secrets.token_hex(6), content=prompt)))
        await self._pump()

    async def _pump(self, *, registration: bool = False) -> None:
        socket_, connection, clock = self.socket, self.connection, time.perf_counter_ns
        arrivals, work, window = self.arrivals, self.work, self.window
        while True:
            data = await socket_.recv()
            now = clock()
            assert isinstance(data, bytes)
            received = connection.receive(data)
            for reply in received.replies:
                await socket_.send(reply)
            done: Any = None
            for envelope in received.messages:
                message = envelope.message
                if type(message) is ToolUseRequest and message.execution == "client":
                    arrivals.append(now)
                    result = ToolUseResult(id=message.id, success=True, result={"value": message.arguments["text"]})
                    await socket_.send(connection.send(result))
                    work.append(clock() - now)
                    if window is not None:
                        window.tick()
                elif type(message) is RunStatus and message.status in ("finished", "failed"):
                    done = message
                elif registration and type(message) is RegisterToolsResult:
                    done = message
            # As the Python client (`Link`): acknowledged within ACK_DELAY, or now once ACK_SOON wait.
            if connection.unacknowledged >= ACK_SOON:
                await self._acknowledge()
            elif connection.unacknowledged:
                self.acks.later()
            if received.close:
                raise RuntimeError(f"the server closed the conversation: {received.errors!r}")
            if done is not None:
                if getattr(done, "status", "finished") == "failed" or getattr(done, "ok", True) is False:
                    raise RuntimeError(f"the server reported {done!r}")
                return


class ShippedClient:
    """The shipped Python client (`toolwire.client.connect`, reconnect off) answering the benchmark's tool.

    What the measurements read, as `ToolClient` has it: `arrivals` (perf_counter_ns as each
    ToolUseRequest's handler starts: after the frame's decoding, the ledger and the task start),
    `work` (ns in the handler itself), `window` (TW-12's counter, ticked per request), `run(prompt)`.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self.arrivals = array.array("q")
        self.work = array.array("q")
        self.window: Window | None = None

    @property
    def conversation_id(self) -> str:
        return self.client.conversation_id

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str) -> AsyncIterator[ShippedClient]:
        """Connect with the token, complete the handshake and register the tool group."""
        clock = time.perf_counter_ns
        holder: list[ShippedClient] = []

        async def echo(text: str) -> dict[str, Any]:
            now = clock()
            shipped = holder[0]
            shipped.arrivals.append(now)
            if shipped.window is not None:
                shipped.window.tick()
            shipped.work.append(clock() - now)
            return {"value": text}

        handlers = {TOOL: echo}
        async with client_connect(url, token=TOKEN, groups=[GROUP], handlers=handlers, reconnect=False) as client:
            holder.append(cls(client))
            yield holder[0]

    async def register(self) -> None:
        """Done by `connect(groups=...)` (here for `ToolClient`'s shape)."""

    async def run(self, prompt: str) -> None:
        """Send a UserMessage; the client answers the tool requests until the run finishes (or raises)."""
        self.arrivals = array.array("q")
        self.work = array.array("q")
        await self.client.ask(prompt)


AnyClient = ToolClient | ShippedClient


def _ns_stats(samples: Sequence[int]) -> dict[str, float]:
    ordered = sorted(samples)
    n = len(ordered)
    return {
        "median_us": statistics.median(ordered) / 1000,
        "p99_us": ordered[min(n - 1, math.ceil(0.99 * n) - 1)] / 1000,
        "n": n,
    }


# == the measurements (the units below and bench/cluster_bench.py run them) =======================


async def hub_round_trips(client: AnyClient, n: int, server: Meter, samples_dir: Path) -> dict[str, float]:
    """TW-11: `n` client tool calls driven through the hub back to back; the client-side period's stats."""
    path = samples_dir / f"hub-{secrets.token_hex(4)}.bin"
    cpu = server.cpu()
    await client.run(f"hub {n} {client.conversation_id} {path}")
    cpu_us = (server.cpu() - cpu) / n * 1e6
    hub = array.array("q")
    with path.open("rb") as data:
        hub.frombytes(data.read())
    path.unlink()
    arrivals = client.arrivals
    periods = [arrivals[i + 1] - arrivals[i] for i in range(len(arrivals) - 1)]
    if len(arrivals) != n or len(hub) != n:
        raise RuntimeError(f"expected {n} requests, saw {len(arrivals)} (hub samples {len(hub)})")
    out = _ns_stats(periods or [0])
    hub_stats, work = _ns_stats(hub), _ns_stats(client.work or [0])
    out.update(
        server_cpu_us=cpu_us,
        hub_median_us=hub_stats["median_us"],
        hub_p99_us=hub_stats["p99_us"],
        client_work_us=work["median_us"],
    )
    return out


async def many_round_trips(clients: Sequence[AnyClient], per_client: int, server: Meter) -> dict[str, float]:
    """TW-12: every client does `per_client` sequential round trips at once; throughput and CPU per round trip."""
    window = Window(len(clients) * per_client, server)
    for client in clients:
        client.window = window
    try:
        async with anyio.create_task_group() as group:
            for client in clients:
                group.start_soon(client.run, f"hub {per_client} {client.conversation_id} -")
    finally:
        for client in clients:
            client.window = None
    return window.figures()


async def per_turn(url: str, runs: int, round_index: int = 0) -> dict[str, float]:
    """TW-13: `runs` fresh conversations of 20 turns and of 0 turns; per-turn wall µs = (t20 − t0) ÷ 20."""
    walls: dict[int, list[float]] = {TURNS: [], 0: []}
    for index in range(2 * runs):
        turns = TURNS if (index + round_index) % 2 == 0 else 0
        async with ToolClient.open(url) as client:
            await client.register()
            started = time.perf_counter_ns()
            await client.run(f"turns {turns}")
            walls[turns].append((time.perf_counter_ns() - started) / 1000)
            if len(client.arrivals) != turns:
                raise RuntimeError(f"a {turns}-turn run sent {len(client.arrivals)} client requests")
    t20, t0 = statistics.median(walls[TURNS]), statistics.median(walls[0])
    return {"t20_us": t20, "t0_us": t0, "per_turn_us": (t20 - t0) / TURNS}


# == units: one measurement each, run once per round ==============================================


@dataclass
class Bench:
    """The long-lived servers and connections of the timed rounds."""

    count: int
    clients: int
    per_client: int
    runs: int
    servers: dict[str, Server]
    payload: bytes
    samples_dir: Path
    echo_single: dict[str, ClientConnection] = field(default_factory=dict[str, ClientConnection])
    echo_many: dict[str, list[ClientConnection]] = field(default_factory=dict[str, list[ClientConnection]])
    tool_single: dict[str, AnyClient] = field(default_factory=dict[str, AnyClient])
    """By unit kind: `toolwire` (the shipped client), `toolwire-minimal`, `toolwire-memory` (minimal clients)."""
    tool_many: list[AnyClient] = field(default_factory=list[AnyClient])
    round_index: int = 0

    # -- TW-11 ---------------------------------------------------------------------------------

    async def tw11_echo(self, kind: str, n: int) -> dict[str, float]:
        server = self.servers[kind]
        cpu = server.cpu()
        samples = await echo_round_trips(self.echo_single[kind], self.payload, n)
        return {**_ns_stats(samples), "server_cpu_us": (server.cpu() - cpu) / n * 1e6}

    async def tw11_toolwire(self, kind: str, n: int, server: str | None = None) -> dict[str, float]:
        """`kind`'s client against `server` (default: the server of the same name)."""
        return await hub_round_trips(self.tool_single[kind], n, self.servers[server or kind], self.samples_dir)

    # -- TW-12 ---------------------------------------------------------------------------------

    async def tw12_echo(self, kind: str) -> dict[str, float]:
        server, sockets = self.servers[kind], self.echo_many[kind]
        window = Window(len(sockets) * self.per_client, server)
        async with anyio.create_task_group() as group:
            for socket_ in sockets:
                group.start_soon(echo_round_trips, socket_, self.payload, self.per_client, window)
        return window.figures()

    async def tw12_toolwire(self) -> dict[str, float]:
        return await many_round_trips(self.tool_many, self.per_client, self.servers["toolwire"])

    # -- TW-13 ---------------------------------------------------------------------------------

    async def tw13(self, kind: str) -> dict[str, float]:
        return await per_turn(self.servers[kind].url, self.runs, self.round_index)

    async def floor(self) -> float:
        """The loop floor: CPU µs per call, (run(20 × 1) − run(0)) ÷ 20, as loop_bench measures it."""
        tools = floor_tools()
        t20, t0 = floor_script(TURNS), floor_script(0)
        cpu: dict[int, float] = {}
        for turns, script in ((TURNS, t20), (0, t0)):
            gc.collect()
            started = time.process_time()
            for _ in range(FLOOR_RUNS):
                await floor_run(FloorModel(script), "add", tools)
            cpu[turns] = (time.process_time() - started) / FLOOR_RUNS * 1e6
        return (cpu[TURNS] - cpu[0]) / TURNS

    def units(self, only: set[str]) -> list[tuple[str, Callable[[], Any]]]:
        units: list[tuple[str, Callable[[], Any]]] = []
        if "tw11" in only or "tw13" in only:
            units += [
                ("tw11/echo-ws", lambda: self.tw11_echo("echo-ws", self.count)),
                (ECHO_COMMIT_UNIT, lambda: self.tw11_echo("echo-commit", self.count)),
                ("tw11/echo-asgi", lambda: self.tw11_echo("echo-asgi", self.count)),
                ("tw11/toolwire", lambda: self.tw11_toolwire("toolwire", self.count)),
                (
                    "tw11/toolwire-minimal",
                    lambda: self.tw11_toolwire("toolwire-minimal", max(2, self.count // 4), "toolwire"),
                ),
                ("tw11/toolwire-memory", lambda: self.tw11_toolwire("toolwire-memory", max(2, self.count // 4))),
            ]
        if "tw12" in only:
            units += [
                ("tw12/echo-ws", lambda: self.tw12_echo("echo-ws")),
                ("tw12/echo-commit", lambda: self.tw12_echo("echo-commit")),
                ("tw12/echo-asgi", lambda: self.tw12_echo("echo-asgi")),
                ("tw12/toolwire", self.tw12_toolwire),
            ]
        if "tw13" in only:
            units += [
                ("tw13/toolwire", lambda: self.tw13("toolwire")),
                ("tw13/toolwire-memory", lambda: self.tw13("toolwire-memory")),
                ("floor", self.floor),
            ]
        return units


@asynccontextmanager
async def connected(bench: Bench, only: set[str]) -> AsyncIterator[Bench]:
    """Open the connections the units use; close them after."""
    async with AsyncExitStack() as stack:
        single = "tw11" in only or "tw13" in only
        for kind in ("echo-ws", "echo-commit", "echo-asgi"):
            url = bench.servers[kind].url
            if single:
                bench.echo_single[kind] = await stack.enter_async_context(connect(url, **CONNECT_OPTIONS))
            if "tw12" in only:
                bench.echo_many[kind] = [
                    await stack.enter_async_context(connect(url, **CONNECT_OPTIONS)) for _ in range(bench.clients)
                ]
        url = bench.servers["toolwire"].url
        if single:
            bench.tool_single["toolwire"] = await stack.enter_async_context(ShippedClient.open(url))
            for kind, server in (("toolwire-minimal", "toolwire"), ("toolwire-memory", "toolwire-memory")):
                client = await stack.enter_async_context(ToolClient.open(bench.servers[server].url))
                await client.register()
                bench.tool_single[kind] = client
        if "tw12" in only:
            for _ in range(bench.clients):
                bench.tool_many.append(await stack.enter_async_context(ShippedClient.open(url)))
        yield bench


async def run_rounds(bench: Bench, rounds: int, only: set[str], *, progress: bool = True) -> dict[str, list[Any]]:
    units = bench.units(only)
    samples: dict[str, list[Any]] = {name: [] for name, _ in units}
    # Warm-up: every path once (imports, caches, the servers' lazy set-up), a tenth of a unit.
    warm = Bench(
        **{
            **bench.__dict__,
            "count": max(2, bench.count // 10),
            "per_client": max(2, bench.per_client // 10),
            "runs": 1,
        }
    )
    for _, unit in warm.units(only):
        await unit()
    gc.collect()
    gc.freeze()  # the clients' set-up heap; GC stays on
    try:
        await interleaved(bench, units, rounds, samples, progress=progress)
    finally:
        gc.unfreeze()
    return samples


async def interleaved(
    bench: Any,
    units: Sequence[tuple[str, Callable[[], Awaitable[Any]]]],
    rounds: int,
    samples: dict[str, list[Any]],
    *,
    progress: bool,
) -> None:
    """Run every unit once per round, in an order rotated from round to round (BENCHMARKS.md rule 2),
    appending each unit's result to `samples[name]`; `bench.round_index` says which round runs."""
    for index in range(rounds):
        started = time.perf_counter()
        bench.round_index = index
        for k in range(len(units)):
            name, unit = units[(index + k) % len(units)]
            gc.collect()
            samples[name].append(await unit())
        if progress:
            print(f"round {index + 1}/{rounds}: {time.perf_counter() - started:.1f} s", file=sys.stderr)


# == memory per idle connection: fresh server processes ===========================================


async def idle_memory(server: Server, clients: int) -> dict[str, float]:
    """KiB of RSS per idle connection of a fresh `server`: warmed up, then `clients` connections."""
    payload, toolwire = echo_payload(), server.kind == "toolwire"
    if toolwire:  # warm-up: one conversation through the whole path
        async with ToolClient.open(server.url) as client:
            await client.register()
            await client.run(f"hub 2 {client.conversation_id} -")
    else:
        async with connect(server.url, **CONNECT_OPTIONS) as socket_:
            await echo_round_trips(socket_, payload, 2)
    await anyio.sleep(0.3)
    before = server.rss_kib()
    async with AsyncExitStack() as stack:
        for _ in range(clients):
            if toolwire:  # handshaken: the Configurations exchanged
                await stack.enter_async_context(ToolClient.open(server.url))
            else:  # one echo each
                socket_ = await stack.enter_async_context(connect(server.url, **CONNECT_OPTIONS))
                await echo_round_trips(socket_, payload, 1)
        await anyio.sleep(0.3)
        after = server.rss_kib()
    return {"rss_before_kib": before, "rss_after_kib": after, "kib_per_connection": (after - before) / clients}


async def memory_rounds(rounds: int, clients: int, *, progress: bool = True) -> dict[str, list[dict[str, float]]]:
    """Per round, a fresh server of each kind (started together, measured one after the other)."""
    samples: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for index in range(rounds):
        servers = start_servers(KINDS)
        try:
            for k in range(len(KINDS)):
                kind = KINDS[(index + k) % len(KINDS)]
                samples[kind].append(await idle_memory(servers[kind], clients))
        finally:
            for server in servers.values():
                server.stop()
    if progress:
        print(f"memory: {rounds} rounds of fresh servers", file=sys.stderr)
    return samples


# == TW-14: TW-11 under uvloop ====================================================================


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def tw14_rounds(rounds: int, count: int, *, progress: bool = True) -> dict[str, Any]:
    servers = start_servers(("echo-ws", "toolwire"), "uvloop")
    samples_dir = Path(tempfile.mkdtemp(prefix="ws-bench-uv-"))
    try:
        bench = Bench(count, 0, 0, 0, servers, echo_payload(), samples_dir)

        async def main() -> dict[str, list[Any]]:
            async with AsyncExitStack() as stack:
                bench.echo_single["echo-ws"] = await stack.enter_async_context(
                    connect(servers["echo-ws"].url, **CONNECT_OPTIONS)
                )
                client = await stack.enter_async_context(ToolClient.open(servers["toolwire"].url))
                await client.register()
                bench.tool_single["toolwire"] = client
                units: list[tuple[str, Callable[[], Any]]] = [
                    ("tw14/echo-ws", lambda: bench.tw11_echo("echo-ws", count)),
                    ("tw14/toolwire", lambda: bench.tw11_toolwire("toolwire", count)),
                ]
                await bench.tw11_echo("echo-ws", max(2, count // 10))
                await bench.tw11_toolwire("toolwire", max(2, count // 10))
                samples: dict[str, list[Any]] = {name: [] for name, _ in units}
                for index in range(rounds):
                    for k in range(len(units)):
                        name, unit = units[(index + k) % len(units)]
                        gc.collect()
                        samples[name].append(await unit())
                return samples

        samples = anyio.run(main, backend="asyncio", backend_options={"use_uvloop": True})
        if progress:
            print(f"TW-14: {rounds} rounds under uvloop", file=sys.stderr)
        return samples
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(samples_dir, ignore_errors=True)


# == figures and gates ============================================================================


def _figure(label: str, unit: str, values: Sequence[float]) -> dict[str, Any]:
    return {"label": label, "unit": unit, **summary(list(values)), "rounds": list(values)}


def ratio(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-round ratios a ÷ b (NaN where b is 0, as a tiny smoke run may measure)."""
    return [x / y if y else math.nan for x, y in zip(a, b, strict=True)]


def derive(units: dict[str, list[Any]], memory: dict[str, list[dict[str, float]]] | None, tw14: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {}

    def add(key: str, label: str, unit: str, values: Sequence[float]) -> None:
        if values:
            figures[key] = _figure(label, unit, values)

    def col(unit: str, field_: str) -> list[float]:
        return [float(sample[field_]) for sample in units.get(unit, [])]

    if "tw11/toolwire" in units:
        echo, tw, asgi = "tw11/echo-ws", "tw11/toolwire", "tw11/echo-asgi"
        add("tw11_echo_median_us", "TW-11 `websockets` echo: median µs", "µs", col(echo, "median_us"))
        add("tw11_echo_p99_us", "TW-11 `websockets` echo: p99 µs", "µs", col(echo, "p99_us"))
        add("tw11_asgi_median_us", "TW-11 uvicorn + Starlette echo: median µs", "µs", col(asgi, "median_us"))
        add("tw11_asgi_p99_us", "TW-11 uvicorn + Starlette echo: p99 µs", "µs", col(asgi, "p99_us"))
        add("tw11_median_us", "TW-11 toolwire round trip (client-side period): median µs", "µs", col(tw, "median_us"))
        add("tw11_p99_us", "TW-11 toolwire round trip (client-side period): p99 µs", "µs", col(tw, "p99_us"))
        add(
            "tw11_hub_median_us",
            "TW-11 toolwire `await hub.request()` (server side): median µs",
            "µs",
            col(tw, "hub_median_us"),
        )
        add(
            "tw11_hub_p99_us", "TW-11 toolwire `await hub.request()` (server side): p99 µs", "µs", col(tw, "hub_p99_us")
        )
        add(
            "tw11_client_work_us",
            "TW-11 the shipped client's handler per request: median µs",
            "µs",
            col(tw, "client_work_us"),
        )
        add(
            "tw11_minimal_work_us",
            "TW-11 the minimal client's own work per request (decoded to result written): median µs",
            "µs",
            col("tw11/toolwire-minimal", "client_work_us"),
        )
        add("tw11_median_ratio", "TW-11 median ÷ echo median", "×", ratio(col(tw, "median_us"), col(echo, "median_us")))
        add("tw11_p99_ratio", "TW-11 p99 ÷ echo p99", "×", ratio(col(tw, "p99_us"), col(echo, "p99_us")))

        def per_round_trip(key: str, unit: str, name: str, cpu_name: str) -> None:
            """A TW-11 unit's median and p99 round trip and its server CPU per round trip."""
            add(f"{key}_median_us", f"TW-11 {name}: median µs", "µs", col(unit, "median_us"))
            add(f"{key}_p99_us", f"TW-11 {name}: p99 µs", "µs", col(unit, "p99_us"))
            add(f"{key}_cpu_us", f"TW-11 {cpu_name} server CPU µs per round trip", "µs", col(unit, "server_cpu_us"))

        commit = ECHO_COMMIT_UNIT
        per_round_trip("tw11_commit", commit, "echo + durable SQLite commit", "echo + commit")
        if units.get(commit):
            add(
                "tw11_commit_median_ratio",
                "TW-11 median ÷ echo + commit median",
                "×",
                ratio(col(tw, "median_us"), col(commit, "median_us")),
            )
            add(
                "tw11_commit_p99_ratio",
                "TW-11 p99 ÷ echo + commit p99",
                "×",
                ratio(col(tw, "p99_us"), col(commit, "p99_us")),
            )
            add(
                "tw11_commit_cpu_ratio",
                "TW-11 server CPU ÷ echo + commit server CPU",
                "×",
                ratio(col(tw, "server_cpu_us"), col(commit, "server_cpu_us")),
            )
        minimal = "tw11/toolwire-minimal"
        per_round_trip(
            "tw11_minimal",
            minimal,
            "toolwire with the minimal client (diagnostic)",
            "toolwire with the minimal client:",
        )
        if units.get(minimal):
            add(
                "tw11_shipped_over_minimal",
                "TW-11 median with the shipped client ÷ with the minimal client",
                "×",
                ratio(col(tw, "median_us"), col(minimal, "median_us")),
            )
        add(
            "tw11_asgi_ratio",
            "TW-11 ASGI echo median ÷ echo median",
            "×",
            ratio(col(asgi, "median_us"), col(echo, "median_us")),
        )
        add(
            "tw11_over_asgi_ratio",
            "TW-11 median ÷ ASGI echo median",
            "×",
            ratio(col(tw, "median_us"), col(asgi, "median_us")),
        )
        add("tw11_echo_cpu_us", "TW-11 echo server CPU µs per round trip", "µs", col(echo, "server_cpu_us"))
        add("tw11_asgi_cpu_us", "TW-11 ASGI echo server CPU µs per round trip", "µs", col(asgi, "server_cpu_us"))
        add("tw11_cpu_us", "TW-11 toolwire server CPU µs per round trip", "µs", col(tw, "server_cpu_us"))
        add(
            "tw11_cpu_ratio",
            "TW-11 server CPU ÷ echo server CPU",
            "×",
            ratio(col(tw, "server_cpu_us"), col(echo, "server_cpu_us")),
        )
        mem = "tw11/toolwire-memory"
        add(
            "tw11_memory_median_us",
            "TW-11 toolwire on a MemoryStore (diagnostic): median µs",
            "µs",
            col(mem, "median_us"),
        )
        add(
            "tw11_memory_cpu_us",
            "TW-11 toolwire on a MemoryStore: server CPU µs per round trip",
            "µs",
            col(mem, "server_cpu_us"),
        )
        add(
            "tw11_store_cpu_us",
            "TW-11 SQLite's share: server CPU µs per round trip, SqliteStore − MemoryStore",
            "µs",
            [a - b for a, b in zip(col(tw, "server_cpu_us"), col(mem, "server_cpu_us"), strict=True)],
        )
    if "tw12/toolwire" in units:
        echo, tw, asgi = "tw12/echo-ws", "tw12/toolwire", "tw12/echo-asgi"
        add("tw12_echo_rps", "TW-12 echo: round trips/s", "/s", col(echo, "rt_per_s"))
        add("tw12_asgi_rps", "TW-12 ASGI echo: round trips/s", "/s", col(asgi, "rt_per_s"))
        add("tw12_rps", "TW-12 toolwire: round trips/s", "/s", col(tw, "rt_per_s"))
        add("tw12_rps_ratio", "TW-12 throughput ÷ echo", "×", ratio(col(tw, "rt_per_s"), col(echo, "rt_per_s")))
        commit = "tw12/echo-commit"
        add("tw12_commit_rps", "TW-12 echo + commit: round trips/s", "/s", col(commit, "rt_per_s"))
        add(
            "tw12_commit_cpu_us", "TW-12 echo + commit server CPU µs per round trip", "µs", col(commit, "server_cpu_us")
        )
        if units.get(commit):
            add(
                "tw12_commit_rps_ratio",
                "TW-12 throughput ÷ echo + commit",
                "×",
                ratio(col(tw, "rt_per_s"), col(commit, "rt_per_s")),
            )
            add(
                "tw12_commit_cpu_ratio",
                "TW-12 server CPU ÷ echo + commit",
                "×",
                ratio(col(tw, "server_cpu_us"), col(commit, "server_cpu_us")),
            )
        add("tw12_echo_cpu_us", "TW-12 echo server CPU µs per round trip", "µs", col(echo, "server_cpu_us"))
        add("tw12_asgi_cpu_us", "TW-12 ASGI echo server CPU µs per round trip", "µs", col(asgi, "server_cpu_us"))
        add("tw12_cpu_us", "TW-12 toolwire server CPU µs per round trip", "µs", col(tw, "server_cpu_us"))
        add(
            "tw12_cpu_ratio",
            "TW-12 server CPU ÷ echo",
            "×",
            ratio(col(tw, "server_cpu_us"), col(echo, "server_cpu_us")),
        )
        add("tw12_echo_client_cpu_us", "TW-12 echo clients' CPU µs per round trip", "µs", col(echo, "client_cpu_us"))
        add("tw12_client_cpu_us", "TW-12 toolwire clients' CPU µs per round trip", "µs", col(tw, "client_cpu_us"))
    if memory:
        for kind, key, label in (
            ("echo-ws", "mem_echo_kib", "idle connection: `websockets` echo server KiB"),
            ("echo-asgi", "mem_asgi_kib", "idle connection: ASGI echo server KiB"),
            ("toolwire", "mem_kib", "idle connection: toolwire server KiB"),
        ):
            add(key, f"TW-12 {label}", "KiB", [sample["kib_per_connection"] for sample in memory.get(kind, [])])
    if "tw13/toolwire" in units:
        per_turn, floor = col("tw13/toolwire", "per_turn_us"), [float(x) for x in units["floor"]]
        add("tw13_per_turn_us", "TW-13 per-turn wall µs ((t20 − t0) ÷ 20)", "µs", per_turn)
        add("tw13_t20_us", "TW-13 20-turn run, wall µs", "µs", col("tw13/toolwire", "t20_us"))
        add("tw13_t0_us", "TW-13 0-turn run, wall µs", "µs", col("tw13/toolwire", "t0_us"))
        add("floor_call_us", "loop floor CPU µs per call (TW-1's floor)", "µs", floor)
        tw11 = col("tw11/toolwire", "median_us")
        reference, source = reference_round_trip(units)
        limits = [tw13_limit(ref, f) for ref, f in zip(reference, floor, strict=True)]
        add("tw13_reference_us", f"TW-13 reference round trip: {source}", "µs", reference)
        add("tw13_limit_us", f"TW-13 limit: reference round trip ({source}) + 10 × floor", "µs", limits)
        add("tw13_ratio", "TW-13 per turn ÷ its limit", "×", [p / lim for p, lim in zip(per_turn, limits, strict=True)])
        add(
            "tw13_over_tw11_us",
            "TW-13 per turn − TW-11 median (the loop's share)",
            "µs",
            [p - m for p, m in zip(per_turn, tw11, strict=True)],
        )
        mem_turn = col("tw13/toolwire-memory", "per_turn_us")
        add("tw13_memory_per_turn_us", "TW-13 on a MemoryStore (diagnostic): per-turn wall µs", "µs", mem_turn)
        add(
            "tw13_store_us",
            "TW-13 SQLite's share: per-turn wall µs, SqliteStore − MemoryStore",
            "µs",
            [a - b for a, b in zip(per_turn, mem_turn, strict=True)],
        )
    if tw14:
        echo, tw = tw14["tw14/echo-ws"], tw14["tw14/toolwire"]
        add("tw14_echo_median_us", "TW-14 uvloop echo: median µs", "µs", [s["median_us"] for s in echo])
        add("tw14_echo_p99_us", "TW-14 uvloop echo: p99 µs", "µs", [s["p99_us"] for s in echo])
        add("tw14_median_us", "TW-14 uvloop toolwire: median µs", "µs", [s["median_us"] for s in tw])
        add("tw14_p99_us", "TW-14 uvloop toolwire: p99 µs", "µs", [s["p99_us"] for s in tw])
        add(
            "tw14_median_ratio",
            "TW-14 uvloop median ÷ echo",
            "×",
            [t["median_us"] / e["median_us"] for t, e in zip(tw, echo, strict=True)],
        )
        add(
            "tw14_p99_ratio",
            "TW-14 uvloop p99 ÷ echo",
            "×",
            [t["p99_us"] / e["p99_us"] for t, e in zip(tw, echo, strict=True)],
        )
        add("tw14_cpu_us", "TW-14 uvloop toolwire server CPU µs per round trip", "µs", [s["server_cpu_us"] for s in tw])
        add(
            "tw14_echo_cpu_us",
            "TW-14 uvloop echo server CPU µs per round trip",
            "µs",
            [s["server_cpu_us"] for s in echo],
        )
    return figures


ECHO_COMMIT_UNIT: Final = "tw11/echo-commit"
"""TW-11's second floor (BENCHMARKS.md, revisions), once ws_bench measures it: the `websockets` echo plus one
durable SQLite commit per round trip; rounds of dicts with `median_us` like the other TW-11 units."""
REFERENCE_FACTOR: Final = 1.3


def tw13_limit(reference_rt_us: float, floor_call_us: float) -> float:
    """TW-13's limit per turn (BENCHMARKS.md, revisions): the spec's reference round trip + 10 × the loop floor.

    Not toolwire's own TW-11: a slower round trip must not loosen the end-to-end gate.
    """
    return reference_rt_us + 10 * floor_call_us


def reference_round_trip(units: dict[str, list[Any]]) -> tuple[list[float], str]:
    """The reference round trip per round: 1.3 × the echo + commit floor when this run measured it, else 1.3 × the
    `websockets` echo (a lower, stricter reference); and which of the two it is."""
    for unit, source in (
        (ECHO_COMMIT_UNIT, "1.3 × (echo + one durable SQLite commit)"),
        ("tw11/echo-ws", "1.3 × the `websockets` echo (no echo + commit floor in this run)"),
    ):
        if units.get(unit):
            return [REFERENCE_FACTOR * float(sample["median_us"]) for sample in units[unit]], source
    raise ValueError("TW-13 needs TW-11's echo in the same run")


# (id, criterion, figure, limit, "max" = at most / "min" = at least). TW-11's and TW-12's CPU are gated on the
# echo + commit floor (BENCHMARKS.md, revisions); their ratios to the bare echo (the original table's 1.3×, 2×,
# 1.6×) are reported, not gated. The throughput gate (≥ 0.5× echo) is the original table's: the revisions keep it.
GATES: Final = (
    ("TW-11 median", "median ≤ 1.3× echo + commit", "tw11_commit_median_ratio", 1.3, "max"),
    ("TW-11 p99", "p99 ≤ 1.6× echo + commit", "tw11_commit_p99_ratio", 1.6, "max"),
    ("TW-12 throughput", "round trips/s ≥ 0.5× echo", "tw12_rps_ratio", 0.5, "min"),
    ("TW-12 CPU", "server CPU per round trip ≤ 2× echo + commit", "tw12_commit_cpu_ratio", 2.0, "max"),
    ("TW-12 memory", "≤ 24 KiB per idle connection", "mem_kib", 24.0, "max"),
    ("TW-13", "per turn ≤ reference round trip (1.3 × floor RT) + 10 × loop floor", "tw13_ratio", 1.0, "max"),
)


def _meets(value: float, limit: float, sense: str) -> bool:
    return value <= limit if sense == "max" else value >= limit


def gates(figures: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for gate_id, label, key, limit, sense in GATES:
        if key not in figures:
            continue
        f = figures[key]
        status = "PASS" if _meets(f["median"], limit, sense) else "FAIL"  # the median decides; p25-p75 reported
        out.append(
            {
                "id": gate_id,
                "label": label,
                "figure": key,
                "unit": f["unit"],
                "median": f["median"],
                "p25": f["p25"],
                "p75": f["p75"],
                "limit": limit,
                "sense": sense,
                "status": status,
            }
        )
    return out


# == the run ======================================================================================


def run(
    *,
    rounds: int,
    count: int,
    clients: int,
    per_client: int,
    runs: int,
    mem_rounds: int,
    tw14_count: int,
    only: set[str],
    note: str = "",
    progress: bool = True,
) -> dict[str, Any]:
    started = datetime.now(UTC)
    info = machine()
    request, result_frame = sample_frames()
    payload = echo_payload()
    result: dict[str, Any] = {
        "benchmark": "ws_bench",
        "date": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rounds": rounds,
        "count": count,
        "clients": clients,
        "per_client": per_client,
        "runs": runs,
        "mem_rounds": mem_rounds,
        "note": note,
        "frames": {"tool_use_request": len(request), "tool_use_result": len(result_frame), "echo": len(payload)},
        "clock": "wall: time.perf_counter_ns in the client; server CPU: the server process's CPU clock",
        "loop": "asyncio (anyio.run) in the clients, uvicorn loop='asyncio' / asyncio in the servers",
        "machine": info,
    }
    units: dict[str, list[Any]] = {}
    timed = only & {"tw11", "tw12", "tw13"}
    if timed:
        check_floor()
        servers = start_servers(SERVERS)
        samples_dir = Path(tempfile.mkdtemp(prefix="ws-bench-"))
        try:
            bench = Bench(count, clients, per_client, runs, servers, payload, samples_dir)

            async def main() -> dict[str, list[Any]]:
                async with connected(bench, only):
                    return await run_rounds(bench, rounds, only, progress=progress)

            units = anyio.run(main, backend="asyncio")
        finally:
            for server in servers.values():
                server.stop()
            shutil.rmtree(samples_dir, ignore_errors=True)
        result["units"] = units
    memory = None
    if "mem" in only:
        memory = anyio.run(lambda: memory_rounds(mem_rounds, clients, progress=progress), backend="asyncio")
        result["memory"] = memory
    tw14 = None
    if "tw14" in only:
        if uvloop_available():
            tw14 = tw14_rounds(rounds, tw14_count, progress=progress)
            result["tw14"] = {"count": tw14_count, "units": tw14}
        else:
            result["tw14"] = {"skipped": "uvloop is not installed (pip install uvloop; never a dependency)"}
    info["loadavg_end"] = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    result["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    figures = derive(units, memory, tw14)
    result["figures"] = figures
    result["gates"] = gates(figures)
    return result


# == markdown =====================================================================================


def _fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def _cell(figures: dict[str, Any], key: str) -> str:
    if not key or key not in figures:
        return "–"
    f = figures[key]
    return f"{_fmt(f['median'])} ({_fmt(f['p25'])}–{_fmt(f['p75'])})"


# (id, metric, toolwire, `websockets` echo, ratio, echo + commit, ratio, ASGI echo (diagnostic), goal)
SUMMARY: Final = (
    (
        "TW-11",
        "round trip, median µs",
        "tw11_median_us",
        "tw11_echo_median_us",
        "tw11_median_ratio",
        "tw11_commit_median_us",
        "tw11_commit_median_ratio",
        "tw11_asgi_median_us",
        "≤ 1.3× echo + commit",
    ),
    (
        "TW-11",
        "round trip, p99 µs",
        "tw11_p99_us",
        "tw11_echo_p99_us",
        "tw11_p99_ratio",
        "tw11_commit_p99_us",
        "tw11_commit_p99_ratio",
        "tw11_asgi_p99_us",
        "≤ 1.6× echo + commit",
    ),
    (
        "TW-11",
        "minimal client (diagnostic), median µs",
        "tw11_minimal_median_us",
        "tw11_echo_median_us",
        "",
        "tw11_commit_median_us",
        "",
        "",
        "(report)",
    ),
    ("TW-11", "`await hub.request()` on the server, median µs", "tw11_hub_median_us", "", "", "", "", "", "(report)"),
    (
        "TW-11",
        "server CPU µs per round trip",
        "tw11_cpu_us",
        "tw11_echo_cpu_us",
        "tw11_cpu_ratio",
        "tw11_commit_cpu_us",
        "tw11_commit_cpu_ratio",
        "tw11_asgi_cpu_us",
        "(report)",
    ),
    (
        "TW-12",
        "100 clients: round trips/s",
        "tw12_rps",
        "tw12_echo_rps",
        "tw12_rps_ratio",
        "tw12_commit_rps",
        "tw12_commit_rps_ratio",
        "tw12_asgi_rps",
        "≥ 0.5× echo",
    ),
    (
        "TW-12",
        "100 clients: server CPU µs per round trip",
        "tw12_cpu_us",
        "tw12_echo_cpu_us",
        "tw12_cpu_ratio",
        "tw12_commit_cpu_us",
        "tw12_commit_cpu_ratio",
        "tw12_asgi_cpu_us",
        "≤ 2× echo + commit",
    ),
    (
        "TW-12",
        "100 clients: clients' CPU µs per round trip",
        "tw12_client_cpu_us",
        "tw12_echo_client_cpu_us",
        "",
        "",
        "",
        "",
        "(report)",
    ),
    ("TW-12", "KiB per idle connection (RSS)", "mem_kib", "mem_echo_kib", "", "", "", "mem_asgi_kib", "≤ 24 KiB"),
    (
        "TW-13",
        "20 turns × 1 client call: per-turn wall µs",
        "tw13_per_turn_us",
        "",
        "tw13_ratio",
        "",
        "",
        "",
        "≤ reference round trip + 10 × floor",
    ),
    ("TW-13", "limit: reference round trip + 10 × floor (µs)", "tw13_limit_us", "", "", "", "", "", ""),
    (
        "TW-14",
        "uvloop: round trip, median µs",
        "tw14_median_us",
        "tw14_echo_median_us",
        "tw14_median_ratio",
        "",
        "",
        "",
        "(report)",
    ),
    (
        "TW-14",
        "uvloop: round trip, p99 µs",
        "tw14_p99_us",
        "tw14_echo_p99_us",
        "tw14_p99_ratio",
        "",
        "",
        "",
        "(report)",
    ),
    (
        "TW-14",
        "uvloop: server CPU µs per round trip",
        "tw14_cpu_us",
        "tw14_echo_cpu_us",
        "",
        "",
        "",
        "",
        "(report)",
    ),
)


def render_markdown(result: dict[str, Any]) -> str:
    m, figures = result["machine"], result["figures"]
    load = ", ".join(f"{x:.2f}" for x in m["loadavg"]) if m.get("loadavg") else "n/a"
    load_end = ", ".join(f"{x:.2f}" for x in m["loadavg_end"]) if m.get("loadavg_end") else "n/a"
    frames = result["frames"]
    tw14 = result.get("tw14", {})
    lines = [
        BEGIN,
        "## WebSocket client tools (TW-11 … TW-14)",
        "",
        f"Measured {result['date']} on {m['cpu']} ({m['nproc']} CPUs), Python {m['python']}, {m['platform']}; "
        f"toolwire {m['toolwire']} ({m['toolwire_commit']}). {result['rounds']} interleaved rounds; per round "
        f"TW-11 {result['count']:,} sequential round trips per server, TW-12 {result['clients']} clients × "
        f"{result['per_client']} round trips, TW-13 {result['runs']} runs of 20 turns and of 0 turns; memory "
        f"{result['mem_rounds']} rounds of fresh servers with {result['clients']} idle connections"
        + (f"; TW-14 {tw14['count']:,} round trips per unit under uvloop" if "count" in tw14 else "")
        + f". Frames: ToolUseRequest {frames['tool_use_request']} B, ToolUseResult {frames['tool_use_result']} B, "
        f"echo {frames['echo']} B. Load average before {load}, after {load_end}; took {result['duration_s']} s.",
        *(["", f"Note: {result['note']}"] if result.get("note") else []),
        "",
        "Servers in child processes on loopback, clients in the benchmark's process (`websockets` asyncio "
        "connections, deflate off). toolwire: `create_app`'s real `/ws` route with a `SqliteStore`, under uvicorn "
        "configured as `toolwire serve`, and the shipped Python client (`toolwire.client.connect`; TW-11 with "
        "the minimal client too, a diagnostic); its round trip is the client-side time between consecutive "
        "ToolUseRequests while the server calls `ClientHub.request` back to back (request persisted and "
        "written, the client's ToolUseResult, the result delivered and persisted; both ends acknowledge "
        "late, every 16 stanzas or 0.2 s, as docs/protocol.md says). Echo: `send` to `recv`. Echo + commit "
        "(the floor TW-11 and TW-12's CPU are gated on): the same `websockets` echo committing each frame "
        "first, one `BEGIN IMMEDIATE` / INSERT / `COMMIT` on a WAL file with `synchronous = NORMAL`. The "
        "ratios to the bare echo are reported, not gated (but TW-12's throughput). The ASGI echo (Starlette "
        "under uvicorn, same config) is a diagnostic: the share of the ASGI stack. Cells: median (p25–p75) "
        "across rounds; ratios per round.",
        "",
        "| id | metric | toolwire | `websockets` echo | ratio | echo + commit | ratio | ASGI echo | goal |",
        "|---|---|--:|--:|--:|--:|--:|--:|---|",
    ]
    for gate_id, metric, tw_key, echo_key, ratio_key, commit_key, commit_ratio_key, asgi_key, goal in SUMMARY:
        if tw_key not in figures:
            continue
        lines.append(
            f"| {gate_id} | {metric} | **{_cell(figures, tw_key)}** | {_cell(figures, echo_key)} "
            f"| {_cell(figures, ratio_key)} | {_cell(figures, commit_key)} | {_cell(figures, commit_ratio_key)} "
            f"| {_cell(figures, asgi_key)} | {goal} |"
        )
    if "skipped" in tw14:
        lines += ["", f"TW-14 not run: {tw14['skipped']}."]
    lines += ["", "| gate | criterion | median | p25 | p75 | limit | result |", "|---|---|--:|--:|--:|--:|---|"]
    for g in result["gates"]:
        lines.append(
            f"| {g['id']} | {g['label']} | {_fmt(g['median'])} {g['unit']} | {_fmt(g['p25'])} | {_fmt(g['p75'])} "
            f"| {_fmt(g['limit'])} | **{g['status']}** |"
        )
    lines += ["", "<details><summary>All figures</summary>", ""]
    lines += ["| figure | median | p25–p75 |", "|---|--:|--:|"]
    for f in figures.values():
        lines.append(f"| {f['label']} | {_fmt(f['median'])} {f['unit']} | {_fmt(f['p25'])}–{_fmt(f['p75'])} |")
    lines += ["", "</details>", "", END]
    return "\n".join(lines)


def print_summary(result: dict[str, Any]) -> None:
    for key, f in result["figures"].items():
        print(f"{key:<24} {f['label']:<72} {_fmt(f['median']):>9} ({_fmt(f['p25'])}–{_fmt(f['p75'])})")
    print()
    for g in result["gates"]:
        print(
            f"{g['id']:<18} {g['label']:<44} median {_fmt(g['median']):>8} p25 {_fmt(g['p25']):>8} "
            f"p75 {_fmt(g['p75']):>8} limit {_fmt(g['limit']):>6}  {g['status']}"
        )


# == profiling (by hand) ==========================================================================


def profile(path: Path, count: int, scenario: str, kind: str = "toolwire", clients: int = 100) -> None:
    """Run TW-11 (`count` round trips), TW-12 (`clients` clients, `count` round trips in all) or
    TW-13 (`count` ÷ 20 runs of 20 turns) against a toolwire server (`kind`: on SQLite, or
    `toolwire-memory`) under cProfile; write its stats to `path` and print the top functions."""
    server = start_server(kind, profile=path)
    samples_dir = Path(tempfile.mkdtemp(prefix="ws-bench-prof-"))
    try:
        per_client = max(1, count // clients)
        runs = max(1, count // (2 * TURNS))
        bench = Bench(count, clients, per_client, runs, {kind: server, "toolwire": server}, echo_payload(), samples_dir)

        async def main() -> dict[str, float]:
            if scenario == "tw13":
                return await bench.tw13(kind)
            async with AsyncExitStack() as stack:
                if scenario == "tw12":
                    for _ in range(clients):
                        client = await stack.enter_async_context(ToolClient.open(server.url))
                        await client.register()
                        bench.tool_many.append(client)
                    return await bench.tw12_toolwire()
                client = await stack.enter_async_context(ToolClient.open(server.url))
                await client.register()
                bench.tool_single[kind] = client
                return await bench.tw11_toolwire(kind, count)

        print(json.dumps(anyio.run(main, backend="asyncio")))
    finally:
        server.stop()
        shutil.rmtree(samples_dir, ignore_errors=True)
    import pstats

    pstats.Stats(str(path)).sort_stats("tottime").print_stats(40)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=MIN_ROUNDS, help=f"interleaved rounds (≥ {MIN_ROUNDS})")
    parser.add_argument("--count", type=int, default=10_000, help="TW-11: sequential round trips per unit")
    parser.add_argument("--clients", type=int, default=100, help="TW-12: connected clients")
    parser.add_argument("--per-client", type=int, default=50, help="TW-12: round trips per client per unit")
    parser.add_argument("--runs", type=int, default=10, help="TW-13: runs of 20 turns (and of 0) per round")
    parser.add_argument("--mem-rounds", type=int, default=MIN_ROUNDS, help="rounds of fresh servers for memory")
    parser.add_argument("--tw14-count", type=int, default=5_000, help="TW-14: round trips per unit under uvloop")
    parser.add_argument("--only", default="tw11,tw12,tw13,mem,tw14", help="groups: tw11, tw12, tw13, mem, tw14")
    parser.add_argument("--json", type=Path, default=None, help="results file (bench/results/ws-DATE.json)")
    parser.add_argument("--markdown", type=Path, default=DEFAULT_MARKDOWN, help="the docs page to render into")
    parser.add_argument("--no-markdown", action="store_true", help="do not touch the docs page")
    parser.add_argument("--note", default="", help="a remark kept with the results (e.g. the machine's load)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a gate fails")
    parser.add_argument("--profile", type=Path, default=None, help="profile a toolwire server instead (cProfile)")
    parser.add_argument(
        "--profile-scenario", choices=("tw11", "tw12", "tw13"), default="tw11", help="what --profile runs"
    )
    parser.add_argument(
        "--profile-server", choices=("toolwire", "toolwire-memory"), default="toolwire", help="the store --profile uses"
    )
    parser.add_argument("--server", choices=SERVERS, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio", help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.server is not None:
        return serve_child(args.server, args.loop, args.data_dir or Path(tempfile.mkdtemp()), args.profile)
    if args.profile is not None:
        profile(args.profile, args.count, args.profile_scenario, args.profile_server, args.clients)
        return 0
    only = {part.strip() for part in args.only.split(",") if part.strip()}
    if unknown := only - {"tw11", "tw12", "tw13", "mem", "tw14"}:
        parser.error(f"unknown groups {', '.join(sorted(unknown))}")
    if args.rounds < MIN_ROUNDS:
        print(f"warning: {args.rounds} rounds; BENCHMARKS.md asks for at least {MIN_ROUNDS}", file=sys.stderr)
    result = run(
        rounds=args.rounds,
        count=args.count,
        clients=args.clients,
        per_client=args.per_client,
        runs=args.runs,
        mem_rounds=args.mem_rounds,
        tw14_count=args.tw14_count,
        only=only,
        note=args.note,
    )
    print_summary(result)
    json_path: Path = args.json or RESULTS_DIR / f"ws-{result['date'][:10]}.json"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(f"\nwrote {json_path}", file=sys.stderr)
    if not args.no_markdown:
        write_section(args.markdown, render_markdown(result), BEGIN, END)
        print(f"wrote {args.markdown}", file=sys.stderr)
    failed = [g["id"] for g in result["gates"] if g["status"] == "FAIL"]
    return 1 if args.strict and failed else 0


if __name__ == "__main__":
    sys.exit(main())
