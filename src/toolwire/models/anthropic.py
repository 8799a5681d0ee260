"""`AnthropicModel`: the Anthropic Messages API (`POST /v1/messages`), streamed, on plain httpx.

An `AssistantMessage` becomes one assistant turn (a `text` block, then a `tool_use` block per call);
the `ToolResultMessage`s after it become one user turn of `tool_result` blocks (content: the JSON
text of `ToolResult.payload()`; `is_error` unless the outcome is a success), and a `UserMessage`
right after them joins that turn as a trailing `text` block, since Anthropic wants results first.

A call whose streamed input is not a JSON object is kept, with the raw text as its one argument,
`INVALID_JSON_KEY`: no tool has that parameter, so the pipeline answers it with an
`invalid_parameters` result and the model can try again.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, assert_never, cast

from ..envelopes import ToolCall
from ..errors import ProviderError, UsageError
from ..messages import AssistantMessage, Message, ToolDefinition, ToolResultMessage, Usage, UserMessage
from ..schema import INVALID_JSON_KEY
from . import ModelEvent, ModelRequest, ModelResponse, TextDelta, ToolChoice, import_extra
from .http import HttpModel

if TYPE_CHECKING:
    import httpx
else:
    httpx = import_extra("httpx", "anthropic")

__all__ = ["API_VERSION", "AnthropicModel"]

API_VERSION: Final = "2023-06-01"
"""The `anthropic-version` header this adapter speaks."""
_PROVIDER: Final = "anthropic"
_DEFAULT_BASE_URL: Final = "https://api.anthropic.com"
_OVERLOADED: Final = "Anthropic is overloaded or unavailable; retry later"
_HINTS: Final[Mapping[int, str]] = {
    401: "authentication failed; check the API key (api_key= or ANTHROPIC_API_KEY)",
    402: "check the billing details of the Anthropic account",
    403: "the API key may not use this model or workspace; check its permissions",
    404: "not found; check the model name {model!r} and the base URL",
    413: "the request is too large; shorten the conversation or the tool results",
    429: "rate limited; retry later",
}
# A stream that already answered 200 reports its errors by type; map them to the statuses they
# stand for elsewhere, to give the same hints.
_ERROR_STATUSES: Final[Mapping[str, int]] = dict(
    invalid_request_error=400, authentication_error=401, billing_error=402, permission_error=403,
    not_found_error=404, request_too_large=413, rate_limit_error=429, api_error=500, overloaded_error=529,
)  # fmt: skip


class AnthropicModel(HttpModel):
    """A Claude model behind the Anthropic Messages API.

    Args:
        model: The model id, e.g. `claude-sonnet-4-5`.
        api_key: The API key; defaults to the `ANTHROPIC_API_KEY` environment variable.
        base_url: The API root; defaults to `ANTHROPIC_BASE_URL`, then `https://api.anthropic.com`.
        max_tokens: The most tokens one response may generate (Anthropic requires a limit).
        temperature: Sampling temperature; the API's default when `None`.
        http_client: A client to send requests with (for proxies, pools or tests); the adapter
            never closes a client it did not create.
        timeout: Seconds before a request of the adapter's own client times out.

    Raises:
        UsageError: No API key was given or found in the environment.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        temperature: float | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float = 120.0,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise UsageError(
                "no Anthropic API key: pass api_key= or set ANTHROPIC_API_KEY "
                "(tests can use toolwire.testing.ScriptedModel instead)"
            )
        self.model = model
        self.base_url = (base_url or os.environ.get("ANTHROPIC_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")
        self.max_tokens = max_tokens
        self.temperature = temperature
        client = httpx.AsyncClient(timeout=timeout) if http_client is None else http_client
        super().__init__(client, owns_client=http_client is None, api_key=key)

    @property
    def name(self) -> str:
        """`anthropic:<model>`, for logs and the UI."""
        return f"{_PROVIDER}:{self.model}"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        """Return the JSON body `stream()` posts for `request` (with `"stream": true`).

        Raises:
            UsageError: `tool_choice` names a tool that is not offered.
        """
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "stream": True}
        if request.system:
            body["system"] = request.system
        body["messages"] = _messages(request.messages)
        if request.tools:
            body["tools"] = [_tool(definition) for definition in request.tools]
            body["tool_choice"] = _tool_choice(request.tool_choice, request.tools)
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Answer `request`: yield a `TextDelta` per text delta, then one `ModelResponse`.

        Raises:
            ProviderError: The API could not be reached, refused the request (the message says
                what to check) or reported an error in the stream.
            UsageError: `tool_choice` names a tool that is not offered.
        """
        body = self.request_body(request)
        headers = {
            "x-api-key": self._api_key or "",
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        assembly = _Assembly(model_name=self.model)
        try:
            async with self._client.stream("POST", f"{self.base_url}/v1/messages", json=body, headers=headers) as reply:
                if reply.status_code >= 400:
                    await reply.aread()
                    raise self._http_error(reply)
                async for name, data in _sse_events(reply.aiter_lines()):
                    if (text := self._feed(assembly, name, data)) is not None:
                        yield TextDelta(text)
        except httpx.TransportError as exc:
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            message = f"cannot reach {self.base_url} ({detail}); check base_url and the network"
            raise ProviderError(_PROVIDER, message) from exc
        if not assembly.stopped:
            raise ProviderError(_PROVIDER, "the stream ended before message_stop; retry the request")
        yield assembly.response()

    def _feed(self, assembly: _Assembly, name: str, data: str) -> str | None:
        try:
            event: Any = json.loads(data)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            raise ProviderError(_PROVIDER, f"the stream sent an event that is not a JSON object: {data[:200]!r}")
        event = cast("dict[str, Any]", event)
        event.setdefault("type", name)
        if event["type"] == "error":
            kind, message = _error_fields(event) or ("error", data[:200])
            hint = _hint(_ERROR_STATUSES.get(kind, 500), self.model)
            text = f"the stream reported {kind}: {message}" + (f" ({hint})" if hint else "")
            raise ProviderError(_PROVIDER, self._redact(text))
        return assembly.feed(event)

    def _http_error(self, reply: httpx.Response) -> ProviderError:
        try:
            fields = _error_fields(reply.json())
        except ValueError:
            fields = None
        detail = f"{fields[0]}: {fields[1]}" if fields else reply.text.strip()[:200] or reply.reason_phrase
        hint = _hint(reply.status_code, self.model)
        text = detail if hint is None else f"{hint} ({detail})"
        return ProviderError(_PROVIDER, self._redact(text), status=reply.status_code)


def _hint(status: int, model: str) -> str | None:
    if status in _HINTS:
        return _HINTS[status].format(model=model)
    return _OVERLOADED if status >= 500 else None


def _object(value: Any) -> dict[str, Any]:
    """Return `value` if it is a JSON object, else an empty one (the API may grow; be lenient)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _error_fields(body: Any) -> tuple[str, str] | None:
    """Read `{"type": "error", "error": {"type", "message"}}`, or return None for another shape."""
    error = _object(_object(body).get("error"))
    if not error:
        return None
    return str(error.get("type", "error")), str(error.get("message", ""))


