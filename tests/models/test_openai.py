from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from toolwire import Toolbox, ToolCall, ToolResult, invoke
from toolwire.errors import ProviderError, UsageError
from toolwire.messages import AssistantMessage, ToolDefinition, ToolResultMessage, Usage, UserMessage
from toolwire.models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from toolwire.models.calls import parse_text_tool_calls
from toolwire.models.openai import OpenAIModel
from toolwire.schema import INVALID_JSON_KEY

KEY = "sk-proj-test-0123456789abcdef"
BASE_URL = "https://api.example.test/v1"
MODEL = "gpt-4o-mini"
WEATHER = ToolDefinition(
    "get_weather",
    "Get the current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TIME = ToolDefinition("get_time", "Get the time.", {"type": "object", "properties": {}})
HELLO = ModelRequest(system="", messages=[UserMessage("Hi")])
ASK = ModelRequest(system="Be brief.", messages=[UserMessage("Weather in Paris?")], tools=[WEATHER, TIME])
CALL_ID = re.compile(r"call_[0-9a-f]{24}")

Handler = Callable[[httpx.Request], httpx.Response]


def sse(*chunks: dict[str, Any], done: bool = True) -> str:
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks)
    return body + ("data: [DONE]\n\n" if done else "")


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [choice],
    }


def usage(prompt: int, completion: int) -> dict[str, Any]:
    total = prompt + completion
    return {
        "id": "chatcmpl-1",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total},
    }


def text_stream(*parts: str) -> str:
    return sse(*(chunk({"content": part}) for part in parts), chunk(finish_reason="stop"), usage(12, 3))


def answer(body: str, status: int = 200, content_type: str = "text/event-stream") -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"content-type": content_type}, content=body.encode())

    return handle


def recorder(sent: list[httpx.Request], body: str = text_stream("Hello")) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return answer(body)(request)

    return handle


@pytest.fixture
async def connect() -> AsyncIterator[Callable[..., OpenAIModel]]:
    clients: list[httpx.AsyncClient] = []

    def connect(handler: Handler, **options: Any) -> OpenAIModel:
        clients.append(httpx.AsyncClient(transport=httpx.MockTransport(handler)))
        options.setdefault("api_key", KEY)
        return OpenAIModel(MODEL, base_url=BASE_URL, http_client=clients[-1], **options)

    yield connect
    for client in clients:
        await client.aclose()


async def events(model: OpenAIModel, request: ModelRequest = HELLO) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


async def final(model: OpenAIModel, request: ModelRequest = HELLO) -> ModelResponse:
    last = (await events(model, request))[-1]
    assert isinstance(last, ModelResponse)
    return last


# -- the request ---------------------------------------------------------------------------------


async def test_request_body_for_a_transcript_with_calls_and_results(connect: Callable[..., OpenAIModel]) -> None:
    sent: list[httpx.Request] = []
    model = connect(recorder(sent), max_tokens=64, temperature=0.0, parallel_tool_calls=False)
    transcript = [
        UserMessage("Weather in Paris and Rome?"),
        AssistantMessage(
            "Checking both.",
            (
                ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ToolCall(id="call_2", name="get_weather", arguments={"city": "Rome"}),
            ),
        ),
        ToolResultMessage("get_weather", ToolResult.ok("call_1", {"celsius": 21, "sky": "clear"})),
        ToolResultMessage("get_weather", ToolResult.failed("call_2", "no station in Rome", code="not_found")),
        AssistantMessage(tool_calls=(ToolCall(id="call_3", name="get_time", arguments={}),)),
        ToolResultMessage("get_time", ToolResult.ok("call_3", "12:00")),
        AssistantMessage("Paris: 21 °C, clear. Rome: unknown."),
        UserMessage("Thanks"),
    ]
    await events(model, ModelRequest(system="Be brief.", messages=transcript, tools=[WEATHER, TIME]))

    [request] = sent
    assert request.method == "POST"
    assert str(request.url) == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(request.content) == {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": "Checking both.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"celsius":21,"sky":"clear"}'},
            {
                "role": "tool",
                "tool_call_id": "call_2",
                "content": '{"error":{"message":"no station in Rome","code":"not_found"}}',
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "call_3", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_3", "content": '"12:00"'},
            {"role": "assistant", "content": "Paris: 21 °C, clear. Rome: unknown."},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": WEATHER.description,
                    "parameters": dict(WEATHER.parameters),
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "description": "Get the time.",
                    "parameters": {"type": "object", "properties": {}},
                },
            },
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "temperature": 0.0,
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("required", "required"),
        ("get_time", {"type": "function", "function": {"name": "get_time"}}),
    ],
)
def test_tool_choice(choice: str, expected: Any) -> None:
    model = OpenAIModel(MODEL, http_client=httpx.AsyncClient())
    request = ModelRequest(system="", messages=[UserMessage("Hi")], tools=[WEATHER, TIME], tool_choice=choice)
    assert model.request_body(request)["tool_choice"] == expected


