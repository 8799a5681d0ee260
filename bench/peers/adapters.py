"""The peers, each driven by its own scripted model: the same TW-1/TW-2/TW-3 runs as toolwire's.

toolwire has an adapter here too (`Toolwire`, run from the project venv), so that
`bench/loop_bench.py --peers` measures toolwire's row of the peer table with the same harness, in the
same session, interleaved with the peers' (bench/peers/session.py).

Every adapter runs `add(a=1, b=2)` (`bench/loop_common.add`, an `async def`) `turns` times, `width`
calls per turn, then answers "done", with a model double that needs no network:

- pydantic-ai: `pydantic_ai.models.function.FunctionModel` (its own testing model; `TestModel` calls
  every tool once and cannot script 20 turns);
- openai-agents: a `agents.models.interface.Model` returning `ResponseFunctionToolCall` items, as
  the SDK's own tests do (`tests/fake_model.py`), tracing disabled;
- LangGraph: `langgraph.prebuilt.create_react_agent` over a `BaseChatModel` double that emits
  `tool_calls` (LangChain's fake chat models cannot bind tools);
- LangChain: `langchain.agents.create_agent` over the same double.

The model doubles work out the turn from the conversation they are sent (stateless), or are
reset before each run; the script's objects are built per turn because the frameworks annotate
them (ids, timestamps). Imports happen when an adapter is built, so one missing peer does not stop
the others. Runs in `bench/.venv-peers` (see `bench/peers/requirements.txt`), not in the project venv.
"""

# pyright: reportMissingImports=false, reportAttributeAccessIssue=false

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final, Protocol

from loop_common import ARGUMENTS, TOOLWIRE_FIRST_USE, add

PROMPT: Final = "add"


class Adapter(Protocol):
    name: str
    distribution: str
    """The package whose version is reported."""

    async def run(self, turns: int, width: int) -> Any:
        """One run: `turns` turns of `width` calls of `add`, then the answer "done"."""
        ...

    def tool_values(self, result: Any) -> list[Any]:
        """The tools' results in a run's output (to check the run)."""
        ...

    def answer(self, result: Any) -> str:
        """The final answer of a run."""
        ...


class PydanticAI:
    name = "pydantic-ai"
    distribution = "pydantic-ai-slim"
    import_code = "from pydantic_ai import Agent"

    def __init__(self) -> None:
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import AgentInfo, FunctionModel

        self.turns, self.width = 0, 1

        def respond(messages: list[Any], info: AgentInfo) -> Any:
            turn = len(messages) // 2  # request, response, request, ...
            if turn < self.turns:
                return ModelResponse(
                    parts=[ToolCallPart("add", dict(ARGUMENTS), tool_call_id=f"c{turn}_{k}") for k in range(self.width)]
                )
            return ModelResponse(parts=[TextPart("done")])

        self.agent = Agent(FunctionModel(respond), tools=[add])

    async def run(self, turns: int, width: int) -> Any:
        self.turns, self.width = turns, width
        return await self.agent.run(PROMPT)

    def tool_values(self, result: Any) -> list[Any]:
        return [
            part.content
            for message in result.all_messages()
            for part in message.parts
            if getattr(part, "part_kind", "") == "tool-return"
        ]

    def answer(self, result: Any) -> str:
        return str(result.output)


class OpenAIAgents:
    name = "openai-agents"
    distribution = "openai-agents"
    import_code = "from agents import Agent, Runner"

    def __init__(self) -> None:
        from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

        set_tracing_disabled(True)

        class ScriptedModel(Model):
            """Answers from a script reset before each run, like the SDK's tests' FakeModel."""

            def __init__(self) -> None:
                self.turns, self.width, self.index = 0, 1, 0

            def reset(self, turns: int, width: int) -> None:
                self.turns, self.width, self.index = turns, width, 0

            async def get_response(self, *args: Any, **kwargs: Any) -> Any:
                turn = self.index
                self.index += 1
                if turn < self.turns:
                    output: list[Any] = [
                        ResponseFunctionToolCall(
                            id=f"fc{turn}_{k}",
                            call_id=f"c{turn}_{k}",
                            type="function_call",
                            name="add",
                            arguments='{"a": 1, "b": 2}',
                        )
                        for k in range(self.width)
                    ]
                else:
                    text = ResponseOutputText(text="done", type="output_text", annotations=[])
                    output = [
                        ResponseOutputMessage(
                            id="m", type="message", role="assistant", status="completed", content=[text]
                        )
                    ]
                return ModelResponse(output=output, usage=Usage(), response_id=None)

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError("the benchmark does not stream")

        self.model = ScriptedModel()
        self.agent = Agent(name="bench", model=self.model, tools=[function_tool(add)])
        self.config = RunConfig(tracing_disabled=True)
        self.runner = Runner

    async def run(self, turns: int, width: int) -> Any:
        self.model.reset(turns, width)
        return await self.runner.run(self.agent, PROMPT, max_turns=100, run_config=self.config)

    def tool_values(self, result: Any) -> list[Any]:
        return [item.output for item in result.new_items if type(item).__name__ == "ToolCallOutputItem"]

    def answer(self, result: Any) -> str:
        return str(result.final_output)


