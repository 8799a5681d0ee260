"""An adapter for OpenAI-compatible Chat Completions servers: OpenAI, vLLM, llama-cpp-python, ...

```python
model = OpenAIModel("gpt-4o-mini")  # OPENAI_API_KEY from the environment
local = OpenAIModel("local", base_url="http://127.0.0.1:8090/v1", text_tool_calls=True)
```

Requests always stream. Tool call arguments that are not a JSON object (truncated by
`max_tokens`, or malformed) keep their call, with arguments `{"_raw_arguments": "<text>"}`: no
tool has that parameter, so the loop answers the call with an `invalid_parameters` result that
names it, and the model gets to try again instead of the run failing.

Local servers often write a tool call in the text rather than as `tool_calls` when
`tool_choice="auto"`; `text_tool_calls=True` recovers such calls with `parse_text_tool_calls()`.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Collection, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..envelopes import ToolCall
from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, ToolChoice, import_extra

if TYPE_CHECKING:
    import httpx

__all__ = ["RAW_ARGUMENTS", "OpenAIModel", "parse_text_tool_calls"]

RAW_ARGUMENTS = "_raw_arguments"
"""The argument key that carries a call's arguments when they are not a JSON object."""

_PROVIDER = "openai-compatible"
_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_HINTS = {
    401: "check OPENAI_API_KEY (or api_key=...)",
    403: "check that OPENAI_API_KEY may use this model",
    404: "check the model name (TOOLWIRE_MODEL or model=...) and base_url",
    429: "rate limited or out of quota: wait and retry, or check the account's limits",
}
# Where a call may start in the text; streaming holds the text back from there (text_tool_calls).
_CALL_MARKERS = ("<tool_call>", "```", "{")