def test_tool_choice_must_name_an_offered_tool() -> None:
    model = OpenAIModel(MODEL, http_client=httpx.AsyncClient())
    request = ModelRequest(system="", messages=[UserMessage("Hi")], tools=[WEATHER], tool_choice="get_time")
    with pytest.raises(UsageError, match="'get_time', which is not among the offered tools \\(get_weather\\)"):
        model.request_body(request)


def test_no_tools_no_system_means_no_tool_keys() -> None:
    model = OpenAIModel(MODEL, http_client=httpx.AsyncClient(), parallel_tool_calls=True)
    assert model.request_body(HELLO) == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_without_a_key_no_authorization_header(
    connect: Callable[..., OpenAIModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sent: list[httpx.Request] = []
    await events(connect(recorder(sent), api_key=None))
    assert "authorization" not in sent[0].headers


async def test_defaults_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_MODEL", "openai:local")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8090/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sent: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder(sent))) as client:
        model = OpenAIModel(http_client=client)
        await events(model)
    assert model.name == "openai:local"
    assert str(sent[0].url) == "http://127.0.0.1:8090/v1/chat/completions"
    assert sent[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(model)


def test_a_model_name_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_MODEL", raising=False)
    with pytest.raises(UsageError, match="TOOLWIRE_MODEL"):
        OpenAIModel()


async def test_aclose_closes_only_its_own_client() -> None:
    async with OpenAIModel(MODEL) as model:
        assert model.name == f"openai:{MODEL}"
    assert model._client.is_closed
    async with httpx.AsyncClient() as client:
        await OpenAIModel(MODEL, http_client=client).aclose()
        assert not client.is_closed


# -- the response --------------------------------------------------------------------------------


async def test_streamed_text_usage_and_finish_reason(connect: Callable[..., OpenAIModel]) -> None:
    model = connect(answer(": keep-alive\n\n" + text_stream("Hel", "", "lo!")))
    assert await events(model) == [
        TextDelta("Hel"),
        TextDelta("lo!"),
        ModelResponse(
            text="Hello!",
            usage=Usage(requests=1, input_tokens=12, output_tokens=3),
            finish_reason="stop",
            model_name="gpt-4o-mini-2024-07-18",
        ),
    ]


async def test_parallel_calls_assembled_from_interleaved_fragments(connect: Callable[..., OpenAIModel]) -> None:
    def call(index: int, arguments: str, id: str | None = None, name: str | None = None) -> dict[str, Any]:
        function = {"arguments": arguments} | ({"name": name} if name else {})
        return chunk(
            {"tool_calls": [{"index": index, "function": function} | ({"id": id, "type": "function"} if id else {})]}
        )

    body = sse(
        chunk({"role": "assistant", "content": None}),
        call(0, "", id="call_a", name="get_weather"),
        call(1, "", id="call_b", name="get_weather"),
        call(0, '{"ci'),
        call(1, '{"city": '),
        call(0, 'ty": "Paris"}'),
        call(1, '"Rome"}'),
        chunk(finish_reason="tool_calls"),
        usage(40, 30),
    )
    response = await final(connect(answer(body)), ASK)
    assert response.tool_calls == (
        ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", arguments={"city": "Rome"}),
    )
    assert response.text == ""
    assert response.finish_reason == "tool_calls"
    assert response.usage == Usage(requests=1, input_tokens=40, output_tokens=30)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"city": "Par', {INVALID_JSON_KEY: '{"city": "Par'}),
        ('["Paris"]', {INVALID_JSON_KEY: '["Paris"]'}),
        ("", {}),
    ],
)
async def test_arguments_that_are_not_an_object_keep_the_call(
    connect: Callable[..., OpenAIModel], arguments: str, expected: dict[str, Any]
) -> None:
    tool_call = {"index": 0, "id": "", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    body = sse(chunk({"tool_calls": [tool_call]}), chunk(finish_reason="length"))
    [call] = (await final(connect(answer(body)), ASK)).tool_calls
    assert call.name == "get_weather" and call.arguments == expected
    assert CALL_ID.fullmatch(call.id)  # an empty id is replaced


async def test_invalid_json_becomes_an_invalid_parameters_result() -> None:
    toolbox = Toolbox()

    @toolbox.tool
    def get_weather(city: str) -> str:
        """Get the weather."""
        return "sunny"

    result = await invoke(ToolCall(id="c1", name="get_weather", arguments={INVALID_JSON_KEY: '{"city": "Par'}), toolbox)
    assert result.error_code == "invalid_parameters"
    assert "the arguments are not a JSON object" in (result.error or "")


# -- errors --------------------------------------------------------------------------------------


def api_error(status: int, message: str) -> Handler:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return answer(json.dumps(body), status, "application/json")


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "check OPENAI_API_KEY"),
        (404, f"check the model name '{MODEL}' (TOOLWIRE_MODEL or model=) and base_url {BASE_URL}"),
        (429, "rate limited"),
        (500, f"the server at {BASE_URL} failed"),
        (400, "the request was refused"),
    ],
)
async def test_http_errors_say_what_to_check(connect: Callable[..., OpenAIModel], status: int, hint: str) -> None:
    model = connect(api_error(status, f"Incorrect API key provided: {KEY}. Find your key at ..."))
    with pytest.raises(ProviderError) as caught:
        await events(model)
    error = caught.value
    assert error.provider == "openai-compatible" and error.status == status
    assert hint in str(error)
    assert "Incorrect API key provided: <redacted>" in str(error)
    assert KEY not in str(error) and KEY[-8:] not in repr(error.args)


