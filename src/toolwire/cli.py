"""The `toolwire` command: `toolwire chat` talks to a model that can call the example tools.

```
toolwire chat                          # the local model when installed, fully offline
toolwire chat --model openai:gpt-4o-mini
toolwire chat --data-dir .toolwire --thread THREAD_ID   # continue a stored conversation
toolwire chat --url ws://127.0.0.1:8765/ws --token TOKEN # chat through a toolwire server (docs/client.md)
toolwire mcp serve --app myapp:make_agent                # its tools to an MCP client, over stdio (docs/mcp-serve.md)
toolwire mcp serve --app myapp:make_agent --http         # ... over Streamable HTTP, http://127.0.0.1:8766/mcp
toolwire conversations list --url http://127.0.0.1:8765 --token TOKEN   # your conversations on a server
toolwire conversations show|delete ID --url ... [--force]              # its transcript; delete it
```

Both chats follow one set of rules (docs/chat.md): Ctrl-C stops the run in progress (on the server
too, with `--url`), prints how to continue and exits with 130; a `--thread` that names no
conversation is refused with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio

from . import __version__
from .cancellation import Cancellation
from .errors import ClientDisconnected, ProviderError, UsageError
from .loop import Agent, ModelRequestStarted, RunFinished
from .models import Model, TextDelta
from .pipeline import ToolCallFinished, ToolCallStarted
from .policy import ConsentAnswer, ConsentHandler, ConsentRequest, PermissionPolicy
from .store import Store
from .terminal import CtrlC, ctrl_c, input_line, read_in_background

if TYPE_CHECKING:
    from .client import Client
    from .protocol import ConsentRequestBody

__all__ = ["chat_session", "main", "remote_chat_session"]

INSTRUCTIONS = (
    "You are a helpful assistant in a terminal. Use the tools when they help: notes (list_notes, add_note, "
    "delete_note), disk usage of this machine (local_disk_usage) and exchange rates (lookup_exchange_rate). "
    "Answer briefly."
)

STOPPING = "\n  Stopping the run (Ctrl-C again leaves at once)."


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `toolwire` command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="toolwire", description="Governed, reliable LLM tool calling.")
    parser.add_argument("--version", action="version", version=f"toolwire {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="chat in the terminal with a model that can call example tools")
    chat.add_argument(
        "--model", help="local, local:PATH.gguf, openai:NAME or anthropic:NAME (default: TOOLWIRE_MODEL, else local)"
    )
    chat.add_argument("--data-dir", type=Path, help="keep conversations in DIR/toolwire.sqlite3 (default: in memory)")
    chat.add_argument("--thread", help="continue this conversation, which must exist (with --data-dir, or --url)")
    chat.add_argument("--url", help="chat through a toolwire server, e.g. ws://127.0.0.1:8765/ws (needs 'server')")
    chat.add_argument("--token", help="the server's token, with --url (default: TOOLWIRE_TOKEN)")
    serve = commands.add_parser("serve", help="run the WebSocket server (needs the 'server' extra)")
    serve.add_argument("--app", help="module:factory returning your Agent (default: the built-in example agent)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    serve.add_argument("--data-dir", type=Path, default=Path(".toolwire"), help="where conversations are kept")
    serve.add_argument(
        "--store",
        default=os.environ.get("TOOLWIRE_STORE", "sqlite"),
        metavar="STORE",
        help="sqlite (DATA_DIR/toolwire.sqlite3, the default) or a PostgreSQL URL, postgresql://USER@HOST:PORT/DB"
        " (needs the 'postgres' extra; default: TOOLWIRE_STORE, else sqlite)",
    )
    serve.add_argument("--model", help="for the example agent: local, openai:NAME, anthropic:NAME (see chat)")
    serve.add_argument(
        "--token", help="the token clients present (default: TOOLWIRE_TOKEN, else the one kept in DATA_DIR/token)"
    )
    serve.add_argument("--tokens", type=Path, help="a file of 'PRINCIPAL TOKEN' lines, one principal per token")
    serve.add_argument(
        "--allow-origin", action="append", default=[], help="a browser origin allowed to connect (repeatable)"
    )
    serve.add_argument(
        "--max-conversations",
        type=_positive,
        default=1_000,
        metavar="N",
        help="conversations one principal may own; a new one beyond is refused (default 1000)",
    )
    serve.add_argument(
        "--max-runs",
        type=_whole,
        default=None,
        metavar="N",
        help="agent runs in progress at once, over all conversations; more wait in a queue (default: no limit)",
    )
    serve.add_argument(
        "--run-queue",
        type=_whole,
        default=256,
        metavar="N",
        help="runs that may wait for a slot; a message beyond is refused with ErrorMessage 503 (default 256)",
    )
    serve.add_argument(
        "--gc-threshold",
        type=_whole,
        default=10_000,
        metavar="N",
        help="allocations between two young garbage collections; 0: Python's own settings (default 10000)",
    )
    serve.add_argument(
        "--refusal-burst",
        type=_positive,
        default=100,
        metavar="N",
        help="refused frames a principal's connections may cause at once before they are closed (default 100)",
    )
    serve.add_argument(
        "--refusal-rate",
        type=float,
        default=10.0,
        metavar="R",
        help="refused frames a principal's connections may cause per second after the burst (default 10)",
    )
    serve.add_argument(
        "--mcp",
        action="store_true",
        help="also serve the agent's function tools over MCP at /mcp (same tokens as /ws; docs/mcp-serve.md)",
    )
    serve.add_argument(
        "--agui",
        action="store_true",
        help="also serve the agent to AG-UI front ends at POST /agui (same tokens as /ws; docs/frontends.md)",
    )
    serve.add_argument(
        "--ai-sdk",
        action="store_true",
        help="also serve the agent to AI SDK front ends (useChat) at POST /ai-sdk/chat (docs/frontends.md)",
    )
    serve.add_argument(
        "--mcp-servers",
        type=Path,
        metavar="FILE",
        help='give the agent the tools of the MCP servers a JSON file lists ({"mcpServers": ...}; docs/mcp.md)',
    )
    replicas = serve.add_argument_group(
        "replicas", "with --store postgresql://...: several servers share the database, one per conversation at a time"
    )
    replicas.add_argument("--replica-id", metavar="NAME", help="this server's name in the leases (default: host:pid)")
    replicas.add_argument(
        "--lease-ttl", type=_positive_seconds, metavar="S", help="seconds a conversation's lease lasts unless renewed"
        " (default 15): how long a dead replica's conversations wait for another"
    )  # fmt: skip
    replicas.add_argument(
        "--lease-renew", type=_positive_seconds, metavar="S", help="seconds between renewals of the leases (default 5)"
    )
    replicas.add_argument(
        "--lease-drain", type=_seconds, metavar="S",
        help="seconds a replica asked to hand a conversation over waits for its run to stop (default 5)",
    )  # fmt: skip
    replicas.add_argument(
        "--lease-wait", type=_seconds, metavar="S",
        help="seconds a connection waits for another replica to hand its conversation over (default 8)",
    )  # fmt: skip
    mcp = commands.add_parser("mcp", help="MCP: serve toolwire's tools to MCP clients (needs the 'mcp' extra)")
    mcp_commands = mcp.add_subparsers(dest="mcp_command", required=True)
    mcp_serve = mcp_commands.add_parser(
        "serve", help="serve an application's tools over stdio or Streamable HTTP (docs/mcp-serve.md)"
    )
    mcp_serve.add_argument(
        "--app",
        required=True,
        help="module:factory returning your Agent, Pipeline or Toolbox (called without arguments)",
    )
    mcp_serve.add_argument("--http", action="store_true", help="serve over Streamable HTTP at /mcp instead of stdio")
    mcp_serve.add_argument("--host", default="127.0.0.1", help="with --http: the address to bind (default 127.0.0.1)")
    mcp_serve.add_argument("--port", type=int, default=8766, help="with --http: the port (default 8766; 0 picks one)")
    mcp_serve.add_argument(
        "--token",
        help="with --http: the Bearer token clients present (default: TOOLWIRE_TOKEN, else a new one, printed)",
    )
    mcp_serve.add_argument(
        "--no-token",
        action="store_true",
        help="with --http on loopback: no authentication (any process of this machine can call the tools)",
    )
    mcp_serve.add_argument("--tokens", type=Path, help="with --http: a file of 'PRINCIPAL TOKEN' lines")
    doctor = commands.add_parser("doctor", help="check this installation and say what to do about each problem")
    doctor.add_argument("--data-dir", type=Path, default=Path(".toolwire"), help="the data directory to check")
    doctor.add_argument("--host", default="127.0.0.1", help="the address `toolwire serve` would listen on")
    doctor.add_argument("--port", type=int, default=8765, help="the port `toolwire serve` would listen on")
    conversations = commands.add_parser(
        "conversations",
        help="your conversations on a running server (--url), or those of a data directory (list, cancel)",
    )
    operations = conversations.add_subparsers(dest="operation", required=True)
    listing = operations.add_parser("list", help="every conversation and how its last run stands")
    listing.add_argument("--data-dir", type=Path, default=Path(".toolwire"), help="the server's data directory")
    _remote_options(listing, required=False)
    listing.add_argument("--limit", type=_positive, default=100, help="with --url: list at most N (default 100)")
    show = operations.add_parser("show", help="a conversation's transcript, from a running server")
    show.add_argument("conversation", help="the conversation's id (see 'list')")
    show.add_argument("--json", action="store_true", help="print the server's JSON as it is")
    _remote_options(show, required=True)
    delete = operations.add_parser(
        "delete", help="delete a conversation on a running server, with its ledger and state"
    )
    delete.add_argument("conversation", help="the conversation's id (see 'list')")
    delete.add_argument("--force", action="store_true", help="cancel its run in progress first (else it is refused)")
    _remote_options(delete, required=True)
    cancel = operations.add_parser("cancel", help="close a conversation's unfinished run (the server must be stopped)")
    cancel.add_argument("conversation", help="the conversation's id (see 'list')")
    cancel.add_argument("--data-dir", type=Path, default=Path(".toolwire"), help="the server's data directory")
    cancel.add_argument("--reason", default="Canceled by the operator", help="the reason its open calls give")
    args = parser.parse_args(argv)
    try:
        if args.command == "doctor":
            from .doctor import checks, report

            return report(checks(data_dir=args.data_dir, host=args.host, port=args.port), sys.stdout)
        if args.command == "conversations" and getattr(args, "url", None) is not None:
            return _remote_conversations(args)
        if args.command == "conversations":
            return anyio.run(_conversations, args)
        if args.command == "mcp":
            return _mcp_serve(args)
        if args.command == "serve":
            from .server.serve import ServeOptions, serve

            options = ServeOptions(
                app=args.app,
                host=args.host,
                port=args.port,
                data_dir=args.data_dir,
                store=args.store,
                model=args.model,
                token=args.token,
                tokens_file=args.tokens,
                allowed_origins=args.allow_origin,
                max_conversations=args.max_conversations,
                max_runs=args.max_runs,
                run_queue=args.run_queue,
                gc_threshold=args.gc_threshold,
                refusal_burst=args.refusal_burst,
                refusal_rate=args.refusal_rate,
                mcp=args.mcp,
                agui=args.agui,
                ai_sdk=args.ai_sdk,
                mcp_servers=args.mcp_servers,
                replica_id=args.replica_id,
                lease_ttl=args.lease_ttl,
                lease_renew=args.lease_renew,
                lease_drain=args.lease_drain,
                lease_wait=args.lease_wait,
            )
            return serve(options)
        if args.url is not None:
            token = args.token or os.environ.get("TOOLWIRE_TOKEN")
            if not token:
                raise UsageError("chat --url needs the server's token: --token TOKEN, or set TOOLWIRE_TOKEN")
            return anyio.run(remote_chat_session, args.url, token, args.thread)
        from .models.select import model_from_spec

        model = model_from_spec(args.model, log_dir=args.data_dir)
        return anyio.run(chat_session, model, args.data_dir, args.thread)
    except (UsageError, ProviderError, ClientDisconnected) as exc:
        print(f"toolwire: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _mcp_serve(args: argparse.Namespace) -> int:
    """`toolwire mcp serve`: over stdio, or Streamable HTTP with `--http`."""
    from .interop.mcp_serve import load_pipeline, serve_stdio

    if not args.http:
        anyio.run(serve_stdio, load_pipeline(args.app))
        return 0
    from .interop.mcp_http import serve_http, tokens_for

    auth, made = tokens_for(args.token, args.tokens, os.environ, anonymous=args.no_token)
    if made is not None:
        print(f"token: {made}", flush=True)  # the client's `Authorization: Bearer <token>`
    serve_http(load_pipeline(args.app), host=args.host, port=args.port, auth=auth)
    return 0


def _whole(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 0, got {text!r}")
    return value


def _positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 or more), got {text!r}")
    return value


def _positive_seconds(text: str) -> float:
    """An argparse type: a number of seconds above 0."""
    value = _seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _remote_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    where = "talk to this running server, e.g. http://127.0.0.1:8765"
    parser.add_argument("--url", required=required, help=where + ("" if required else " (instead of --data-dir)"))
    parser.add_argument("--token", help="the server's token, with --url (default: TOOLWIRE_TOKEN)")


def _remote_conversations(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """`toolwire conversations list | show | delete --url`: the principal's conversations on a running server."""
    from .remote_conversations import Remote, print_conversations, print_transcript

    token = args.token or os.environ.get("TOOLWIRE_TOKEN")
    if not token:
        raise UsageError("conversations --url needs the server's token: --token TOKEN, or set TOOLWIRE_TOKEN")
    remote = Remote(args.url, token)
    if args.operation == "list":
        print_conversations(*remote.conversations(args.limit), out)
    elif args.operation == "show":
        conversation = remote.conversation(args.conversation)
        if args.json:
            print(json.dumps(conversation, indent=2, ensure_ascii=False), file=out)
        else:
            print_transcript(conversation, out)
    else:
        remote.delete(args.conversation, force=args.force)
        print(f"{args.conversation}: deleted", file=out)
    return 0


