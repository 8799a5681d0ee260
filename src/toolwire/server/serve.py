"""`toolwire serve`: run the server with uvicorn, the user's agent or the built-in example one.

```
toolwire serve                                  # the example agent, the local model, 127.0.0.1:8765
toolwire serve --app myapp:make_agent --port 9000 --tokens tokens.txt --allow-origin https://app.example
toolwire serve --app myapp:make_agent --mcp     # and its function tools over MCP at /mcp, same tokens
toolwire serve --mcp-servers mcp.json           # and the tools of the MCP servers the file lists
toolwire serve --app myapp:make_agent --agui    # and the agent to AG-UI front ends at POST /agui
toolwire serve --app myapp:make_agent --ai-sdk  # and to AI SDK front ends (useChat) at POST /ai-sdk/chat
```

`--app module:factory` names a function returning an `Agent`; if it has a `store` parameter it
gets the server's store (the SQLite file in `--data-dir`, or the PostgreSQL database of
`--store postgresql://...`), so conversations survive restarts.
Without `--token`, `TOOLWIRE_TOKEN` or `--tokens`, the token is the one kept in `DATA_DIR/token`
(made on the first start, owner-only), so its clients survive restarts too.

`--mcp-servers FILE` adds the MCP servers of a JSON file (`{"mcpServers": {...}}`, see
`toolwire.interop.mcp.config_file`) to the agent's toolsets, the example agent's or `--app`'s.
The agent is entered (`async with agent`) before the server listens, so they start then (a
server that does not start stops `toolwire serve` with a message naming it) and stop with it.
"""

from __future__ import annotations

import gc
import inspect
import logging
import os
import socket
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio

from .._apps import find_app
from ..errors import UsageError
from ..loop import Agent
from ..models import import_extra
from ..store import Store
from .auth import TokenAuth, kept_token, redact
from .replica import LeaseSettings, default_replica_id

if TYPE_CHECKING:
    from ..interop.mcp import ConfiguredServer
    from .shutdown import GracefulServer

__all__ = ["ServeOptions", "listen", "load_agent", "serve"]

KEEPALIVE_SECONDS = 5.0
"""WebSocket ping interval and timeout: a dead client is noticed within 10 s (invoke timeout 30 s)."""
MAX_FRAME_BYTES = 1024 * 1024
TOKEN_FILE = "token"
"""The file of `--data-dir` that keeps the generated token (mode 0600)."""
SHUTDOWN_SECONDS = 3
"""How long a stopping server waits for connections and runs before it cancels them."""

INSTRUCTIONS = (
    "You are a helpful assistant. Use the tools when they help: notes (list_notes, add_note, delete_note), "
    "disk usage (local_disk_usage), exchange rates (lookup_exchange_rate), and any tools the user's "
    "application provides. Answer briefly."
)


GC_THRESHOLD = 10_000
"""`toolwire serve`'s allocations between two young garbage collections (Python's default: 700)."""


def tune_gc(threshold: int) -> None:
    """Set the garbage collector up for a long-running server; `threshold` 0 leaves Python's settings.

    A server's heap is mostly long-lived: what start-up made (modules, schemas, the app, the agent)
    and what it keeps (conversations, decoded transcripts). With Python's default thresholds the
    collector runs every 700 allocations and, every so often, goes through all of it: at 200
    conversations collections took 10–15 % of the server's CPU and a full one stopped the event
    loop for ≈ 80 ms (bench/admission_bench.py). So: what start-up made is collected once and
    frozen (never looked at again), and young collections come every `threshold` allocations,
    middle ones every 20 of those. Cycles are still collected, later.
    """
    if threshold <= 0:
        return
    gc.collect()
    gc.freeze()
    _, middle, full = gc.get_threshold()
    gc.set_threshold(threshold, max(middle, 20), full)


