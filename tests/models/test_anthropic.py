from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolwire import Toolbox, ToolCall, ToolResult, invoke
from toolwire.errors import ProviderError, UsageError
from toolwire.messages import AssistantMessage, ToolDefinition, ToolResultMessage, Usage, UserMessage
from toolwire.models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from toolwire.models.anthropic import AnthropicModel
from toolwire.schema import INVALID_JSON_KEY

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "sk-ant-api03-test-0123456789abcdef"
MODEL = "claude-sonnet-4-5"
WEATHER = ToolDefinition(
    "get_weather",
    "Get the current weather in a city.",
    {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
HELLO = ModelRequest(system="", messages=[UserMessage("Weather in Paris?")])

Handler = Callable[[httpx.Request], httpx.Response]


def sse(*events: dict[str, Any]) -> str:
    """A stream body in the documented shape: `event: <type>` then `data: <json>`, blank-line separated."""
    return "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def answer(body: str, status: int = 200, content_type: str = "text/event-stream") -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, content=body.encode())

    return handle


def api_error(status: int, kind: str, message: str) -> Handler:
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}
    return answer(json.dumps(body), status, "application/json")


START = {
    "type": "message_start",
    "message": {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-5-20250929",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 30, "output_tokens": 1},
    },
}
STOP = {"type": "message_stop"}


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": value}


def message_delta(stop_reason: str, output_tokens: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": output_tokens},
    }


def tool_stream(*partial_json: str, stop_reason: str = "tool_use") -> str:
    tool_use = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}}
    parts = [delta(0, {"type": "input_json_delta", "partial_json": part}) for part in partial_json]
    stop = {"type": "content_block_stop", "index": 0}
    return sse(START, block_start(0, tool_use), *parts, stop, message_delta(stop_reason, 12), STOP)


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., AnthropicModel]]:
    clients: list[httpx.AsyncClient] = []

    def connect(handler: Handler, **options: Any) -> AnthropicModel:
        clients.append(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        return AnthropicModel(MODEL, api_key=KEY, http_client=clients[-1], **options)

    yield connect
    for client in clients:
        await client.aclose()


async def events(model: AnthropicModel, request: ModelRequest = HELLO) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


async def final(model: AnthropicModel, request: ModelRequest = HELLO) -> ModelResponse:
    last = (await events(model, request))[-1]
    assert isinstance(last, ModelResponse)
    return last


def recorder(sent: list[httpx.Request]) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer(fixture("anthropic_text.sse.txt"))(request)

    return handle


# -- the request -----------------------------------------------------------------------------------


async def test_transcript_maps_to_the_documented_request_body(connect: Callable[..., AnthropicModel]) -> None:
    sent: list[httpx.Request] = []
    transcript = [
        UserMessage("Weather in Paris and Rome?"),
        AssistantMessage(
            "Checking both.",
            (
                ToolCall(id="toolu_01", name="get_weather", arguments={"location": "Paris"}),
                ToolCall(id="toolu_02", name="get_weather", arguments={"location": "Rome"}),
            ),
        ),
        ToolResultMessage("get_weather", ToolResult.ok("toolu_01", {"tempC": 21, "sky": "ensoleillé"})),
        ToolResultMessage("get_weather", ToolResult.failed("toolu_02", "weather service timed out")),
        UserMessage("Which is warmer?"),
    ]
    request = ModelRequest(system="You are a weather assistant.", messages=transcript, tools=[WEATHER])

    await events(connect(recorder(sent)), request)

    assert json.loads(sent[0].content) == {
        "model": MODEL,
        "max_tokens": 4096,
        "stream": True,
        "system": "You are a weather assistant.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"location": "Paris"}},
                    {"type": "tool_use", "id": "toolu_02", "name": "get_weather", "input": {"location": "Rome"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": '{"tempC": 21, "sky": "ensoleillé"}',
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_02",
                        "content": '{"error": {"message": "weather service timed out", "code": "execution_error"}}',
                        "is_error": True,
                    },
                    {"type": "text", "text": "Which is warmer?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Get the current weather in a city.",
                "input_schema": {
                    "type": "object",
                    "properties": {"location": {"type": "string"}},
                    "required": ["location"],
                },
            }
        ],
        "tool_choice": {"type": "auto"},
    }


async def test_request_goes_to_v1_messages_with_key_and_version_headers(
    connect: Callable[..., AnthropicModel],
) -> None:
    sent: list[httpx.Request] = []
    await events(connect(recorder(sent)))
    [request] = sent
    assert (request.method, str(request.url)) == ("POST", "https://api.anthropic.com/v1/messages")
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"


def test_empty_system_is_omitted() -> None:
    body = AnthropicModel(MODEL, api_key=KEY).request_body(HELLO)
    assert "system" not in body


def test_no_tools_omits_tools_and_tool_choice() -> None:
    body = AnthropicModel(MODEL, api_key=KEY).request_body(HELLO)
    assert "tools" not in body and "tool_choice" not in body


def test_temperature_is_sent_when_set() -> None:
    body = AnthropicModel(MODEL, api_key=KEY, temperature=0.2).request_body(HELLO)
    assert body["temperature"] == 0.2


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("get_weather", {"type": "tool", "name": "get_weather"}),
    ],
)
def test_tool_choice_maps_to_anthropic(choice: str, expected: dict[str, str]) -> None:
    request = ModelRequest(system="", messages=HELLO.messages, tools=[WEATHER], tool_choice=choice)
    assert AnthropicModel(MODEL, api_key=KEY).request_body(request)["tool_choice"] == expected