class OpenAIModel:
    """A model behind an OpenAI-compatible `/chat/completions` endpoint.

    Args:
        model: The model name; defaults to `$TOOLWIRE_MODEL`. For llama-cpp-python's server it is
            the `--model_alias`.
        base_url: The API root, e.g. `http://127.0.0.1:8090/v1`; defaults to `$OPENAI_BASE_URL`,
            else `https://api.openai.com/v1`.
        api_key: Defaults to `$OPENAI_API_KEY`. Without one no `Authorization` header is sent,
            which suits local servers.
        http_client: An `httpx.AsyncClient` to reuse (and to close yourself); without one each
            request opens and closes its own.
        timeout: Seconds allowed to connect and between two streamed chunks.
        parallel_tool_calls: Sent when set; `False` asks for at most one call per response.
        text_tool_calls: Recover tool calls the model wrote in its text (Hermes
            `<tool_call>` tags, fenced or bare JSON) when it sent no native `tool_calls`.
        temperature: Sent when set.
        max_tokens: Sent when set.

    Raises:
        UsageError: No model name was given, or `httpx` is missing (`toolwire[openai]`).
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
        self._httpx = import_extra("httpx", "openai")
        model = model or os.environ.get("TOOLWIRE_MODEL")
        if not model:
            raise UsageError(
                "no model name: pass OpenAIModel('gpt-4o-mini') or set TOOLWIRE_MODEL "
                "(for llama-cpp-python's server, its --model_alias)"
            )
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self._client = http_client
        self._timeout = timeout
        self._options: dict[str, Any] = {
            key: value for key, value in (("temperature", temperature), ("max_tokens", max_tokens)) if value is not None
        }
        self._parallel_tool_calls = parallel_tool_calls
        self._text_tool_calls = text_tool_calls

    @property
    def name(self) -> str:
        """`openai:` and the model name."""
        return f"openai:{self.model}"

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model!r}, base_url={self.base_url!r})"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """Return the JSON body `stream()` POSTs for `request` (for tests and debugging)."""
        messages: list[dict[str, Any]] = [{"role": "system", "content": request.system}] if request.system else []
        messages.extend(_message(message) for message in request.messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in request.tools
            ]
            body["tool_choice"] = _tool_choice(request.tool_choice)
            if self._parallel_tool_calls is not None:
                body["parallel_tool_calls"] = self._parallel_tool_calls
        body.update(self._options)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """POST `request` and yield `TextDelta`s as they arrive, then the `ModelResponse`.

        Raises:
            ProviderError: The server cannot be reached, answers with an HTTP error or sends a
                malformed stream; the message says what to check.
        """
        httpx = self._httpx
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        names = [tool.name for tool in request.tools]
        gate = _TextGate(enabled=self._text_tool_calls and bool(names))
        stream = _Stream()
        client = self._client or httpx.AsyncClient()
        try:
            async with client.stream(
                "POST",
                f"{self.base_url}/chat/completions",
                json=self.request_body(request),
                headers=headers,
                timeout=self._timeout,
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._http_error(response.status_code, response.text)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue  # SSE comments, `event:` and blank lines
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    if text := gate.feed(stream.feed(self._chunk(data))):
                        yield TextDelta(text)
        except httpx.TimeoutException as exc:
            raise ProviderError(_PROVIDER, f"no answer from {self.base_url} within {self._timeout} s") from exc
        except httpx.TransportError as exc:
            raise ProviderError(
                _PROVIDER,
                f"cannot reach {self.base_url} ({type(exc).__name__}: {self._scrub(str(exc))}); "
                "start the server or set OPENAI_BASE_URL",
            ) from exc
        finally:
            if self._client is None:
                await client.aclose()
        text, calls = stream.text, stream.tool_calls()
        if self._text_tool_calls and names and not calls:
            text, calls = parse_text_tool_calls(text, names)
        if tail := gate.tail(text):
            yield TextDelta(tail)
        yield ModelResponse(
            text=text,
            tool_calls=tuple(calls),
            usage=stream.usage,
            finish_reason=stream.finish_reason,
            model_name=stream.model_name or self.model,
        )

    def _chunk(self, data: str) -> dict[str, Any]:
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ProviderError(_PROVIDER, f"malformed stream chunk from {self.base_url}: {data[:200]!r}") from None
        chunk = _object(chunk)
        if "error" in chunk:
            raise ProviderError(_PROVIDER, f"the stream failed: {self._scrub(_error_message(chunk) or data[:500])}")
        return chunk

    def _http_error(self, status: int, body: str) -> ProviderError:
        hint = _HINTS.get(status) or (
            f"the server at {self.base_url} failed; retry later or check its logs"
            if status >= 500
            else "the request was refused; check the model's limits and the request options"
        )
        try:
            detail = _error_message(_object(json.loads(body)))
        except ValueError:
            detail = body.strip()[:500]
        return ProviderError(_PROVIDER, f"{hint}" + (f" ({self._scrub(detail)})" if detail else ""), status=status)

    def _scrub(self, text: str) -> str:
        # A server may echo what it was sent; never let the key reach a message or a log.
        return text.replace(self._api_key, "***") if self._api_key else text


class _Stream:
    """Assembles streamed chunks: text, tool calls (by `index`), usage, finish reason."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, tuple[str, str, list[str]]] = {}
        self.usage = Usage(requests=1)
        self.finish_reason: str | None = None
        self.model_name: str | None = None

    @property
    def text(self) -> str:
        return "".join(self._text)

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Take one chunk; return its text (empty when it has none)."""
        self.model_name = self.model_name or chunk.get("model")
        if usage := _object(chunk.get("usage")):
            self.usage = Usage(1, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
        text = ""
        for choice in _list(chunk.get("choices")):
            choice = _object(choice)
            delta = _object(choice.get("delta"))
            if content := delta.get("content"):
                text += str(content)
            for position, item in enumerate(_list(delta.get("tool_calls"))):
                item = _object(item)
                function = _object(item.get("function"))
                index = int(item.get("index", position))
                call_id, name, fragments = self._calls.get(index, ("", "", []))
                fragments.append(str(function.get("arguments") or ""))
                self._calls[index] = (
                    call_id or str(item.get("id") or ""),
                    name or str(function.get("name") or ""),
                    fragments,
                )
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        self._text.append(text)
        return text

    def tool_calls(self) -> list[ToolCall]:
        return [
            ToolCall(id=call_id or _new_id(), name=name, arguments=_arguments("".join(fragments)))
            for _, (call_id, name, fragments) in sorted(self._calls.items())
        ]


class _TextGate:
    """Streams text up to where a tool call written in it may start, so raw calls never show."""

    def __init__(self, *, enabled: bool) -> None:
        self._enabled = enabled
        self._seen = ""
        self._sent = 0
        self._closed = False

    def feed(self, text: str) -> str:
        if not self._enabled:
            return text
        self._seen += text
        if self._closed:
            return ""
        starts = [i for i in (self._seen.find(marker) for marker in _CALL_MARKERS) if i >= 0]
        if starts:
            self._closed, end = True, min(starts)
        else:  # hold back a suffix that may begin a marker
            end = len(self._seen) - max(
                (n for marker in _CALL_MARKERS for n in range(1, len(marker)) if self._seen.endswith(marker[:n])),
                default=0,
            )
        out, self._sent = self._seen[self._sent : end], max(self._sent, end)
        return out

    def tail(self, final_text: str) -> str:
        """The rest of `final_text` (calls removed) once the stream has ended."""
        sent = self._seen[: self._sent]
        return final_text[len(sent) :] if self._enabled and final_text.startswith(sent) else ""


def parse_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[ToolCall]]:
    """Find tool calls a model wrote in its text, for servers that do not return `tool_calls`.

    Recognizes Hermes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (one or many), a
    fenced JSON block, and a bare JSON object (or list of them), each with a `name` among
    `tool_names` and `arguments` (or `parameters`). Anything else stays text.

    Args:
        text: The model's whole answer.
        tool_names: The names of the tools offered on this turn.

    Returns:
        The text with the recovered calls removed (stripped), and the calls with new ids.
    """
    calls: list[ToolCall] = []

    def take(match: re.Match[str]) -> str:
        found = _calls_in(match.group(1), tool_names)
        calls.extend(found)
        return "" if found else match.group(0)

    text = re.sub(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", take, text, flags=re.DOTALL)
    text = re.sub(r"```[\w-]*[ \t]*\n?(.*?)```", take, text, flags=re.DOTALL)
    kept: list[str] = []
    position = skip = 0
    for match in re.finditer(r"[{\[]", text):
        if match.start() < skip:
            continue  # inside JSON already read
        try:
            value, skip = json.JSONDecoder().raw_decode(text, match.start())
        except ValueError:
            continue
        if found := _calls_in_value(value, tool_names):
            kept.append(text[position : match.start()])
            calls.extend(found)
            position = skip
    kept.append(text[position:])
    return "".join(kept).strip(), calls


def _calls_in(body: str, tool_names: Collection[str]) -> list[ToolCall]:
    try:
        value, _ = json.JSONDecoder().raw_decode(body.strip())
    except ValueError:
        return []
    return _calls_in_value(value, tool_names)


def _calls_in_value(value: Any, tool_names: Collection[str]) -> list[ToolCall]:
    items = _list(value) if isinstance(value, list) else [value]
    calls: list[ToolCall] = []
    for item in items:
        item = _object(item)
        name, arguments = item.get("name"), item.get("arguments", item.get("parameters"))
        if not isinstance(name, str) or name not in tool_names or arguments is None:
            return []  # all of it is a batch of calls, or none of it is
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        calls.append(ToolCall(id=_new_id(), name=name, arguments=_arguments(raw)))
    return calls


def _message(message: Message) -> dict[str, Any]:
    match message:
        case UserMessage():
            return {"role": "user", "content": message.content}
        case AssistantMessage():
            out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                out["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _json(c.arguments)}}
                    for c in message.tool_calls
                ]
            return out
        case ToolResultMessage():
            return {"role": "tool", "tool_call_id": message.call_id, "content": _json(message.result.payload())}


def _tool_choice(choice: ToolChoice) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}  # a call of a tool without parameters
    try:
        value = json.loads(raw)
    except ValueError:
        return {RAW_ARGUMENTS: raw}
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {RAW_ARGUMENTS: raw}


def _error_message(body: Mapping[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, str):
        return error
    message = _object(error).get("message") or body.get("message") or body.get("detail") or ""
    return str(message)[:500]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _new_id() -> str:
    return "call_" + secrets.token_hex(12)


def _object(value: Any) -> dict[str, Any]:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []
