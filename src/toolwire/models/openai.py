"""`OpenAIModel`: OpenAI-compatible Chat Completions (OpenAI, vLLM, llama-cpp-python, ...), streamed.

```python
async with OpenAIModel("gpt-4o-mini") as model:  # OPENAI_API_KEY from the environment
    ...
local = OpenAIModel("local", base_url="http://127.0.0.1:8090/v1", text_tool_calls=True)
```

A tool call whose arguments are not a JSON object (malformed, or cut off by `max_tokens`) is
kept, with the raw text under `INVALID_JSON_KEY` as its only argument: no tool has that
parameter, so the pipeline answers it with an `invalid_parameters` result naming it, and the
model can try again instead of the run failing.

Local servers often write a tool call in the text instead of `tool_calls` when
`tool_choice="auto"`; `text_tool_calls=True` recovers those with `parse_text_tool_calls()`, and
holds the streamed text back from where such a call may start, so raw calls never reach the UI.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, assert_never, cast

from ..envelopes import ToolCall
from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage, Message, ToolDefinition, ToolResultMessage, Usage, UserMessage
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, ToolChoice, import_extra
from .calls import TextGate, new_call_id, parse_arguments, parse_text_tool_calls
from .http import HttpModel

if TYPE_CHECKING:
    import httpx
else:
    httpx = import_extra("httpx", "openai")

__all__ = ["OpenAIModel"]

_PROVIDER: Final = "openai-compatible"
_HINTS: Final[Mapping[int, str]] = {
    401: "authentication failed; check OPENAI_API_KEY (or api_key=)",
    403: "the API key may not use this model; check its permissions",
    404: "not found; check the model name {model!r} (TOOLWIRE_MODEL or model=) and base_url {base_url}",
    429: "rate limited or out of quota; retry later or check the account's limits",
}


class OpenAIModel(HttpModel):
    """A model behind an OpenAI-compatible `POST {base_url}/chat/completions`.

    Args:
        model: The model name; defaults to `$TOOLWIRE_MODEL` (without an `openai:` prefix). For
            llama-cpp-python's server it is the `--model_alias`.
        base_url: The API root, e.g. `http://127.0.0.1:8090/v1`; defaults to `$OPENAI_BASE_URL`,
            then `https://api.openai.com/v1`.
        api_key: Defaults to `$OPENAI_API_KEY`; without one no `Authorization` header is sent,
            as local servers expect.
        http_client: A client to send requests with (proxies, pools, tests); the adapter never
            closes a client it did not create.
        timeout: Seconds allowed to connect, and between two chunks of the stream.
        parallel_tool_calls: Sent when set; `False` asks for at most one call per response.
        text_tool_calls: Recover tool calls written in the text when no native `tool_calls` came.
        temperature: Sampling temperature; the server's default when `None`.
        max_tokens: The most tokens one response may generate; the server's default when `None`.

    Raises:
        UsageError: No model name was given or found in the environment.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 120.0,
        parallel_tool_calls: bool | None = None,
        text_tool_calls: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        # TOOLWIRE_MODEL may hold a spec for `model_from_spec`, e.g. `openai:gpt-4o-mini`.
        model = model or os.environ.get("TOOLWIRE_MODEL", "").removeprefix("openai:")
        if not model:
            raise UsageError(
                "no model name: pass OpenAIModel('gpt-4o-mini') or set TOOLWIRE_MODEL "
                "(for llama-cpp-python's server, its --model_alias)"
            )
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.text_tool_calls = text_tool_calls
        self._timeout = timeout
        self._tool_options = {"parallel_tool_calls": parallel_tool_calls}
        self._sampling = {"temperature": temperature, "max_tokens": max_tokens}
        client = httpx.AsyncClient(timeout=timeout) if http_client is None else http_client
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        super().__init__(client, owns_client=http_client is None, api_key=key)

    @property
    def name(self) -> str:
        """`openai:<model>`, for logs and the UI."""
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """Return the JSON body `stream()` posts for `request`.

        Raises:
            UsageError: `tool_choice` names a tool that is not offered.
        """
        system = [{"role": "system", "content": request.system}] if request.system else []
        body: dict[str, Any] = {"model": self.model, "messages": system + [_message(m) for m in request.messages]}
        if request.tools:
            body["tools"] = [_tool(definition) for definition in request.tools]
            body["tool_choice"] = _tool_choice(request.tool_choice, request.tools)
            body.update((key, value) for key, value in self._tool_options.items() if value is not None)
        body.update((key, value) for key, value in self._sampling.items() if value is not None)
        body.update(stream=True, stream_options={"include_usage": True})
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer `request`: yield `TextDelta`s as the text arrives, then one `ModelResponse`.

        Raises:
            ProviderError: The server could not be reached, refused the request or broke the
                stream; the message says what to check.
            UsageError: `tool_choice` names a tool that is not offered.
        """
        body, url = self.request_body(request), f"{self.base_url}/chat/completions"
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        names = [] if request.tool_choice == "none" else [definition.name for definition in request.tools]
        gate, assembly = TextGate(enabled=self.text_tool_calls and bool(names)), _Assembly()
        try:
            async with self._client.stream("POST", url, json=body, headers=headers, timeout=self._timeout) as reply:
                if reply.status_code >= 400:
                    await reply.aread()
                    raise self._http_error(reply.status_code, reply.text)
                async for line in reply.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # blank lines, `event:`, `id:` and `: comment` lines
                    if (data := line[5:].strip()) == "[DONE]":
                        assembly.done = True
                        break
                    if text := gate.feed(assembly.feed(self._chunk(data))):
                        yield TextDelta(text)
        except httpx.TransportError as exc:
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            if isinstance(exc, httpx.ReadTimeout):
                message = f"{self.base_url} sent nothing for {self._timeout} s ({detail}); raise timeout= or retry"
            else:
                message = f"cannot reach {self.base_url} ({detail}); start the server or set OPENAI_BASE_URL"
            raise ProviderError(_PROVIDER, message) from exc
        if not assembly.done and assembly.finish_reason is None:
            raise ProviderError(_PROVIDER, "the stream ended before [DONE]; retry the request")
        text, calls = assembly.text, assembly.tool_calls()
        if self.text_tool_calls and names and not calls:
            text, calls = parse_text_tool_calls(text, names)
        if tail := gate.tail(text):
            yield TextDelta(tail)
        usage = Usage(requests=1, input_tokens=assembly.input_tokens, output_tokens=assembly.output_tokens)
        model_name = assembly.model_name or self.model
        yield ModelResponse(
            text=text, tool_calls=tuple(calls), usage=usage, finish_reason=assembly.finish_reason, model_name=model_name
        )

    def _chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk: Any = json.loads(data)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            raise ProviderError(_PROVIDER, f"the stream sent a chunk that is not a JSON object: {data[:200]!r}")
        chunk = cast("dict[str, Any]", chunk)
        if "error" in chunk:
            raise ProviderError(_PROVIDER, self._redact(f"the stream reported an error: {_error_message(chunk)}"))
        return chunk

    def _http_error(self, status: int, body: str) -> ProviderError:
        if status in _HINTS:
            hint = _HINTS[status].format(model=self.model, base_url=self.base_url)
        elif status >= 500:
            hint = f"the server at {self.base_url} failed; retry later or check its logs"
        else:
            hint = "the request was refused"
        try:
            detail = _error_message(json.loads(body))
        except ValueError:
            detail = body.strip()[:200]
        return ProviderError(_PROVIDER, self._redact(f"{hint} ({detail})" if detail else hint), status=status)


class _Assembly:
    """The response being streamed, built up chunk by chunk; tool calls by their `index`."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.calls: dict[int, tuple[str, str, list[str]]] = {}
        self.input_tokens = self.output_tokens = 0
        self.finish_reason: str | None = None
        self.model_name: str | None = None
        self.done = False

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Apply one chunk; return the text it adds (empty when none)."""
        self.model_name = self.model_name or chunk.get("model")
        if usage := _object(chunk.get("usage")):
            self.input_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)
        text = ""
        for choice in map(_object, _list(chunk.get("choices"))):
            delta = _object(choice.get("delta"))
            text += str(delta.get("content") or "")
            for position, item in enumerate(map(_object, _list(delta.get("tool_calls")))):
                function = _object(item.get("function"))
                index = int(item.get("index", position))
                call_id, name, fragments = self.calls.setdefault(index, ("", "", []))
                arguments = function.get("arguments") or ""
                fragments.append(arguments if isinstance(arguments, str) else json.dumps(arguments))
                # The id and name come with the first fragment; some servers repeat them.
                self.calls[index] = (
                    call_id or str(item.get("id") or ""),
                    name or str(function.get("name") or ""),
                    fragments,
                )
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        self.parts.append(text)
        return text

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=call_id or new_call_id(), name=name, arguments=parse_arguments("".join(fragments)))
            for _, (call_id, name, fragments) in sorted(self.calls.items())
        ]


def _message(message: Message) -> dict[str, Any]:
    match message:
        case UserMessage():
            return {"role": "user", "content": message.content}
        case AssistantMessage():
            # "" rather than null: llama-cpp-python's server refuses null content, OpenAI takes both.
            out: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                out["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _json(c.arguments)}}
                    for c in message.tool_calls
                ]
            return out
        case ToolResultMessage():
            return {"role": "tool", "tool_call_id": message.call_id, "content": _json(message.result.payload())}
        case _:
            assert_never(message)


def _tool(definition: ToolDefinition) -> dict[str, Any]:
    function = {
        "name": definition.name,
        "description": definition.description,
        "parameters": dict(definition.parameters),
    }
    return {"type": "function", "function": function}


def _tool_choice(choice: ToolChoice, tools: Sequence[ToolDefinition]) -> str | dict[str, Any]:
    match choice:
        case "auto" | "none" | "required":
            return choice
        case name if any(definition.name == name for definition in tools):
            return {"type": "function", "function": {"name": name}}
        case name:
            offered = ", ".join(definition.name for definition in tools)
            raise UsageError(f"tool_choice names {name!r}, which is not among the offered tools ({offered})")


def _error_message(body: Any) -> str:
    """Read `{"error": {"message"}}` or `{"error": "..."}` (servers differ), else an empty string."""
    error = _object(body).get("error")
    message = error if isinstance(error, str) else _object(error).get("message") or _object(body).get("detail")
    return str(message or "")[:500]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _object(value: Any) -> dict[str, Any]:
    """Return `value` if it is a JSON object, else an empty one (servers differ; be lenient)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []
