"""A hosted model: the agent talks to any OpenAI-compatible Chat Completions server.

The server, the key and the model come from the environment, as for `toolwire chat --model openai:NAME`:

    OPENAI_BASE_URL   the API root (default https://api.openai.com/v1); also a local server's,
                      e.g. llama-cpp-python's or vLLM's http://127.0.0.1:8000/v1
    OPENAI_API_KEY    the key (none for most local servers)
    TOOLWIRE_MODEL    the model's name (default gpt-4o-mini; `openai:` in front is allowed)

    OPENAI_API_KEY=sk-... python examples/hosted_model.py

Needs the `openai` extra: `pip install 'toolwire[openai]'`. For Anthropic, the same program runs
with `toolwire.models.anthropic.AnthropicModel` (and `ANTHROPIC_API_KEY`).
"""

from __future__ import annotations

import os

import anyio

from toolwire import Agent, PermissionPolicy, Toolbox
from toolwire.messages import ToolResultMessage
from toolwire.models.openai import OpenAIModel

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


async def main() -> None:
    name = os.environ.get("TOOLWIRE_MODEL", "gpt-4o-mini").removeprefix("openai:")
    # `text_tool_calls`: small local servers may write a call as JSON in the text instead of
    # returning it as a tool call; toolwire recovers it. Hosted models do not need it.
    async with OpenAIModel(name, temperature=0.0, max_tokens=200, text_tool_calls=True) as model:
        print("model:", model.name, "at", model.base_url)
        agent = Agent(model, tools=toolbox, policy=PermissionPolicy(), max_requests=4)
        result = await agent.run("What is the weather in Paris? Use the get_weather tool.")
    for message in result.transcript:
        if isinstance(message, ToolResultMessage):
            print(f"called {message.tool_name} -> {message.result.type.name}: {message.result.payload()}")
    print("reason:", result.reason)
    print("answer:", result.output)


if __name__ == "__main__":
    anyio.run(main)