# -- the request ---------------------------------------------------------------------------------


def _messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    results: list[dict[str, Any]] | None = None  # the content of the open user turn of tool results
    for message in messages:
        match message:
            case UserMessage():
                if results is not None:
                    results.append({"type": "text", "text": message.content})
                else:
                    out.append({"role": "user", "content": message.content})
                results = None
            case AssistantMessage():
                content: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
                content += [
                    {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in message.tool_calls
                ]
                if content:  # the API refuses an empty turn
                    out.append({"role": "assistant", "content": content})
                results = None
            case ToolResultMessage():
                block = {
                    "type": "tool_result",
                    "tool_use_id": message.call_id,
                    "content": json.dumps(message.result.payload(), ensure_ascii=False),
                    "is_error": not message.result.success,
                }
                if results is None:
                    results = []
                    out.append({"role": "user", "content": results})
                results.append(block)
            case _:
                assert_never(message)
    return out


def _tool(definition: ToolDefinition) -> dict[str, Any]:
    return {"name": definition.name, "description": definition.description, "input_schema": dict(definition.parameters)}


def _tool_choice(choice: ToolChoice, tools: Sequence[ToolDefinition]) -> dict[str, Any]:
    match choice:
        case "auto" | "none":
            return {"type": choice}
        case "required":
            return {"type": "any"}
        case name if any(definition.name == name for definition in tools):
            return {"type": "tool", "name": name}
        case name:
            offered = ", ".join(definition.name for definition in tools)
            raise UsageError(f"tool_choice names {name!r}, which is not among the offered tools ({offered})")


# -- the response --------------------------------------------------------------------------------


async def _sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """Yield `(event name, data)` per server-sent event: `event:` and `data:` lines, ended by a blank line."""
    name, data = "", list[str]()
    async for line in lines:
        if not line:
            if data:
                yield name, "\n".join(data)
            name, data = "", []
            continue
        field_name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field_name == "event":
            name = value
        elif field_name == "data":
            data.append(value)
        # `id:`, `retry:` and `: comment` lines mean nothing to this API.
    if data:
        yield name, "\n".join(data)


@dataclass(slots=True)
class _ToolUse:
    id: str
    name: str
    parts: list[str] = field(default_factory=list[str])

    def call(self) -> ToolCall:
        raw = "".join(self.parts)
        try:
            arguments: Any = json.loads(raw) if raw.strip() else {}
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            return ToolCall(id=self.id, name=self.name, arguments={INVALID_JSON_KEY: raw})
        return ToolCall(id=self.id, name=self.name, arguments=_object(arguments))


@dataclass(slots=True)
class _Assembly:
    """The message being streamed, built up event by event."""

    model_name: str
    text: list[str] = field(default_factory=list[str])
    tool_uses: dict[int, _ToolUse] = field(default_factory=dict[int, _ToolUse])
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    stopped: bool = False

    def feed(self, event: dict[str, Any]) -> str | None:
        """Apply one event; return the text it adds, if any. Unknown events are ignored."""
        match event.get("type"):
            case "message_start":
                message = _object(event.get("message"))
                self.model_name = message.get("model") or self.model_name
                self._count(_object(message.get("usage")))
            case "content_block_start":
                block = _object(event.get("content_block"))
                if block.get("type") == "tool_use":
                    self.tool_uses[event.get("index", 0)] = _ToolUse(str(block.get("id")), str(block.get("name")))
            case "content_block_delta":
                delta = _object(event.get("delta"))
                if delta.get("type") == "text_delta" and (text := delta.get("text")):
                    self.text.append(text)
                    return text
                if delta.get("type") == "input_json_delta" and (use := self.tool_uses.get(event.get("index", 0))):
                    use.parts.append(delta.get("partial_json") or "")
            case "message_delta":
                self.stop_reason = _object(event.get("delta")).get("stop_reason") or self.stop_reason
                self._count(_object(event.get("usage")))
            case "message_stop":
                self.stopped = True
            case _:
                pass  # ping, content_block_stop and event types added later
        return None

    def _count(self, usage: Mapping[str, Any]) -> None:
        # Counts are cumulative. Cached prompt tokens are input too, though Anthropic counts them apart.
        if "input_tokens" in usage:
            keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
            self.input_tokens = sum(usage.get(key) or 0 for key in keys)
        self.output_tokens = usage.get("output_tokens") or self.output_tokens

    def response(self) -> ModelResponse:
        return ModelResponse(
            text="".join(self.text),
            tool_calls=tuple(self.tool_uses[index].call() for index in sorted(self.tool_uses)),
            usage=Usage(requests=1, input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            finish_reason=self.stop_reason,
            model_name=self.model_name,
        )