async def _conversations(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """`toolwire conversations list | cancel`."""
    from .conversations import cancel_conversation, summarize
    from .store.lock import DataDirLock
    from .store.sqlite import FILENAME, SqliteStore

    data_dir: Path = args.data_dir
    if not (data_dir / FILENAME).is_file():
        raise UsageError(f"no conversations in {data_dir} (no {FILENAME}): pass the server's --data-dir")
    if args.operation == "list":
        async with SqliteStore.in_directory(data_dir) as store:
            summaries = await summarize(store)
        print(f"{'conversation':<38} {'principal':<12} {'messages':>8}  {'last run':<10} {'open calls':>10}", file=out)
        for item in summaries:
            run = item.run if not item.resume_attempts else f"{item.run} (resumed {item.resume_attempts}x)"
            principal = item.principal or "-"
            print(f"{item.thread_id:<38} {principal:<12} {item.messages:>8}  {run:<10} {item.open_calls:>10}", file=out)
        return 0
    with DataDirLock(data_dir, holder="toolwire conversations cancel"):
        async with SqliteStore.in_directory(data_dir) as store:
            if not await store.thread_exists(args.conversation):
                raise UsageError(f"no conversation {args.conversation!r} in {data_dir}")
            closed = await cancel_conversation(store, args.conversation, args.reason)
    if closed is None:
        print(f"{args.conversation}: no unfinished run; nothing to cancel", file=out)
    else:
        print(f"{args.conversation}: run closed; {len(closed)} open call(s) canceled", file=out)
        for message in closed:
            print(f"  {message.call_id} {message.tool_name}: {message.result.type.name}", file=out)
    return 0


async def chat_session(
    model: Model,
    data_dir: Path | None = None,
    thread: str | None = None,
    *,
    out: TextIO = sys.stdout,
    read_line: Callable[[str], str | None] | None = None,
) -> int:
    """Chat in the terminal until /quit, end of input or Ctrl-C; returns the exit status.

    Ctrl-C during a run stops it (its calls end as Canceled, the transcript stays valid), says how
    to continue and returns 130; at a prompt it leaves the same way; a second press leaves at once.

    Args:
        model: The model to talk to.
        data_dir: Keep the conversation in a SQLite file there (in memory when None).
        thread: The conversation to continue; it must exist in `data_dir`.
        out: Where the conversation is written.
        read_line: Reads one line after a prompt, None at the end of input (standard input by default).

    Raises:
        UsageError: `thread` is not a conversation of `data_dir` (the message says so; nothing is created).
    """
    from .examples import example_toolbox

    read = read_line or input_line
    async with AsyncExitStack() as stack:
        # Entered for the session: the local model's server process starts here and stops at the end.
        if isinstance(model, AbstractAsyncContextManager):
            await stack.enter_async_context(cast("AbstractAsyncContextManager[Any]", model))
        elif (aclose := getattr(model, "aclose", None)) is not None:
            stack.push_async_callback(aclose)
        store = _open_store(data_dir)
        stack.push_async_callback(store.aclose)
        if thread is not None and not await store.thread_exists(thread):
            kept = f"in {data_dir}" if data_dir is not None else "without --data-dir (nothing is kept)"
            raise UsageError(f"no conversation {thread!r} {kept}: leave out --thread to start a new one")
        agent = Agent(
            model,
            tools=example_toolbox(),
            instructions=INSTRUCTIONS,
            store=store,
            policy=PermissionPolicy(consent=_ask_in_terminal(out, read), store=store),
        )
        print(f"toolwire chat with {model.name}. Type a message; /quit or Ctrl-D to leave.", file=out)
        conversation = thread or "thread_" + secrets.token_hex(16)  # named here: Ctrl-C can always name it
        async with ctrl_c() as presses:
            with presses.scope:
                if await _local_turns(agent, conversation, presses, read, out):
                    if data_dir is not None and await store.thread_exists(conversation):
                        print(f"Saved. Continue with: {_local_command(data_dir, conversation)}", file=out)
                    return 0
        if not await store.thread_exists(conversation):
            print(file=out)  # nothing was said: nothing to continue
        elif data_dir is not None:
            print(f"\nStopped. Continue with: {_local_command(data_dir, conversation)}", file=out)
        else:
            print("\nStopped. This conversation was not kept (--data-dir DIR keeps conversations).", file=out)
        return 130


async def _local_turns(
    agent: Agent, thread: str, presses: CtrlC, read: Callable[[str], str | None], out: TextIO
) -> bool:
    """The prompts and runs of a local chat; True at /quit or end of input, False after Ctrl-C."""
    while not presses.pressed:
        prompt = await read_in_background(read, "you> ")
        if prompt is None or prompt.strip() in ("/quit", "/exit"):
            return True
        if prompt.strip():
            cancellation = Cancellation()

            async def stop(cancellation: Cancellation = cancellation) -> None:
                print(STOPPING, file=out)
                cancellation.cancel("Stopped with Ctrl-C")  # its calls end as Canceled, and the run stops

            with presses.stopping(stop):
                try:
                    await _answer(agent, prompt, thread, out, cancellation)
                except ProviderError as exc:  # e.g. the local model crashed: it restarts, go on
                    print(f"\n  (the model failed: {exc})", file=out)
    return False


def _local_command(data_dir: Path, thread: str) -> str:
    return f"toolwire chat --data-dir {data_dir} --thread {thread}"


def _open_store(data_dir: Path | None) -> Store:
    if data_dir is None:
        from .store.memory import MemoryStore

        return MemoryStore()
    from .store.sqlite import SqliteStore

    return SqliteStore.in_directory(data_dir)


async def _answer(agent: Agent, prompt: str, thread: str, out: TextIO, cancellation: Cancellation) -> None:
    """Stream one run of `thread` to the terminal."""
    async with aclosing(agent.stream(prompt, thread=thread, cancellation=cancellation)) as events:
        async for event in events:
            match event:
                case ModelRequestStarted(request_index=index) if index > 0:
                    pass
                case TextDelta(text=text):
                    out.write(text)
                    out.flush()
                case ToolCallStarted(call=call, mode=mode, decision=decision):
                    arguments = json.dumps(call.arguments, ensure_ascii=False)
                    print(f"  -> {call.name} {arguments}  [{mode or '?'}, {decision or 'not run'}]", file=out)
                case ToolCallFinished(result=result, duration_ms=ms):
                    detail = "" if result.success else f": {result.error}"
                    print(f"  <- {result.type.name} in {ms:.0f} ms{detail}", file=out)
                case RunFinished(result=result):
                    if result.output:
                        print(file=out)
                    if result.reason != "answer":
                        print(
                            f"  (run ended: {result.reason}{', ' + result.detail if result.detail else ''})", file=out
                        )
                case _:
                    pass


async def remote_chat_session(
    url: str,
    token: str,
    thread: str | None = None,
    *,
    out: TextIO | None = None,
    read_line: Callable[[str], str | None] | None = None,
) -> int:
    """Chat through a toolwire server (`toolwire.client`) until /quit, end of input or Ctrl-C.

    Ctrl-C during a run asks the server to stop it (ControlStop: its calls end as Canceled there),
    waits for the run's end, says how to continue and returns 130; at a prompt it leaves the same
    way; a second press leaves at once.

    Args:
        url: The server's WebSocket endpoint.
        token: The server's token (never printed).
        thread: The conversation to continue; it must exist on the server.
        out: Where the conversation is written (standard output by default).
        read_line: Reads one line after a prompt, None at the end of input (standard input by default).

    Raises:
        UsageError: The server has no conversation `thread` (nothing is created).
        ConnectionClosed: The server cannot be reached or refused the connection.
    """
    write_to = out or sys.stdout
    read = read_line or input_line
    where = url.split("?", 1)[0]
    conversation = ""
    async with ctrl_c() as presses:
        with presses.scope:
            async with _connect(url, token, thread, on_consent=_ask_remotely(write_to, read)) as client:
                conversation = client.conversation_id
                print(f"toolwire chat with {where}. Type a message; /quit or Ctrl-D to leave.", file=write_to)
                if await _remote_turns(client, presses, read, write_to):
                    print(f"Continue with: {_remote_command(where, conversation)}", file=write_to)
                    return 0
    if conversation:
        print(f"\nStopped. Continue with: {_remote_command(where, conversation)}", file=write_to)
    else:
        print(file=write_to)  # left while connecting
    return 130


@asynccontextmanager
async def _connect(
    url: str, token: str, thread: str | None, *, on_consent: Callable[[ConsentRequestBody], Awaitable[tuple[bool, str]]]
) -> AsyncGenerator[Client]:
    """`toolwire.client.connect`, with an unknown `thread` refused as the local chat refuses it."""
    from .client import ConnectionClosed, connect
    from .protocol import ErrorCode

    opened = False
    try:
        async with connect(url, token=token, conversation=thread, on_consent=on_consent) as client:
            opened = True
            yield client
    except ConnectionClosed as exc:
        if opened or exc.code != ErrorCode.CONVERSATION_NOT_FOUND:
            raise
        where = url.split("?", 1)[0]
        raise UsageError(f"no conversation {thread!r} on {where}: leave out --thread to start a new one") from None


async def _remote_turns(client: Client, presses: CtrlC, read: Callable[[str], str | None], out: TextIO) -> bool:
    """The prompts and runs of a `--url` chat; True at /quit or end of input, False after Ctrl-C."""
    from .client import ConnectionClosed, RunFailed

    while not presses.pressed:
        prompt = await read_in_background(read, "you> ")
        if prompt is None or prompt.strip() in ("/quit", "/exit"):
            return True
        if prompt.strip():

            async def stop() -> None:
                print(STOPPING, file=out)
                with suppress(ConnectionClosed):  # gone for good: send() raises it too
                    await client.stop("Stopped with Ctrl-C")  # the server cancels the run; its end follows

            with presses.stopping(stop):
                try:
                    async for event in client.send(prompt):
                        _show(event, out)
                except RunFailed as exc:
                    print(f"\n  ({exc})", file=out)
    return False


def _remote_command(where: str, conversation: str) -> str:
    # TOKEN stands for the token: a secret is never printed (TOOLWIRE_TOKEN may replace the option).
    return f"toolwire chat --url {where} --token TOKEN --thread {conversation}"


def _show(event: object, out: TextIO) -> None:
    from .client import AnswerText, ClientToolCall, RemoteRunFinished, ServerToolCall, ServerToolResult

    match event:
        case AnswerText(text=text):
            out.write(text)
            out.flush()
        case ServerToolCall(tool_name=name, arguments=arguments, mode=mode):
            print(f"  -> {name} {json.dumps(arguments, ensure_ascii=False)}  [{mode or '?'}, server]", file=out)
        case ServerToolResult(result=result):
            print(f"  <- {result.type.name}{'' if result.success else ': ' + str(result.error)}", file=out)
        case ClientToolCall(request=request, result=result, duration_ms=ms):
            arguments = json.dumps(request.arguments, ensure_ascii=False)
            print(f"  -> {request.tool_name} {arguments}  [{request.mode or '?'}, client]", file=out)
            outcome = "SUCCESS" if result.success else f"{result.error_code}: {result.error_message}"
            print(f"  <- {outcome} in {ms:.0f} ms", file=out)
        case RemoteRunFinished(output=output, reason=reason, detail=detail):
            if output:
                print(file=out)
            if reason not in (None, "answer"):
                print(f"  (run ended: {reason}{', ' + detail if detail else ''})", file=out)
        case _:
            pass


def _ask_remotely(
    out: TextIO, read: Callable[[str], str | None]
) -> Callable[[ConsentRequestBody], Awaitable[tuple[bool, str]]]:
    async def ask(request: ConsentRequestBody) -> tuple[bool, str]:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        choices = "[y]es / [n]o / [a]lways" if request.allow_always else "[y]es / [n]o"
        print(f"\n  ? {request.tool_name} {arguments} ({request.reason}). Allow? {choices}", file=out)
        answer = (await read_in_background(read, "  > ") or "n").strip().lower()
        if answer in ("a", "always") and request.allow_always:
            return True, "thread"
        return answer in ("y", "yes", "a", "always"), "once"

    return ask


def _ask_in_terminal(out: TextIO, read: Callable[[str], str | None]) -> ConsentHandler:
    async def ask(request: ConsentRequest) -> ConsentAnswer:
        arguments = json.dumps(request.call.arguments, ensure_ascii=False)
        choices = "[y]es / [n]o / [a]lways" if request.allow_always else "[y]es / [n]o"
        print(f"  ? {request.tool} {arguments} ({request.reason}). Allow? {choices}", file=out)
        answer = (await read_in_background(read, "  > ") or "n").strip().lower()
        if answer in ("a", "always") and request.allow_always:
            return ConsentAnswer(True, scope="thread")
        if answer in ("y", "yes", "a", "always"):
            return ConsentAnswer(True)
        return ConsentAnswer(False, reason="the user said no")

    return ask


if __name__ == "__main__":
    raise SystemExit(main())