def _chat_model() -> Any:
    """A LangChain chat model that emits `width` calls of `add` for `turns` turns, then "done"."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        turns: int = 0
        width: int = 1

        def _result(self, messages: list[Any]) -> Any:
            turn = sum(1 for message in messages if isinstance(message, AIMessage))
            if turn < self.turns:
                calls = [
                    {"name": "add", "args": dict(ARGUMENTS), "id": f"c{turn}_{k}", "type": "tool_call"}
                    for k in range(self.width)
                ]
                message = AIMessage(content="", tool_calls=calls)
            else:
                message = AIMessage(content="done")
            return ChatResult(generations=[ChatGeneration(message=message)])

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            return self._result(messages)

        async def _agenerate(
            self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kwargs: Any
        ) -> Any:
            return self._result(messages)  # no executor hop (the default runs _generate in a thread)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        @property
        def _llm_type(self) -> str:
            return "scripted"

    return ScriptedChatModel()


class _Graph:
    """A compiled LangGraph agent driven by `_chat_model()`."""

    model: Any
    graph: Any

    async def run(self, turns: int, width: int) -> Any:
        self.model.turns, self.model.width = turns, width
        return await self.graph.ainvoke({"messages": [("user", PROMPT)]}, {"recursion_limit": 1000})

    def tool_values(self, result: Any) -> list[Any]:
        return [message.content for message in result["messages"] if message.type == "tool"]

    def answer(self, result: Any) -> str:
        return str(result["messages"][-1].content)


class LangGraph(_Graph):
    name = "langgraph"
    distribution = "langgraph"
    import_code = "from langgraph.prebuilt import create_react_agent"

    def __init__(self) -> None:
        from langchain_core.tools import tool

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in favour of langchain's create_agent
            from langgraph.prebuilt import create_react_agent

            self.model = _chat_model()
            self.graph = create_react_agent(self.model, [tool(add)])


class LangChain(_Graph):
    name = "langchain"
    distribution = "langchain"
    import_code = "from langchain.agents import create_agent"

    def __init__(self) -> None:
        from langchain.agents import create_agent
        from langchain_core.tools import tool

        self.model = _chat_model()
        self.graph = create_agent(self.model, [tool(add)])


class Toolwire:
    name = "toolwire"
    distribution = "toolwire"
    import_code = "from toolwire import Agent, Toolbox, tool"
    scale = 20
    """Runs per unit × this: a toolwire run costs ~1/50 of a peer's, so a unit needs more of them."""

    def __init__(self) -> None:
        from toolwire import Agent, ToolCall, tool
        from toolwire.models import ModelResponse
        from toolwire.testing import ScriptedModel

        self._scripted = ScriptedModel
        self._scripts: dict[tuple[int, int], list[Any]] = {}
        self._call, self._response = ToolCall, ModelResponse
        self.agent = Agent(ScriptedModel([]), tools=[tool(add)], max_requests=100, max_tool_calls=10_000)

    def _script(self, turns: int, width: int) -> list[Any]:
        key = (turns, width)
        if key not in self._scripts:
            calls = [
                self._response(
                    tool_calls=tuple(
                        self._call(id=f"c{turn}_{k}", name="add", arguments=dict(ARGUMENTS)) for k in range(width)
                    ),
                    finish_reason="tool_calls",
                )
                for turn in range(turns)
            ]
            self._scripts[key] = [*calls, self._response(text="done", finish_reason="stop")]
        return self._scripts[key]

    async def run(self, turns: int, width: int) -> Any:
        self.agent.model = self._scripted(self._script(turns, width))
        return await self.agent.run(PROMPT)

    def tool_values(self, result: Any) -> list[Any]:
        return [message.result.data for message in result.transcript if getattr(message, "role", "") == "tool"]

    def answer(self, result: Any) -> str:
        return str(result.output)


ADAPTERS: Final[dict[str, Callable[[], Adapter]]] = {
    "pydantic-ai": PydanticAI,
    "openai-agents": OpenAIAgents,
    "langgraph": LangGraph,
    "langchain": LangChain,
    "toolwire": Toolwire,
}
FIRST_USE: Final = {
    # TW-10 as a program pays it: the import plus one tool defined the way each framework documents.
    "toolwire": TOOLWIRE_FIRST_USE,
    "pydantic-ai": "from pydantic_ai import Agent, Tool\nasync def add(a: int, b: int) -> int: ...\nTool(add)",
    "openai-agents": (
        "from agents import Agent, Runner, function_tool\n@function_tool\nasync def add(a: int, b: int) -> int: ..."
    ),
    "langgraph": (
        "from langgraph.prebuilt import create_react_agent\nfrom langchain_core.tools import tool\n"
        '@tool\nasync def add(a: int, b: int) -> int:\n    """Add two integers."""\nadd.tool_call_schema'
    ),
    "langchain": (
        "from langchain.agents import create_agent\nfrom langchain_core.tools import tool\n"
        '@tool\nasync def add(a: int, b: int) -> int:\n    """Add two integers."""\nadd.tool_call_schema'
    ),
}
"""What TW-10's "first use" row runs for each (see bench/loop_bench.py: toolwire's is gated, the peers' reported)."""
IMPORT_CODE: Final = {
    "pydantic-ai": PydanticAI.import_code,
    "openai-agents": OpenAIAgents.import_code,
    "langgraph": LangGraph.import_code,
    "langchain": LangChain.import_code,
}