def test_tool_choice_naming_a_tool_not_offered_is_a_usage_error() -> None:
    request = ModelRequest(system="", messages=HELLO.messages, tools=[WEATHER], tool_choice="get_time")
    with pytest.raises(UsageError, match="get_time"):
        AnthropicModel(MODEL, api_key=KEY).request_body(request)


def test_assistant_message_without_text_has_only_tool_use_blocks() -> None:
    call = ToolCall(id="toolu_01", name="get_weather", arguments={"location": "Paris"})
    request = ModelRequest(system="", messages=[UserMessage("Paris?"), AssistantMessage("", (call,))])
    [_, assistant] = AnthropicModel(MODEL, api_key=KEY).request_body(request)["messages"]
    assert [block["type"] for block in assistant["content"]] == ["tool_use"]


# -- streamed responses ----------------------------------------------------------------------------


async def test_text_stream_yields_deltas_then_the_response(connect: Callable[..., AnthropicModel]) -> None:
    model = connect(answer(fixture("anthropic_text.sse.txt")))
    assert await events(model) == [
        TextDelta("Paris is"),
        TextDelta(" sunny today."),
        ModelResponse(
            text="Paris is sunny today.",
            usage=Usage(requests=1, input_tokens=25, output_tokens=15),
            finish_reason="end_turn",
            model_name="claude-sonnet-4-5-20250929",
        ),
    ]


async def test_two_tool_use_blocks_give_two_calls_in_order(connect: Callable[..., AnthropicModel]) -> None:
    response = await final(connect(answer(fixture("anthropic_tool_use.sse.txt"))))
    assert response.tool_calls == (
        ToolCall(
            id="toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            name="get_weather",
            arguments={"location": "San Francisco, CA", "unit": "fahrenheit"},
        ),
        ToolCall(id="toolu_01NRLabsLyVHZPKxbKvkfSMn", name="get_weather", arguments={"location": "Paris, France"}),
    )


async def test_tool_use_response_keeps_text_and_stop_reason(connect: Callable[..., AnthropicModel]) -> None:
    response = await final(connect(answer(fixture("anthropic_tool_use.sse.txt"))))
    assert (response.text, response.finish_reason) == ("Checking both cities.", "tool_use")