async def test_an_error_body_that_is_not_json(connect: Callable[..., OpenAIModel]) -> None:
    with pytest.raises(ProviderError, match=r"HTTP 502: the server at .* failed; .* \(Bad Gateway\)"):
        await events(connect(answer("Bad Gateway", 502, "text/plain")))


async def test_connection_errors_name_the_base_url(connect: Callable[..., OpenAIModel]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("[Errno 111] Connection refused", request=request)

    with pytest.raises(ProviderError) as caught:
        await events(connect(refuse))
    message = str(caught.value)
    assert f"cannot reach {BASE_URL}" in message and "Connection refused" in message
    assert "start the server or set OPENAI_BASE_URL" in message
    assert KEY not in message


async def test_a_silent_server_times_out(connect: Callable[..., OpenAIModel]) -> None:
    def stall(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ProviderError, match=f"{BASE_URL} sent nothing for 5.0 s .*raise timeout= or retry"):
        await events(connect(stall, timeout=5.0))


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (sse({"error": {"message": "model crashed"}}), "the stream reported an error: model crashed"),
        ("data: {not json\n\n", "not a JSON object"),
        (sse(chunk({"content": "Hel"}), done=False), r"ended before \[DONE\]"),
    ],
)
async def test_broken_streams(connect: Callable[..., OpenAIModel], body: str, match: str) -> None:
    with pytest.raises(ProviderError, match=match):
        await events(connect(answer(body)))


