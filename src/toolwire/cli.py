"""The `toolwire` command: `toolwire chat` talks to a model that can call the example tools.

```
toolwire chat                          # the local model when installed, fully offline
toolwire chat --model openai:gpt-4o-mini
toolwire chat --data-dir .toolwire --thread THREAD_ID   # continue a stored conversation
toolwire chat --url ws://127.0.0.1:8765/ws --token TOKEN # chat through a toolwire server (docs/client.md)
```
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import anyio
from anyio import to_thread

from . import __version__
from .errors import ClientDisconnected, ProviderError, UsageError
from .loop import Agent, ModelRequestStarted, RunFinished
from .models import Model, TextDelta
from .pipeline import ToolCallFinished, ToolCallStarted
from .policy import ConsentAnswer, ConsentHandler, ConsentRequest, PermissionPolicy
from .store import Store

if TYPE_CHECKING:
    from .protocol import ConsentRequest as WireConsentRequest

__all__ = ["chat_session", "main", "remote_chat_session"]

INSTRUCTIONS = (
    "You are a helpful assistant in a terminal. Use the tools when they help: notes (list_notes, add_note, "
    "delete_note), disk usage of this machine (local_disk_usage) and exchange rates (lookup_exchange_rate). "
    "Answer briefly."
)


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
    chat.add_argument("--thread", help="continue this conversation (with --data-dir, or with --url)")
    chat.add_argument("--url", help="chat through a toolwire server, e.g. ws://127.0.0.1:8765/ws (needs 'server')")
    chat.add_argument("--token", help="the server's token, with --url (default: TOOLWIRE_TOKEN)")
    serve = commands.add_parser("serve", help="run the WebSocket server (needs the 'server' extra)")
    serve.add_argument("--app", help="module:factory returning your Agent (default: the built-in example agent)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    serve.add_argument("--data-dir", type=Path, default=Path(".toolwire"), help="where conversations are kept")
    serve.add_argument("--model", help="for the example agent: local, openai:NAME, anthropic:NAME (see chat)")
    serve.add_argument("--token", help="the token clients present (default: TOOLWIRE_TOKEN, else a new one, printed)")
    serve.add_argument("--tokens", type=Path, help="a file of 'PRINCIPAL TOKEN' lines, one principal per token")
    serve.add_argument(
        "--allow-origin", action="append", default=[], help="a browser origin allowed to connect (repeatable)"
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            from .server.serve import ServeOptions, serve

            options = ServeOptions(
                app=args.app,
                host=args.host,
                port=args.port,
                data_dir=args.data_dir,
                model=args.model,
                token=args.token,
                tokens_file=args.tokens,
                allowed_origins=args.allow_origin,
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


async def chat_session(
    model: Model,
    data_dir: Path | None = None,
    thread: str | None = None,
    *,
    out: TextIO = sys.stdout,
    read_line: Callable[[str], str | None] | None = None,
) -> int:
    """Chat in the terminal until /quit or end of input; returns the exit status.

    Args:
        model: The model to talk to.
        data_dir: Keep the conversation in a SQLite file there (in memory when None).
        thread: The conversation to continue.
        out: Where the conversation is written.
        read_line: Reads one line after a prompt, None at the end of input (`input()` by default).
    """
    from .examples import example_toolbox

    read = read_line or _read_line
    async with AsyncExitStack() as stack:
        # Entered for the session: the local model's server process starts here and stops at the end.
        if isinstance(model, AbstractAsyncContextManager):
            await stack.enter_async_context(cast("AbstractAsyncContextManager[Any]", model))
        elif (aclose := getattr(model, "aclose", None)) is not None:
            stack.push_async_callback(aclose)
        store = _open_store(data_dir)
        stack.push_async_callback(store.aclose)
        agent = Agent(
            model,
            tools=example_toolbox(),
            instructions=INSTRUCTIONS,
            store=store,
            policy=PermissionPolicy(consent=_ask_in_terminal(out, read), store=store),
        )
        print(f"toolwire chat with {model.name}. Type a message; /quit or Ctrl-D to leave.", file=out)
        while True:
            prompt = await to_thread.run_sync(read, "you> ")
            if prompt is None or prompt.strip() in ("/quit", "/exit"):
                if thread is not None and data_dir is not None:
                    print(f"Saved. Continue with: toolwire chat --data-dir {data_dir} --thread {thread}", file=out)
                return 0
            if prompt.strip():
                try:
                    thread = await _answer(agent, prompt, thread, out)
                except ProviderError as exc:  # e.g. the local model crashed: it restarts, go on
                    print(f"\n  (the model failed: {exc})", file=out)


def _open_store(data_dir: Path | None) -> Store:
    if data_dir is None:
        from .store.memory import MemoryStore

        return MemoryStore()
    from .store.sqlite import SqliteStore

    return SqliteStore.in_directory(data_dir)


async def _answer(agent: Agent, prompt: str, thread: str | None, out: TextIO) -> str | None:
    """Stream one run to the terminal; return the thread id to continue."""
    async with aclosing(agent.stream(prompt, thread=thread)) as events:
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
                    return result.thread_id
                case _:
                    pass
    return thread


async def remote_chat_session(
    url: str,
    token: str,
    thread: str | None = None,
    *,
    out: TextIO | None = None,
    read_line: Callable[[str], str | None] | None = None,
) -> int:
    """Chat through a toolwire server (`toolwire.client`) until /quit or end of input.

    Args:
        url: The server's WebSocket endpoint.
        token: The server's token (never printed).
        thread: The conversation to continue.
        out: Where the conversation is written (standard output by default).
        read_line: Reads one line after a prompt, None at the end of input (`input()` by default).
    """
    from .client import RunFailed, connect

    write_to = out or sys.stdout
    read = read_line or _read_line
    where = url.split("?", 1)[0]
    async with connect(url, token=token, conversation=thread, on_consent=_ask_remotely(write_to, read)) as client:
        print(f"toolwire chat with {where}. Type a message; /quit or Ctrl-D to leave.", file=write_to)
        while True:
            prompt = await to_thread.run_sync(read, "you> ")
            if prompt is None or prompt.strip() in ("/quit", "/exit"):
                print(f"Continue with: toolwire chat --url {where} --thread {client.conversation_id}", file=write_to)
                return 0
            if prompt.strip():
                try:
                    async for event in client.send(prompt):
                        _show(event, write_to)
                except RunFailed as exc:
                    print(f"\n  ({exc})", file=write_to)


def _show(event: object, out: TextIO) -> None:
    from .client import AnswerText, ClientToolCall, ServerToolCall, ServerToolResult
    from .client import RunFinished as RemoteRunFinished

    match event:
        case AnswerText(text=text):
            out.write(text)
            out.flush()
        case ServerToolCall(tool_name=name, arguments=arguments, mode=mode):
            print(f"  -> {name} {json.dumps(arguments, ensure_ascii=False)}  [{mode or '?'}, server]", file=out)
        case ServerToolResult(result=result):
            print(f"  <- {result.type.name}{'' if result.success else ': ' + str(result.error)}", file=out)
        case ClientToolCall(request=request, result=result, duration_ms=ms):
            arguments = json.dumps(request.parameters, ensure_ascii=False)
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
) -> Callable[[WireConsentRequest], Awaitable[tuple[bool, str]]]:
    async def ask(request: WireConsentRequest) -> tuple[bool, str]:
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        choices = "[y]es / [n]o / [a]lways" if request.allow_always else "[y]es / [n]o"
        print(f"\n  ? {request.tool_name} {arguments} ({request.reason}). Allow? {choices}", file=out)
        answer = (await to_thread.run_sync(read, "  > ") or "n").strip().lower()
        if answer in ("a", "always") and request.allow_always:
            return True, "thread"
        return answer in ("y", "yes", "a", "always"), "once"

    return ask


def _ask_in_terminal(out: TextIO, read: Callable[[str], str | None]) -> ConsentHandler:
    async def ask(request: ConsentRequest) -> ConsentAnswer:
        arguments = json.dumps(request.call.arguments, ensure_ascii=False)
        choices = "[y]es / [n]o / [a]lways" if request.allow_always else "[y]es / [n]o"
        print(f"  ? {request.tool} {arguments} ({request.reason}). Allow? {choices}", file=out)
        answer = (await to_thread.run_sync(read, "  > ") or "n").strip().lower()
        if answer in ("a", "always") and request.allow_always:
            return ConsentAnswer(True, scope="thread")
        if answer in ("y", "yes", "a", "always"):
            return ConsentAnswer(True)
        return ConsentAnswer(False, reason="the user said no")

    return ask


def _read_line(prompt: str) -> str | None:
    # Write the prompt ourselves: input() called from a worker thread may leave it unflushed.
    sys.stdout.write(prompt)
    sys.stdout.flush()
    try:
        return input()
    except EOFError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
