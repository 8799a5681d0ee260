"""The local model: the agent runs on a GGUF model on this machine, offline, no key.

`LocalModel()` starts llama-cpp-python's server on the packaged demo weights (Qwen2.5-Coder-0.5B)
in a child process it supervises (a crash of llama.cpp restarts the child; it cannot take this
process down), and stops it when the `async with` block ends. Its tool calls are constrained by a
grammar, so even a small model calls tools with arguments that fit their schemas.

Needs `pip install 'toolwire[local,demo]'` (`make local` builds llama-cpp-python, about ten
minutes the first time). `LocalModel("path/to/model.gguf")` runs a model file of your own.

    python examples/local_model.py
"""

from __future__ import annotations

import anyio

from toolwire import Agent, Toolbox
from toolwire.messages import ToolResultMessage
from toolwire.models.local import LocalModel

toolbox = Toolbox()


@toolbox.tool
def get_weather(city: str) -> dict[str, object]:
    """Get the current weather in a city.

    Args:
        city: The city's name, e.g. Paris.
    """
    return {"city": city, "celsius": 21, "sky": "clear"}


async def main() -> None:
    # One thread and a short answer: the demo model on a two-core machine answers in seconds.
    async with LocalModel(n_threads=1, max_tokens=128) as model:
        print("model:", model.name)
        result = await Agent(model, tools=toolbox, max_requests=4).run("What is the weather in Paris?")
    for message in result.transcript:
        if isinstance(message, ToolResultMessage):
            print(f"called {message.tool_name} -> {message.result.type.name}: {message.result.payload()}")
    print("reason:", result.reason)
    print("answer:", result.output)


if __name__ == "__main__":
    anyio.run(main)