# -- tool calls written in the text --------------------------------------------------------------

NAMES = ("get_weather", "get_time")


def test_hermes_call() -> None:
    text, [call] = parse_text_tool_calls(
        'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', NAMES
    )
    assert text == "Sure."
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"} and CALL_ID.fullmatch(call.id)


def test_several_hermes_calls_and_an_unclosed_last_one() -> None:
    text, calls = parse_text_tool_calls(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
        '<tool_call>{"name": "get_time", "parameters": {}}</tool_call>\n'
        '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}',
        NAMES,
    )
    assert text == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert len({c.id for c in calls}) == 3


def test_fenced_json_call() -> None:
    text, [call] = parse_text_tool_calls(
        'I will call it:\n```json\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n```\nDone.', NAMES
    )
    assert text == "I will call it:\n\nDone."
    assert call.arguments == {"city": "Oslo"}


def test_bare_json_object_and_list() -> None:
    text, [call] = parse_text_tool_calls('{"name": "get_weather", "arguments": {"city": "Lima"}}', NAMES)
    assert (text, call.arguments) == ("", {"city": "Lima"})
    text, calls = parse_text_tool_calls(
        '[{"name": "get_time", "arguments": {}}, {"name": "get_time", "arguments": {}}]', NAMES
    )
    assert (text, [c.name for c in calls]) == ("", ["get_time", "get_time"])


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "delete_everything", "arguments": {}}</tool_call>',
        '```json\n{"name": "rm", "arguments": {"path": "/"}}\n```',
        '{"name": "get_weather"}',
        '{"config": {"name": "get_weather", "arguments": {}}}',
        "<tool_call>{not json}</tool_call>",
        "<tool_call>" + "[" * 5000,  # too deep for json: RecursionError
        '{"a": ' * 5000,
        "The weather in Paris is {sunny} and [warm]; call get_weather(city) for more.",
        "",
    ],
)
def test_anything_else_stays_text(text: str) -> None:
    assert parse_text_tool_calls(text, NAMES) == (text, [])


def test_arguments_that_are_not_an_object_are_marked() -> None:
    _, [call] = parse_text_tool_calls('<tool_call>{"name": "get_weather", "arguments": "Paris"}</tool_call>', NAMES)
    assert call.arguments == {INVALID_JSON_KEY: "Paris"}


async def test_text_calls_are_recovered_and_never_streamed(connect: Callable[..., OpenAIModel]) -> None:
    parts = [
        "Let me check.\n<tool",
        '_call>\n{"name": "get_weather", ',
        '"arguments": {"city": "Paris"}}\n</tool_call>',
    ]
    model = connect(answer(text_stream(*parts)), text_tool_calls=True)
    *deltas, response = await events(model, ASK)
    assert deltas == [TextDelta("Let me check.\n")]
    assert isinstance(response, ModelResponse)
    assert response.text == "Let me check."
    [call] = response.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Paris"})


async def test_held_back_text_is_streamed_at_the_end_when_it_is_no_call(connect: Callable[..., OpenAIModel]) -> None:
    model = connect(answer(text_stream("Use ", "<tool", "> or {x}", " here.")), text_tool_calls=True)
    *deltas, response = await events(model, ASK)
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "Use <tool> or {x} here."
    assert isinstance(response, ModelResponse)
    assert response.text == "Use <tool> or {x} here." and response.tool_calls == ()


async def test_text_calls_need_the_option_and_offered_tools(connect: Callable[..., OpenAIModel]) -> None:
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    assert (await final(connect(answer(text_stream(call))), ASK)).tool_calls == ()
    assert (await final(connect(answer(text_stream(call)), text_tool_calls=True), HELLO)).text == call
    declined = ModelRequest(system="", messages=[UserMessage("Hi")], tools=[WEATHER], tool_choice="none")
    assert (await final(connect(answer(text_stream(call)), text_tool_calls=True), declined)).tool_calls == ()