async def test_empty_tool_input_gives_empty_arguments(connect: Callable[..., AnthropicModel]) -> None:
    response = await final(connect(answer(tool_stream(""))))
    assert response.tool_calls[0].arguments == {}


@pytest.mark.parametrize("raw", ['{"location": "Par', '["Paris"]'])
async def test_tool_input_that_is_not_a_json_object_is_kept_raw(
    connect: Callable[..., AnthropicModel], raw: str
) -> None:
    response = await final(connect(answer(tool_stream(raw[:5], raw[5:], stop_reason="max_tokens"))))
    assert response.tool_calls == (ToolCall(id="toolu_01", name="get_weather", arguments={INVALID_JSON_KEY: raw}),)


async def test_truncated_tool_input_becomes_an_invalid_parameters_result(
    connect: Callable[..., AnthropicModel],
) -> None:
    toolbox = Toolbox()

    @toolbox.tool
    def get_weather(location: str) -> str:
        """Get the current weather in a city."""
        return "sunny"

    response = await final(connect(answer(tool_stream('{"location": "Par', stop_reason="max_tokens"))))
    result = await invoke(response.tool_calls[0], toolbox)
    assert result.error_code == "invalid_parameters" and "the arguments are not a JSON object" in (result.error or "")


async def test_cached_prompt_tokens_count_as_input(connect: Callable[..., AnthropicModel]) -> None:
    start = json.loads(json.dumps(START))
    start["message"]["usage"] = {
        "input_tokens": 12,
        "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 2048,
        "output_tokens": 1,
    }
    body = sse(start, block_start(0, {"type": "text", "text": ""}), message_delta("end_turn", 30), STOP)
    response = await final(connect(answer(body)))
    assert response.usage == Usage(requests=1, input_tokens=2160, output_tokens=30)


async def test_thinking_blocks_and_unknown_events_are_ignored(connect: Callable[..., AnthropicModel]) -> None:
    body = sse(
        START,
        block_start(0, {"type": "thinking", "thinking": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "The user wants Paris."}),
        delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}),
        {"type": "content_block_stop", "index": 0},
        {"type": "some_future_event"},
        block_start(1, {"type": "text", "text": ""}),
        delta(1, {"type": "text_delta", "text": "Sunny."}),
        message_delta("end_turn", 9),
        STOP,
    )
    assert await events(connect(answer(body))) == [
        TextDelta("Sunny."),
        ModelResponse(
            text="Sunny.",
            usage=Usage(requests=1, input_tokens=30, output_tokens=9),
            finish_reason="end_turn",
            model_name="claude-sonnet-4-5-20250929",
        ),
    ]


# -- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "message", "hint"),
    [
        (400, "invalid_request_error", "messages.1: tool_use ids were found without tool_result blocks", "messages.1"),
        (401, "authentication_error", "invalid x-api-key", "check the API key (api_key= or ANTHROPIC_API_KEY)"),
        (403, "permission_error", "Your API key does not have permission", "check its permissions"),
        (404, "not_found_error", f"model: {MODEL}", f"check the model name '{MODEL}'"),
        (413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", "too large"),
        (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", "rate limited; retry later"),
        (500, "api_error", "Internal server error", "Anthropic is overloaded or unavailable"),
        (529, "overloaded_error", "Overloaded", "Anthropic is overloaded or unavailable"),
    ],
)
async def test_http_error_status_gives_provider_error_with_hint(
    connect: Callable[..., AnthropicModel], status: int, kind: str, message: str, hint: str
) -> None:
    with pytest.raises(ProviderError) as caught:
        await events(connect(api_error(status, kind, message)))
    assert (caught.value.provider, caught.value.status) == ("anthropic", status)
    assert hint in str(caught.value) and f"{kind}: {message}" in str(caught.value)
    assert KEY not in str(caught.value)


async def test_api_key_echoed_by_the_server_is_redacted(connect: Callable[..., AnthropicModel]) -> None:
    with pytest.raises(ProviderError) as caught:
        await events(connect(api_error(401, "authentication_error", f"invalid x-api-key {KEY}")))
    assert KEY not in str(caught.value) and "<redacted>" in str(caught.value)


async def test_error_body_that_is_not_json_is_quoted(connect: Callable[..., AnthropicModel]) -> None:
    with pytest.raises(ProviderError, match="overloaded or unavailable.*Bad Gateway") as caught:
        await events(connect(answer("<html>502 Bad Gateway</html>", 502, "text/html")))
    assert caught.value.status == 502


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        (
            "overloaded_error",
            "Overloaded",
            r"the stream reported overloaded_error: Overloaded \(Anthropic is overloaded",
        ),
        ("invalid_request_error", "Bad input", "the stream reported invalid_request_error: Bad input$"),
    ],
)
async def test_error_event_mid_stream_raises_provider_error(
    connect: Callable[..., AnthropicModel], kind: str, message: str, expected: str
) -> None:
    error = {"type": "error", "error": {"type": kind, "message": message}}
    body = sse(START, block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "Pa"}))
    with pytest.raises(ProviderError, match=expected):
        await events(connect(answer(body + sse(error))))