@dataclass(kw_only=True)
class ServeOptions:
    """What `toolwire serve` was asked for."""

    app: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    data_dir: Path = Path(".toolwire")
    store: str = "sqlite"
    """`sqlite` (the file in `data_dir`) or a `postgresql://` URL (`open_store`)."""
    model: str | None = None
    token: str | None = None
    tokens_file: Path | None = None
    allowed_origins: list[str] = field(default_factory=list[str])
    max_conversations: int = 1_000
    """Conversations one principal may own (`create_app(max_conversations=...)`)."""
    max_runs: int | None = None
    """Runs in progress at once (`create_app(max_runs=...)`); None or 0: no limit."""
    run_queue: int = 256
    """Runs that may wait for a slot (`create_app(run_queue=...)`)."""
    refusal_burst: int = 100
    """Refused frames a principal's connections may cause at once (`RefusalLimit.burst`)."""
    refusal_rate: float = 10.0
    """Refused frames a principal's connections may cause per second after that (`RefusalLimit.per_second`)."""
    mcp: bool = False
    """Also serve the agent's function tools over MCP at `/mcp`, with the same tokens (`mount_mcp`)."""
    agui: bool = False
    """Also serve the agent to AG-UI front ends at `POST /agui`, with the same tokens (`mount_agui`)."""
    ai_sdk: bool = False
    """Also serve the agent to AI SDK front ends (`useChat`) at `POST /ai-sdk/chat` (`mount_ai_sdk`)."""
    mcp_servers: Path | None = None
    """A JSON file of MCP servers whose tools the agent gets too (`toolwire.interop.mcp.load_servers`)."""
    replica_id: str | None = None
    """With a PostgreSQL store: this replica's name in the leases (`LeaseSettings.replica_id`; None: host:pid)."""
    lease_ttl: float | None = None
    """Seconds a lease lasts unless renewed (None: `LeaseSettings.ttl`)."""
    lease_renew: float | None = None
    """Seconds between renewals (None: `LeaseSettings.renew_every`)."""
    lease_drain: float | None = None
    """Seconds a hand-off waits for the run to stop (None: `LeaseSettings.drain`)."""
    lease_wait: float | None = None
    """Seconds a connection waits for another replica to hand over (None: `LeaseSettings.wait`)."""
    gc_threshold: int = GC_THRESHOLD
    """Allocations between two young garbage collections (`tune_gc`); 0: Python's own settings."""

    def lease_settings(self) -> LeaseSettings | None:
        """The leases of a server sharing its store with other replicas (a PostgreSQL store); None with SQLite.

        Raises:
            UsageError: The renewal interval is not under the TTL.
        """
        if not self.store.startswith(("postgresql://", "postgres://")):
            return None
        defaults = LeaseSettings(replica_id=self.replica_id or default_replica_id())
        ttl = defaults.ttl if self.lease_ttl is None else self.lease_ttl
        try:
            return LeaseSettings(
                replica_id=defaults.replica_id,
                ttl=ttl,
                renew_every=min(defaults.renew_every, ttl / 3) if self.lease_renew is None else self.lease_renew,
                drain=defaults.drain if self.lease_drain is None else self.lease_drain,
                wait=defaults.wait if self.lease_wait is None else self.lease_wait,
            )
        except ValueError as exc:
            raise UsageError(f"--lease-*: {exc}") from None


def load_agent(spec: str | None, store: Store, model: str | None, *, log_dir: Path | None = None) -> Agent:
    """The agent to serve: `module:factory`'s, or the built-in example agent.

    Args:
        spec: `module:factory`, or None for the example agent.
        store: The server's store, for the agent.
        model: The example agent's model spec (`model_from_spec`).
        log_dir: Where the example agent's local model server process writes its log.

    Raises:
        UsageError: The factory cannot be found, cannot be called with `store=` or without
            arguments, or does not return an `Agent`; or the example agent's model spec is bad
            (unknown, or a GGUF file that does not exist), or no model is configured.
    """
    if spec is None:
        from ..examples import example_toolbox
        from ..models.select import model_from_spec
        from ..policy import PermissionPolicy

        return Agent(
            model_from_spec(model, log_dir=log_dir),
            tools=example_toolbox(),
            instructions=INSTRUCTIONS,
            store=store,
            policy=PermissionPolicy(store=store),
        )
    factory: Any = find_app(spec)
    agent = _call_factory(spec, factory, store)
    if not isinstance(agent, Agent):
        raise UsageError(f"--app {spec} returned {type(agent).__name__}, not an Agent")
    return agent


def _call_factory(spec: str, factory: Any, store: Store) -> Any:
    """Call `factory(store=store)` if it has a `store` parameter, else `factory()`.

    Raises:
        UsageError: It is not callable, or cannot be called so (other required parameters).
    """
    if not callable(factory):
        raise UsageError(f"--app {spec} is a {type(factory).__name__}, not a function returning an Agent")
    call: Callable[..., Any] = factory
    try:
        signature = inspect.signature(call)
    except (TypeError, ValueError):  # no signature to read (some builtins): call it bare
        return call()
    arguments = {"store": store} if "store" in signature.parameters else {}
    try:
        signature.bind(**arguments)
    except TypeError:
        raise UsageError(
            f"--app {spec} must take no arguments or just 'store' (the server's store), not {signature}"
        ) from None
    return call(**arguments)