async def test_stream_cut_before_message_stop_raises_provider_error(connect: Callable[..., AnthropicModel]) -> None:
    body = sse(START, block_start(0, {"type": "text", "text": ""}), delta(0, {"type": "text_delta", "text": "Pa"}))
    with pytest.raises(ProviderError, match="before message_stop"):
        await events(connect(answer(body)))


async def test_error_body_of_another_json_shape_is_quoted(connect: Callable[..., AnthropicModel]) -> None:
    with pytest.raises(ProviderError, match='"detail": "no such route"'):
        await events(connect(answer('{"detail": "no such route"}', 400, "application/json")))


async def test_last_event_without_a_trailing_blank_line_still_counts(connect: Callable[..., AnthropicModel]) -> None:
    body = fixture("anthropic_text.sse.txt").rstrip("\n")
    assert (await final(connect(answer(body)))).finish_reason == "end_turn"


async def test_event_that_is_not_json_raises_provider_error(connect: Callable[..., AnthropicModel]) -> None:
    with pytest.raises(ProviderError, match="not a JSON object"):
        await events(connect(answer("event: message_start\ndata: {oops\n\n")))


async def test_connection_error_names_the_base_url(connect: Callable[..., AnthropicModel]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(ProviderError, match=r"cannot reach https://api\.anthropic\.com") as caught:
        await events(connect(refuse))
    assert caught.value.status is None and KEY not in str(caught.value)


# -- configuration and lifetime --------------------------------------------------------------------


def test_name_names_provider_and_model() -> None:
    assert AnthropicModel(MODEL, api_key=KEY).name == "anthropic:claude-sonnet-4-5"


def test_missing_api_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        AnthropicModel(MODEL)


async def test_key_and_base_url_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy.internal:8080/")
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder(sent))) as client:
        await events(AnthropicModel(MODEL, http_client=client))
    assert (str(sent[0].url), sent[0].headers["x-api-key"]) == ("http://proxy.internal:8080/v1/messages", KEY)


async def test_aclose_closes_the_client_the_adapter_created() -> None:
    model = AnthropicModel(MODEL, api_key=KEY)
    await model.aclose()
    assert model._client.is_closed


async def test_async_with_closes_the_client_the_adapter_created() -> None:
    async with AnthropicModel(MODEL, api_key=KEY) as model:
        pass
    assert model._client.is_closed


async def test_aclose_leaves_a_given_client_open() -> None:
    async with httpx.AsyncClient() as client:
        await AnthropicModel(MODEL, api_key=KEY, http_client=client).aclose()
        assert not client.is_closed


def test_import_toolwire_does_not_import_the_adapter() -> None:
    code = "import sys, toolwire; print('toolwire.models.anthropic' in sys.modules, 'httpx' in sys.modules)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.split() == ["False", "False"]