def _auth(options: ServeOptions, out: TextIO) -> tuple[TokenAuth, str | None]:
    """The server's tokens, and the token it printed (the data directory's), if any.

    A token given by `--tokens`, `--token` or `TOOLWIRE_TOKEN` is used as it is, never printed
    nor written; otherwise the one kept in `DATA_DIR/token` (made on the first start), so that
    a restart does not lock out the pages and clients that connected before.
    """
    if options.tokens_file is not None:
        return TokenAuth.from_file(options.tokens_file), None
    token = options.token or os.environ.get("TOOLWIRE_TOKEN")
    if token is None:
        path = options.data_dir / TOKEN_FILE
        token = kept_token(path)
        print(f"token: {token}", file=out)
        print(f"token file: {path} (the next start uses it too; delete it for a new token)", file=out)
        return TokenAuth.single(token), token
    return TokenAuth.single(token), None


class _Redact(logging.Filter):
    """Hide `?token=` values in uvicorn's access and connection logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(arg) if isinstance(arg, str) else arg for arg in record.args)
        record.msg = redact(str(record.msg))
        return True


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket for uvicorn, whose connections get `TCP_NODELAY`.

    asyncio sets `TCP_NODELAY` on a transport only when its socket says `IPPROTO_TCP`, and an
    accepted socket inherits the listener's protocol number, which `socket.create_server` leaves at
    0. Without it, Nagle's algorithm holds a frame written right after another (an acknowledgement
    then a ToolUseRequest) until the client's delayed ACK: about 40 ms per client tool call.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # as socket.create_server
    try:
        if os.name == "posix":
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # inherited by accepted sockets on Linux
        listener.bind((host, port))
        listener.listen()
    except BaseException:
        listener.close()
        raise
    return listener


def open_store(options: ServeOptions) -> tuple[Store, str, Callable[[], None]]:
    """The server's store as `--store` asks, where it is (no password), and what releases it.

    `sqlite`: the file in `--data-dir`, which the server holds alone (`DataDirLock`).
    `postgresql://...` (or `postgres://`): a `PostgresStore`, connected when the server starts.

    Raises:
        UsageError: Another value; another server holds the data directory; the `postgres`
            extra is missing.
    """
    if options.store == "sqlite":
        from ..store.lock import DataDirLock
        from ..store.sqlite import SqliteStore

        lock = DataDirLock(options.data_dir)  # one server per data directory (released at exit, kill -9 too)
        lock.acquire()
        try:
            store = SqliteStore.in_directory(options.data_dir)
        except BaseException:
            lock.release()
            raise
        return store, str(store.path), lock.release
    if options.store.startswith(("postgresql://", "postgres://")):
        from ..store.postgres import PostgresStore

        postgres = PostgresStore(options.store)
        return postgres, postgres.location, lambda: None
    raise UsageError("--store: sqlite (the file in --data-dir), or a PostgreSQL URL (postgresql://...)")


def serve(options: ServeOptions, *, out: TextIO = sys.stdout) -> int:
    """Run the server until interrupted; returns the exit status.

    The agent's model is entered (`async with`) for the server's lifetime: the local model's
    server process starts before the first connection is accepted (so a broken model fails here)
    and stops with the server, also on SIGINT and SIGTERM.

    Raises:
        UsageError: A bad option, a missing extra, no model; the message says what to do.
        ProviderError: The model could not start (e.g. the local model's file is not a GGUF file).
    """
    uvicorn = import_extra("uvicorn", "server")
    from .app import create_app
    from .refusals import RefusalLimit
    from .shutdown import GracefulServer

    store, where, release = open_store(options)
    try:
        agent = load_agent(options.app, store, options.model, log_dir=options.data_dir)
        if agent.store is not store:
            raise UsageError(f"--app {options.app}: create the Agent with the store it is given (a 'store' parameter)")
        servers: list[ConfiguredServer] = []
        if options.mcp_servers is not None:
            from ..interop.mcp import load_servers  # the MCP SDK loads only when asked for

            servers = load_servers(options.mcp_servers)
            agent.add_toolsets(servers)
        auth, printed = _auth(options, out)
        app = create_app(
            agent,
            auth=auth,
            allowed_origins=options.allowed_origins,
            max_conversations=options.max_conversations,
            max_runs=options.max_runs or None,
            run_queue=options.run_queue,
            refusal_limit=RefusalLimit(burst=options.refusal_burst, per_second=options.refusal_rate),
            leases=options.lease_settings(),
        )
        if options.mcp:
            from ..interop.mcp_http import mount_mcp  # the MCP SDK loads only when asked for

            mount_mcp(app)
        if options.agui:
            from ..interop.agui.endpoint import mount_agui  # ag-ui-protocol loads only when asked for

            mount_agui(app)
        if options.ai_sdk:
            from ..interop.aisdk.chat_endpoint import mount_ai_sdk

            mount_ai_sdk(app)
    except BaseException:
        anyio.run(store.aclose)
        release()
        raise
    for name in ("uvicorn.access", "uvicorn.error"):
        logging.getLogger(name).addFilter(_Redact())
    tune_gc(options.gc_threshold)
    config = uvicorn.Config(
        app,
        ws_max_size=MAX_FRAME_BYTES,
        ws_ping_interval=KEEPALIVE_SECONDS,
        ws_ping_timeout=KEEPALIVE_SECONDS,
        ws_per_message_deflate=False,
        # /mcp's sessions, /agui's and /ai-sdk/chat's runs live in the lifespan
        lifespan="on" if options.mcp or options.agui or options.ai_sdk else "off",
        log_level="info",
        # Runs are parked before connections close (`GracefulServer`); their calls stay in the
        # ledger and resume with the next start.
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,
    )
    loop_factory = config.get_loop_factory()
    server = GracefulServer(config, app.state.toolwire, grace=SHUTDOWN_SECONDS)
    try:
        anyio.run(
            _run,
            options,
            agent,
            (store, where),
            server,
            out,
            printed,
            servers,
            backend_options={"loop_factory": loop_factory},
        )
    finally:
        release()
    return 0


async def _run(
    options: ServeOptions,
    agent: Agent,
    kept: tuple[Store, str],
    server: GracefulServer,
    out: TextIO,
    printed: str | None,
    servers: list[ConfiguredServer],
) -> None:
    """Enter the model and the agent (its toolsets: MCP servers start), listen, serve until a signal.

    The store is opened first (a PostgreSQL store connects and migrates its schema: a database
    that cannot be reached stops the server here). Then the toolsets and the model stop, in
    reverse order, and the store is closed.
    """
    from ..store.postgres_database import PostgresDatabase  # (psycopg loads only with a PostgresStore)
    from .app import STATIC

    store, where = kept
    async with AsyncExitStack() as stack:
        stack.push_async_callback(store.aclose)
        if isinstance(store, PostgresDatabase):
            await store.open()
        if isinstance(model := agent.model, AbstractAsyncContextManager):
            await stack.enter_async_context(cast("AbstractAsyncContextManager[Any]", model))
        await stack.enter_async_context(agent)
        # Leases are renewed while the server serves, and released once its runs were parked.
        await stack.enter_async_context(server.toolwire.replicating())
        listener = listen(options.host, options.port)
        stack.callback(listener.close)
        host, port = listener.getsockname()[:2]

        def started() -> None:
            # Printed once the server listens and its signal handlers are in place: from here on,
            # SIGTERM and SIGINT stop it gracefully (`GracefulServer`): the runs are parked, then
            # `serve` returns, the model and the store are closed, and the exit status is 0.
            for configured in servers:
                collapsed = " (collapsed)" if configured.toolset is not configured.mcp else ""
                print(f"MCP server {configured.name!r}: {len(configured.mcp.toolbox)} tools{collapsed}", file=out)
            if (replica := server.toolwire.replica) is not None:
                settings = replica.settings
                print(
                    f"replica {settings.replica_id}: leases of {settings.ttl:g} s,"
                    f" renewed every {settings.renew_every:g} s",
                    file=out,
                )
            print(f"toolwire serving ws://{host}:{port}/ws (model: {agent.model.name}, data: {where})", file=out)
            if options.mcp:
                print(f"mcp: http://{host}:{port}/mcp (Authorization: Bearer TOKEN)", file=out)
            if options.agui:
                print(f"agui: http://{host}:{port}/agui (POST, Authorization: Bearer TOKEN)", file=out)
            if options.ai_sdk:
                print(f"ai-sdk: http://{host}:{port}/ai-sdk/chat (POST, Authorization: Bearer TOKEN)", file=out)
            if (STATIC / "index.html").is_file():
                # The token goes in the fragment: browsers never send it to the server, so no log sees it.
                print(f"chat page: http://{host}:{port}/" + (f"#token={printed}" if printed else ""), file=out)
            out.flush()

        server.on_started = started
        await server.serve(sockets=[listener])
